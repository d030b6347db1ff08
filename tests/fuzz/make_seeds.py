#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/NAME/), taken from what the tests use:
small images of each format and their damaged forms, sessions and setups as the window and the
CLI write them, the specs of the CLI tests, a tiny TorchScript archive and the bad model files of
make_fixtures.py. Run it again after changing a format; the seeds are committed.
"""
import io
import json
import pathlib
import shutil

import numpy as np
import torch
from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE / "corpus"


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def image_bytes(image, fmt, **options):
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def image_seeds():
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8))
    grey = rgb.convert("L")
    rgba = rgb.convert("RGBA")
    grey16 = Image.fromarray((rng.integers(0, 65535, (8, 8))).astype(np.uint16))
    jpeg = image_bytes(rgb, "JPEG", quality=80)
    png = image_bytes(rgb, "PNG")
    seeds = {
        "rgb.png": png, "grey.png": image_bytes(grey, "PNG"), "rgba.png": image_bytes(rgba, "PNG"),
        "grey16.png": image_bytes(grey16, "PNG"), "rgb.jpg": jpeg, "grey.jpg": image_bytes(grey, "JPEG"),
        "progressive.jpg": image_bytes(rgb, "JPEG", progressive=True),
        "cmyk.jpg": image_bytes(rgb.convert("CMYK"), "JPEG"), "rgb.bmp": image_bytes(rgb, "BMP"),
        "rgb.tiff": image_bytes(rgb, "TIFF"), "rgb.webp": image_bytes(rgb, "WEBP"),
        "rgb.ppm": image_bytes(rgb, "PPM"), "grey.pgm": image_bytes(grey, "PPM"),
        "anim.gif": image_bytes(rgb, "GIF"),
        "truncated.jpg": jpeg[: len(jpeg) * 2 // 3], "truncated.png": png[: len(png) - 20],
        "svg.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>',
        "doc.pdf": "%PDF-1.4\n%\xe2\xe3\n", "text.txt": "not an image\n",
    }
    for name, data in seeds.items():
        write("fuzz_image_decode", name, data)


def session_and_setup_seeds():
    setup = {"preprocess": {"resize": 28, "crop": 28, "grayscale": True, "scale": 1,
                            "channel_order": "RGB", "mean": [0.286], "std": [0.353]},
             "labels": ["T-shirt", "Trouser"], "scores": "logits", "name": "fashion"}
    extra = {"torchscope.json": ""}
    torch.jit.load(str(HERE.parents[1] / "resources/face/face_expression.pt"), _extra_files=extra)
    write("fuzz_model_setup", "face.json", extra["torchscope.json"])
    write("fuzz_model_setup", "fashion.json", json.dumps(setup))
    write("fuzz_model_setup", "bare.json", json.dumps(setup["preprocess"]))
    write("fuzz_model_setup", "scores_index.json", json.dumps({"scores": 1, "labels": []}))
    write("fuzz_model_setup", "imagenet.json", json.dumps(
        {"preprocess": {"resize": 256, "crop": 224, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}))
    session = {"format": "torchscope-session", "version": 2, "model": "/models/resnet18.pt", "device": "cpu",
               "grabs": ["layer1", "layer2.0.conv1:in0", "fc:grad", "type:Conv2d"], "truncate": "layer3",
               "edits": ["layer2:zero:0,5,7", "layer3:scale:1,2:2.5", "layer1:add", "layer4:replace"],
               "images": ["/images/cat.png", "/images/dog.jpg"], "setup": setup, "target": 3,
               "selected_layer": "layer1", "selected_image": 1}
    write("fuzz_session_file", "full.json", json.dumps(session, indent=2))
    write("fuzz_session_file", "version1.json", json.dumps(
        {"format": "torchscope-session", "version": 1, "model": "m.pt", "preprocess": "imagenet", "grabs": []}))
    write("fuzz_session_file", "minimal.json", json.dumps({"format": "torchscope-session", "model": "m.pt"}))


def spec_seeds():
    specs = ["layer1", "layer1:in0", "layer1:grad", "type:Conv2d:in1", "layer3.*", "features.1#2",
             "layer2:zero:0,5,7", "layer3:scale:1,2:2.5", "layer1:add", "layer3:replace",
             "all", "true:1,2", "predicted:3", "correct", "wrong", "stats", "none", "mean"]
    for i, spec in enumerate(specs):
        write("fuzz_specs", f"spec{i:02d}", spec)


def model_file_seeds():
    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x).relu()

    out = io.BytesIO()
    torch.jit.save(torch.jit.script(Tiny()), out)
    archive = out.getvalue()
    state = io.BytesIO()
    torch.save(Tiny().state_dict(), state)
    write("fuzz_file_diagnosis", "tiny.pt", archive)
    write("fuzz_file_diagnosis", "truncated.pt", archive[: len(archive) // 2])
    write("fuzz_file_diagnosis", "state_dict.pt", state.getvalue())
    write("fuzz_file_diagnosis", "lfs.pt", "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")
    write("fuzz_file_diagnosis", "empty.pt", b"")


if __name__ == "__main__":
    shutil.rmtree(CORPUS, ignore_errors=True)
    image_seeds()
    session_and_setup_seeds()
    spec_seeds()
    model_file_seeds()
    print(sum(1 for _ in CORPUS.rglob("*") if _.is_file()), "seeds in", CORPUS)
