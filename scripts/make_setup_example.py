#!/usr/bin/env python3
"""Makes docs/own_model.md's "your own model": the bundled Fashion-MNIST CNN saved again without its
torchscope.json (so TorchScope knows nothing about its input: grey 28x28 images, mean 0.286,
std 0.353), and its class names as a text file, as a researcher would have them.

    scripts/make_setup_example.py [OUT_DIR]   (default: build/example)
"""
import json
import pathlib
import sys
import zipfile

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "resources" / "demo" / "fashion_cnn.pt"


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "example")
    out.mkdir(parents=True, exist_ok=True)
    # torch.jit.save without _extra_files stores no torchscope.json.
    torch.jit.save(torch.jit.load(str(DEMO)), str(out / "fashion_plain.pt"))
    card = json.loads(zipfile.ZipFile(DEMO).read("fashion_cnn/extra/torchscope.json"))
    (out / "labels.txt").write_text("\n".join(card["labels"]) + "\n")
    print(f"wrote {out / 'fashion_plain.pt'} and {out / 'labels.txt'}")


if __name__ == "__main__":
    main()
