#!/usr/bin/env python3
"""The Python side of the feature-visualisation benchmark, driven line by line by
bench_visualize: the eager reference loop (tests/fixtures/visualize_reference.py) on the same
weights, with the layer taken by a forward hook over the whole forward (Lucent's way) or cut there
by a hook that raises (TruncatedModule's way).

    python3 visualize_worker.py demo|resnet18 MODEL.pt LAYER SIZE THREADS
Commands on stdin, one answer line each:
    whole N | cut N   -> seconds for N steps of a fresh run (channel 0 at LAYER, seed 0)
    quit
"""
import pathlib
import sys
import time

import torch
import torchvision

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
sys.path.insert(0, str(ROOT / "scripts"))
import visualize_reference as reference  # noqa: E402

IMAGENET = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def main():
    arch, path, layer, size, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(threads)
    if arch == "demo":
        from train_demo_model import FashionCNN, MEAN, STD
        model, setup = FashionCNN(), {"grayscale": True, "mean": [MEAN], "std": [STD]}
    else:
        model, setup = getattr(torchvision.models, arch)(weights=None), IMAGENET
    model.load_state_dict(torch.jit.load(path).state_dict())
    model.eval()
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "quit":
            break
        case = {"param": "fft", "size": size, "decorrelate": True, "learning_rate": 0.05, "diversity": 0.0,
                "seed": 0, "steps": int(argument),
                "objectives": [{"kind": "channel", "channel": 0, "y": -1, "x": -1, "negative": False}],
                "transforms": {"enabled": True, "jitter": 8, "scale_min": 0.9, "scale_max": 1.1, "rotate": 10.0}}
        start = time.perf_counter()
        run = reference.Reference(model, layer, setup, case, truncate=command == "cut")
        for _ in range(case["steps"]):
            run.step()
        run.close()
        print(time.perf_counter() - start, flush=True)


if __name__ == "__main__":
    main()
