#!/usr/bin/env python3
"""Trains TorchScope's bundled demo model: a small CNN on Fashion-MNIST from Debian's
dataset-fashion-mnist package, saved as TorchScript with a torchscope.json model card (labels,
preprocessing, measured test accuracy) and a handful of sample test images.

    scripts/train_demo_model.py [--out resources/demo] [--epochs 4]
"""
import argparse
import gzip
import json
import pathlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")
LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
MEAN, STD = 0.2860, 0.3530


def read_idx(name):
    with gzip.open(DATA / name, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(self.relu(self.bn(self.conv(x))))


class FashionCNN(nn.Module):
    """28x28 grey -> 10 classes. Named blocks give the module tree something to show."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(ConvBlock(1, 32), ConvBlock(32, 64), ConvBlock(64, 128))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)))


def to_tensor(images):
    return (torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1) - MEAN) / STD


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        predictions = torch.cat([model(x[i:i + 1000]).argmax(1) for i in range(0, len(x), 1000)])
    return (predictions == y).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "resources" / "demo"))
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(0)
    torch.set_num_threads(2)
    train_x, train_y = to_tensor(read_idx("train-images-idx3-ubyte.gz")), torch.from_numpy(read_idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    test_images = read_idx("t10k-images-idx3-ubyte.gz")
    test_x, test_y = to_tensor(test_images), torch.from_numpy(read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))

    model = FashionCNN()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    steps = args.epochs * (len(train_x) // 128)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train_x))
        for i in range(0, len(order) - 127, 128):
            batch = order[i:i + 128]
            loss = F.cross_entropy(model(train_x[batch]), train_y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}, test accuracy {evaluate(model, test_x, test_y):.4f}", flush=True)

    accuracy = evaluate(model, test_x, test_y)
    if accuracy < 0.88:
        raise SystemExit(f"test accuracy {accuracy:.4f} is below the 0.88 the demo promises")
    card = {
        "name": "Fashion-MNIST CNN (TorchScope demo)",
        "labels": LABELS,
        "preprocess": {"grayscale": True, "resize": 28, "crop": 28, "mean": [MEAN], "std": [STD]},
        "test_accuracy": round(accuracy, 4),
        "trained_by": "scripts/train_demo_model.py",
    }
    scripted = torch.jit.script(model.eval())
    torch.jit.save(scripted, out / "fashion_cnn.pt", _extra_files={"torchscope.json": json.dumps(card, indent=1)})

    images = out / "images"
    images.mkdir(exist_ok=True)
    for label, name in enumerate(LABELS):
        index = int((test_y == label).nonzero()[0])
        slug = name.lower().replace("/", "_").replace(" ", "_")
        Image.fromarray(test_images[index]).save(images / f"{slug}.png")
    print(f"saved {out / 'fashion_cnn.pt'} (test accuracy {accuracy:.4f}) and {len(LABELS)} sample images")


if __name__ == "__main__":
    main()
