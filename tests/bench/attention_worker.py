#!/usr/bin/env python3
"""The Python side of TorchScope's attention benchmark, driven line by line by bench_attention.

torchvision's ViT-B/16 with the weights of the scripted model, eager, asked for its attention the
way Python users must: forward pre-hooks that set need_weights=True, average_attn_weights=False on
every nn.MultiheadAttention, and forward hooks that keep the probabilities.

Commands on stdin, one answer line on stdout each:
    plain | weights   -> seconds for one forward pass
    quit
"""
import sys
import time
import warnings

import torch
import torchvision

warnings.filterwarnings("ignore")


def main():
    scripted, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    model = torchvision.models.vit_b_16(weights=None)
    model.load_state_dict(torch.jit.load(scripted).state_dict())
    model.eval()
    torch.manual_seed(0)
    x = torch.randn(batch, 3, 224, 224)
    attentions = [m for m in model.modules() if isinstance(m, torch.nn.MultiheadAttention)]

    def timed(run):
        start = time.perf_counter()
        with torch.no_grad():
            run()
        return time.perf_counter() - start

    def with_weights():
        kept = []
        handles = []
        for module in attentions:
            handles.append(module.register_forward_pre_hook(
                lambda m, args, kwargs: (args, {**kwargs, "need_weights": True, "average_attn_weights": False}),
                with_kwargs=True))
            handles.append(module.register_forward_hook(lambda m, args, output: kept.append(output[1])))
        try:
            model(x)
        finally:
            for h in handles:
                h.remove()
        assert len(kept) == len(attentions) and kept[0].shape[1] == 12

    for line in sys.stdin:
        command = line.strip()
        if command == "quit":
            break
        run = {"plain": lambda: model(x), "weights": with_weights}[command]
        print(timed(run), flush=True)


if __name__ == "__main__":
    main()
