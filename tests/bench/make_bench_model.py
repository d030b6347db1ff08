#!/usr/bin/env python3
"""Writes a scripted torchvision model and its state_dict (for the Python side) for bench_engine.

    make_bench_model.py ARCH OUT_DIR     (ARCH: resnet50, resnet18, ...)
"""
import pathlib
import sys

import torch
import torchvision

arch, out = sys.argv[1], pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
torch.manual_seed(0)
model = getattr(torchvision.models, arch)(weights=None).eval()
torch.jit.save(torch.jit.script(model), out / f"{arch}_scripted.pt")
torch.save(model.state_dict(), out / f"{arch}_state_dict.pt")
