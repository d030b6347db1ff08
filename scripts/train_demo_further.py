#!/usr/bin/env python3
"""Trains a copy of the bundled Fashion-MNIST demo further: a second checkpoint of the same
architecture for the Compare tab (two checkpoints, layer by layer). One more epoch on images with
inverted contrast and mirrored left to right, from the demo's weights, so that the early layers
must adapt to the new input statistics while the task stays the same.

    scripts/train_demo_further.py [--out resources/demo] [--epochs 1]
"""
import argparse
import json
import pathlib

import numpy as np
import torch
import torch.nn.functional as F

from train_demo_model import FashionCNN, LABELS, MEAN, STD, evaluate, read_idx, to_tensor


def shifted(x):
    """Inverted contrast (white clothes on black becomes black on white), mirrored."""
    raw = x * STD + MEAN
    return ((1.0 - raw) - MEAN).flip(-1) / STD


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    root = pathlib.Path(__file__).resolve().parent.parent
    parser.add_argument("--out", default=str(root / "resources" / "demo"))
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    out = pathlib.Path(args.out)

    torch.manual_seed(1)
    torch.set_num_threads(2)
    scripted = torch.jit.load(str(root / "resources" / "demo" / "fashion_cnn.pt"))
    model = FashionCNN()
    model.load_state_dict(scripted.state_dict())
    train_x = to_tensor(read_idx("train-images-idx3-ubyte.gz"))
    train_y = torch.from_numpy(read_idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    test_x = to_tensor(read_idx("t10k-images-idx3-ubyte.gz"))
    test_y = torch.from_numpy(read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train_x))
        for i in range(0, len(order) - 127, 128):
            batch = order[i:i + 128]
            loss = F.cross_entropy(model(shifted(train_x[batch])), train_y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    shifted_accuracy = evaluate(model, shifted(test_x), test_y)
    plain_accuracy = evaluate(model, test_x, test_y)
    print(f"test accuracy: {shifted_accuracy:.4f} on inverted, mirrored images; {plain_accuracy:.4f} on plain ones")
    card = {
        "name": "Fashion-MNIST CNN trained further on inverted, mirrored images (TorchScope compare demo)",
        "labels": LABELS,
        "preprocess": {"grayscale": True, "resize": 28, "crop": 28, "mean": [MEAN], "std": [STD]},
        "test_accuracy_shifted": round(shifted_accuracy, 4),
        "test_accuracy": round(plain_accuracy, 4),
        "trained_by": "scripts/train_demo_further.py, from fashion_cnn.pt",
    }
    torch.jit.save(torch.jit.script(model.eval()), out / "fashion_cnn_further.pt",
                   _extra_files={"torchscope.json": json.dumps(card, indent=1)})
    print(f"saved {out / 'fashion_cnn_further.pt'}")


if __name__ == "__main__":
    main()
