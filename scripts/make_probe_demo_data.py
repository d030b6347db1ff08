#!/usr/bin/env python3
"""Writes a labelled folder for the probe demo: OUT/footwear and OUT/rest, PER_CLASS Fashion-MNIST
test images each (sandals, sneakers and ankle boots against the seven other classes), from the
Debian package dataset-fashion-mnist. A labelled folder of real photos is not in Debian."""
import argparse
import pathlib
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_demo_model import read_idx  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--per-class", type=int, default=300)
    args = parser.parse_args()
    images, labels = read_idx("t10k-images-idx3-ubyte.gz"), read_idx("t10k-labels-idx1-ubyte.gz")
    footwear = np.isin(labels, [5, 7, 9])
    # From the end of the test set: the first images are the ones the window's demo shows.
    for name, mask in (("footwear", footwear), ("rest", ~footwear)):
        folder = pathlib.Path(args.out) / name
        folder.mkdir(parents=True, exist_ok=True)
        for k, index in enumerate(np.nonzero(mask)[0][::-1][:args.per_class]):
            Image.fromarray(images[index]).save(folder / f"{k:04d}.png")
    print(f"wrote {2 * args.per_class} images to {args.out}/{{footwear,rest}}")


if __name__ == "__main__":
    main()
