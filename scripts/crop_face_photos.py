#!/usr/bin/env python3
"""Crops the faces of the two freely licensed portraits in scikit-image into the
112 x 112 photos TorchScope's face-expression demo uses (resources/face/photos). The boxes were
chosen by eye on the originals; a tight and a wide crop of each.

    scripts/crop_face_photos.py [OUT_DIR]
"""
import pathlib
import sys

import skimage.data
from PIL import Image

SKIMAGE = pathlib.Path(skimage.data.__file__).parent  # photos shipped in the package
ROOT = pathlib.Path(__file__).resolve().parents[1]
# name: (source file, square box left, top, side)
CROPS = {
    "astronaut_face": ("astronaut.png", 165, 45, 120),
    "astronaut_head": ("astronaut.png", 145, 20, 160),
    "cameraman_face": ("camera.png", 165, 75, 100),
    "cameraman_head": ("camera.png", 150, 58, 130),
}


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "resources" / "face" / "photos"
    out.mkdir(parents=True, exist_ok=True)
    for name, (source, left, top, side) in CROPS.items():
        image = Image.open(SKIMAGE / source).convert("RGB")
        face = image.crop((left, top, left + side, top + side)).resize((112, 112), Image.LANCZOS)
        face.info.pop("icc_profile", None)  # libpng warns about the astronaut's; the pixels are plain sRGB
        face.save(out / f"{name}.png")
        print(f"{out / name}.png from {source} box ({left}, {top}, {side} x {side})")


if __name__ == "__main__":
    main()
