#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/NAME/), taken from what the tests use:
small images of each format and their damaged forms, sessions and setups as the window and the
CLI write them, the specs of the CLI tests, tiny TorchScript archives and the bad model files of
make_fixtures.py, a torch.export program (.pt2), tensors, samples and probes saved by torch.save,
and the small model and tensor files of the fixtures (FIXTURES, default build/fixtures).
Run it again after changing a format; the seeds are committed.

  make_seeds.py [FIXTURES]

Named files are seeds and are rewritten; files named by their SHA-1 are what fuzzing found
(scripts/fuzz.sh --merge) and are kept.
"""
import io
import json
import pathlib
import re
import sys
import zipfile

import numpy as np
import torch
from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
FOUND = re.compile(r"[0-9a-f]{40}")


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
    # Found by fuzzing: a resize of [height, 0] parses, then writes itself as no resize at all.
    write("fuzz_model_setup", "resize_height_only.json", json.dumps(
        {"name": "fan (MIT)", "labels": ["ne", "sad"], "preprocess": {"resize": [112, 0], "grayscale": False}}))
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


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x).relu()


class Twice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        y = self.act(self.conv(x))
        return self.act(y * 2).flatten(1), {"y": y}


def model_file_seeds():
    torch.manual_seed(0)
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


def saved(value, **options):
    out = io.BytesIO()
    torch.save(value, out, **options)
    return out.getvalue()


def rewritten(archive, change):
    """The zip archive with change(name, bytes) -> bytes applied to each record, stored uncompressed."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as old, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as new:
        for info in old.infolist():
            new.writestr(info, change(info.filename, old.read(info)))
    return out.getvalue()


# Small fixtures of make_fixtures.py, as the tests load them (the demo models of resources/demo are
# 415 KB each: libFuzzer would mutate inputs that long; their shape, a scripted CNN with BatchNorm and a
# torchscope.json card, is made small below).
FIXTURE_SEEDS = ["two_inputs.pt", "every_dtype.pt", "frozen_relu_twice.pt",
                 "bad_truncated.pt", "small_input.pt", "every_dtype_input.pt", "two_inputs_expected.pt"]


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU())
        self.fc = torch.nn.Linear(2, 3)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


class Regions(torch.nn.Module):
    """What export writes as higher-order operators (a region under autocast off, one under no_grad)
    and a block that begins with a Dropout (tests/cli/test_exported.py has the full-size ones)."""

    def __init__(self):
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Dropout(0.0), torch.nn.Linear(2, 2))
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        with torch.autocast(device_type="cpu", enabled=False):
            y = self.lin(x) + self.block(x)
        with torch.no_grad():
            z = y * 2
        return y + z


def regions_pt2():
    pt2 = io.BytesIO()
    torch.export.save(torch.export.export(Regions().eval(), (torch.rand(1, 2),)), pt2)
    return pt2.getvalue()


def model_load_seeds(fixtures):
    """Everything a user hands to Model::load, readLabelledSamples, loadProbeExtension and setup."""
    torch.manual_seed(0)
    target = "fuzz_model_load"

    def jit_bytes(module, extra=None):
        out = io.BytesIO()
        torch.jit.save(module, out, _extra_files=extra or {})
        return out.getvalue()

    card = json.dumps({"preprocess": {"resize": 8, "crop": 8, "grayscale": True, "mean": [0.5], "std": [0.5]},
                       "labels": ["a", "b", "c"], "name": "seed"})
    cnn = Cnn().eval()
    scripted = jit_bytes(torch.jit.script(cnn), {"torchscope.json": card})
    write(target, "cnn_scripted_card.pt", scripted)
    write(target, "cnn_traced.pt", jit_bytes(torch.jit.trace(cnn, torch.rand(1, 1, 6, 6))))
    write(target, "cnn_frozen.pt", jit_bytes(torch.jit.freeze(torch.jit.script(cnn))))
    write(target, "tiny_scripted.pt", jit_bytes(torch.jit.script(Tiny())))
    # LibTorch refuses these itself: an operator it does not know, a file format version above its own.
    write(target, "unknown_op.pt", rewritten(scripted, lambda name, data: data.replace(b"torch.relu", b"torch.relux")
                                             if "/code/" in name else data))
    write(target, "newer_version.pt", rewritten(scripted, lambda name, data: b"99\n"
                                                if name.endswith("/.data/version") or name.endswith("/version")
                                                else data))
    program = torch.export.export(Tiny(), (torch.rand(1, 2),))
    pt2 = io.BytesIO()
    torch.export.save(program, pt2)
    write(target, "tiny_export.pt2", pt2.getvalue())
    # A .pt2 with a dynamic batch, a module called twice and a tuple-and-dict output; and two bad ones.
    program = torch.export.export(Twice(), (torch.rand(2, 1, 6, 6),),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    pt2 = io.BytesIO()
    torch.export.save(program, pt2)
    write(target, "twice_dynamic.pt2", pt2.getvalue())
    write(target, "regions.pt2", regions_pt2())
    write(target, "unknown_op.pt2", rewritten(pt2.getvalue(), lambda name, data: data.replace(
        b"torch.ops.aten.relu.default", b"torch.ops.aten.relux.default") if name.endswith(".json") else data))
    write(target, "empty_weight.pt2", rewritten(pt2.getvalue(), lambda name, data: b""
                                                  if name.endswith("weights/weight_0") else data))
    # torch.save: what record, probe and run read (tensors, samples, probe state dicts) and what they must refuse.
    write(target, "tensor.pt", saved(torch.rand(2, 1, 4, 4)))
    write(target, "samples.pt", saved({"samples": torch.rand(4, 2), "labels": torch.tensor([0, 1, 1, 0]),
                                       "classes": ["no", "yes"]}))
    write(target, "samples_only.pt", saved({"samples": torch.rand(3, 2)}))  # one entry: pickled with SETITEM
    write(target, "tensor_list.pt", saved([torch.rand(2), torch.arange(3)]))
    write(target, "probe_state.pt", saved({"weight": torch.rand(1, 2), "bias": torch.rand(1),
                                           "feature_mean": torch.zeros(2), "feature_std": torch.ones(2),
                                           "layer": "fc", "pooling": "avg", "classes": ["no", "yes"]}))
    write(target, "state_dict.pt", saved(cnn.state_dict()))
    write(target, "module_pickled.pt", saved(Tiny()))
    write(target, "legacy_pickle.pt", saved(torch.rand(2), _use_new_zipfile_serialization=False))
    write(target, "text.pt", "not a model\n")
    if not (fixtures / "stamp").exists():
        sys.exit(f"no fixtures in {fixtures}: run scripts/test.sh (or ctest -R make_fixtures) first, or name them")
    for name in FIXTURE_SEEDS:
        write(target, "fixture_" + name, (fixtures / name).read_bytes())


if __name__ == "__main__":
    fixtures = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else HERE.parents[1] / "build" / "fixtures")
    for old in CORPUS.rglob("*"):
        if old.is_file() and not FOUND.fullmatch(old.name):
            old.unlink()
    image_seeds()
    session_and_setup_seeds()
    spec_seeds()
    model_file_seeds()
    model_load_seeds(fixtures)
    print(sum(1 for _ in CORPUS.rglob("*") if _.is_file()), "seeds in", CORPUS)
