#!/usr/bin/env python3
"""The Python side of TorchScope's engine benchmark, driven line by line by bench_engine.

Eager PyTorch on the same weights as the TorchScript model, observed the way the Python
libraries do it: forward hooks that keep the outputs (hybrid_learning's ActivationMapGrabber),
and truncation by a hook that raises once the truncation point has run (TruncatedModule).

Commands on stdin, one answer line on stdout each:
    plain | hooks L1,L2,... | truncate L   -> seconds for one forward pass
    flops L1,L2,...                        -> JSON: FLOP share of the network up to each Li
    quit
"""
import json
import sys
import time

import torch
import torchvision


class Truncated(Exception):
    def __init__(self, output):
        super().__init__()
        self.output = output


def main():
    arch, weights, batch, size, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    device = torch.device(sys.argv[6] if len(sys.argv) > 6 else "cpu")
    torch.set_num_threads(threads)
    model = getattr(torchvision.models, arch)(weights=None)
    model.load_state_dict(torch.load(weights))
    model.eval().to(device)
    modules = dict(model.named_modules())
    torch.manual_seed(0)
    x = torch.randn(batch, 3, size, size).to(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def timed(run):
        sync()
        start = time.perf_counter()
        with torch.no_grad():
            run()
        sync()  # CUDA runs asynchronously: the time is the kernels', not their launch's
        return time.perf_counter() - start

    def with_hooks(paths):
        kept = {}
        handles = [modules[p].register_forward_hook(lambda m, i, o, p=p: kept.__setitem__(p, o)) for p in paths]
        try:
            model(x)
        finally:
            for h in handles:
                h.remove()

    def truncated(path):
        def stop(module, inputs, output):
            raise Truncated(output)
        handle = modules[path].register_forward_hook(stop)
        try:
            model(x)
        except Truncated:
            pass
        finally:
            handle.remove()

    def flop_shares(paths):
        # Multiply-accumulates of convolutions and linear layers, in execution order.
        order, flops = [], {}

        def count(name):
            def hook(module, inputs, output):
                if isinstance(module, torch.nn.Conv2d):
                    per_output = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
                    flops[name] = flops.get(name, 0) + 2 * output.numel() * per_output
                elif isinstance(module, torch.nn.Linear):
                    flops[name] = flops.get(name, 0) + 2 * output.numel() * module.in_features
                order.append(name)
            return hook

        handles = [m.register_forward_hook(count(n)) for n, m in modules.items() if n]
        with torch.no_grad():
            model(x)
        for h in handles:
            h.remove()
        total = sum(flops.values())
        shares = {}
        for path in paths:
            # Everything that finished before the truncation point's own output (its children first).
            end = order.index(path)
            shares[path] = sum(flops.get(n, 0) for n in set(order[: end + 1])) / total
        return shares

    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "plain":
            answer = timed(lambda: model(x))
        elif command == "hooks":
            answer = timed(lambda: with_hooks(argument.split(",")))
        elif command == "truncate":
            answer = timed(lambda: truncated(argument))
        elif command == "flops":
            answer = json.dumps(flop_shares(argument.split(",")))
        elif command == "quit":
            break
        else:
            answer = "error unknown command " + command
        print(answer, flush=True)


if __name__ == "__main__":
    main()
