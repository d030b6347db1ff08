#!/usr/bin/env python3
"""Converts face-api.js's FaceExpressionNet (the npm package @vladmandic/face-api, MIT) into a
TorchScript model with its torchscope.json, and checks the conversion against the original.

    scripts/convert_face_expression.py [--out resources/face] [--work DIR]

1. npm installs @vladmandic/face-api, @tensorflow/tfjs and its wasm backend into a temporary folder.
2. Reads the TF.js weights manifest and dequantises the uint8 kernels (value = q * scale + min).
3. Builds the network as written in face-api.js (src/faceFeatureExtractor, src/faceProcessor):
   four dense blocks of separable convolutions (the first starts with a plain convolution),
   TF's 'same' padding (a stride-2 convolution pads one row and column at the bottom and right),
   a 7 x 7 average pool and a fully connected layer; RGB 0..255 in, the mean subtracted and the
   values divided by 255 inside, as FaceFeatureExtractor.forwardInput does.
4. Saves TorchScript with torchscope.json (labels; setup 112 x 112 stretched, 0..255, RGB).
5. Runs the original in Node.js (TF.js CPU backend, scripts/face_expression_oracle.cjs) and the
   converted model on the bundled photos (resources/face/photos), prints the largest difference
   of the class probabilities, and stores TF.js's numbers as tests/data/face_expression_tfjs.json
   for CI (which then needs no npm install).
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ["@vladmandic/face-api@1.7.15", "@tensorflow/tfjs@4.22.0", "@tensorflow/tfjs-backend-wasm@4.22.0"]
LABELS = ["neutral", "happy", "sad", "angry", "fearful", "disgusted", "surprised"]
MEAN_RGB = [122.782, 117.001, 104.298]  # FaceFeatureExtractor.forwardInput


class SamePad(nn.Module):
    """TF's 'same' padding of a 3 x 3 kernel: one on each side at stride 1; at stride 2 on an
    even size, one at the bottom and right only."""

    def __init__(self, stride: int):
        super().__init__()
        self.stride = stride

    def forward(self, x):
        return F.pad(x, (0, 1, 0, 1)) if self.stride == 2 else F.pad(x, (1, 1, 1, 1))


class SeparableConv(nn.Module):
    """tf.separableConv2d (depthwise 3 x 3, pointwise 1 x 1) plus a bias."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.pad = SamePad(stride)
        self.depthwise = nn.Conv2d(cin, cin, 3, stride, groups=cin, bias=False)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=True)

    def forward(self, x):
        return self.pointwise(self.depthwise(self.pad(x)))


class PlainConv(nn.Module):
    """tf.conv2d 3 x 3, stride 2, 'same', plus a bias: the first layer of the first block."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.pad = SamePad(2)
        self.conv = nn.Conv2d(cin, cout, 3, 2, bias=True)

    def forward(self, x):
        return self.conv(self.pad(x))


class DenseBlock(nn.Module):
    """face-api.js denseBlock4: every layer's output is added to all later ones."""

    def __init__(self, cin: int, cout: int, first: bool):
        super().__init__()
        self.conv0 = PlainConv(cin, cout) if first else SeparableConv(cin, cout, 2)
        self.conv1 = SeparableConv(cout, cout, 1)
        self.conv2 = SeparableConv(cout, cout, 1)
        self.conv3 = SeparableConv(cout, cout, 1)

    def forward(self, x):
        out1 = torch.relu(self.conv0(x))
        out2 = self.conv1(out1)
        out3 = self.conv2(torch.relu(out1 + out2))
        out4 = self.conv3(torch.relu(out1 + (out2 + out3)))
        return torch.relu(out1 + (out2 + (out3 + out4)))


class Normalize(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor(MEAN_RGB).view(1, 3, 1, 1))

    def forward(self, x):
        return (x - self.mean) / 255.0


class FaceExpressionNet(nn.Module):
    """112 x 112 RGB in 0..255 -> 7 expression logits (softmax gives face-api.js's probabilities)."""

    def __init__(self):
        super().__init__()
        self.normalize = Normalize()
        self.features = nn.Sequential()
        for i, (cin, cout) in enumerate(((3, 32), (32, 64), (64, 128), (128, 256))):
            self.features.add_module(f"dense{i}", DenseBlock(cin, cout, first=i == 0))
        self.pool = nn.AvgPool2d(7, 2)
        self.fc = nn.Linear(256, len(LABELS))

    def forward(self, x):
        x = self.pool(self.features(self.normalize(x)))
        return self.fc(x.flatten(1))


def read_weights(model_dir: pathlib.Path):
    """name -> float32 array, dequantised as the manifest says (TF.js's layout: HWIO kernels)."""
    manifest = json.loads((model_dir / "face_expression_model-weights_manifest.json").read_text())
    weights = {}
    for group in manifest:
        data = b"".join((model_dir / path).read_bytes() for path in group["paths"])
        offset = 0
        for spec in group["weights"]:
            count = int(np.prod(spec["shape"]))
            quantization = spec.get("quantization")
            if quantization:
                dtype = np.dtype(quantization["dtype"])
                raw = np.frombuffer(data, dtype, count, offset).astype(np.float64)
                values = raw * quantization["scale"] + quantization["min"]
            else:
                dtype = np.dtype(spec["dtype"])
                values = np.frombuffer(data, dtype, count, offset)
            offset += count * dtype.itemsize
            weights[spec["name"]] = values.astype(np.float32).reshape(spec["shape"])
        if offset != len(data):
            sys.exit(f"the manifest describes {offset} bytes, but the weights file has {len(data)}")
    return weights


def load_into(model: FaceExpressionNet, weights):
    used = set()

    def take(name):
        used.add(name)
        return torch.from_numpy(weights[name].copy())

    with torch.no_grad():
        for i, block in enumerate(model.features):
            for j in range(4):
                prefix = f"dense{i}/conv{j}"
                layer = getattr(block, f"conv{j}")
                if isinstance(layer, PlainConv):
                    layer.conv.weight.copy_(take(f"{prefix}/filters").permute(3, 2, 0, 1))  # HWIO -> OIHW
                    layer.conv.bias.copy_(take(f"{prefix}/bias"))
                else:
                    layer.depthwise.weight.copy_(take(f"{prefix}/depthwise_filter").permute(2, 3, 0, 1))  # HWC1 -> C1HW
                    layer.pointwise.weight.copy_(take(f"{prefix}/pointwise_filter").permute(3, 2, 0, 1))
                    layer.pointwise.bias.copy_(take(f"{prefix}/bias"))
        model.fc.weight.copy_(take("fc/weights").t())  # x @ W -> W^T
        model.fc.bias.copy_(take("fc/bias"))
    left = set(weights) - used
    if left:
        sys.exit(f"weights not used by the converted network: {sorted(left)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "resources" / "face"))
    parser.add_argument("--work", help="folder for the npm install (default: a temporary one)")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    work = pathlib.Path(args.work) if args.work else pathlib.Path(tempfile.mkdtemp(prefix="torchscope-face-"))
    work.mkdir(parents=True, exist_ok=True)

    print(f"npm install {' '.join(PACKAGES)} into {work}")
    subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
                    str(work), *PACKAGES], check=True)
    package = work / "node_modules" / "@vladmandic" / "face-api"
    model_dir = package / "model"
    version = json.loads((package / "package.json").read_text())["version"]

    model = FaceExpressionNet().eval()
    load_into(model, read_weights(model_dir))
    parameters = sum(p.numel() for p in model.parameters())
    card = {
        "name": "face-api.js FaceExpressionNet, converted by scripts/convert_face_expression.py",
        "source": f"npm @vladmandic/face-api@{version} model/face_expression_model.bin (MIT)",
        "labels": LABELS,
        "preprocess": {"resize": [112, 112], "crop": [112, 112], "grayscale": False, "scale": 255,
                       "channel_order": "RGB", "mean": [], "std": []},
    }
    out.mkdir(parents=True, exist_ok=True)
    scripted = torch.jit.script(model)
    torch.jit.save(scripted, str(out / "face_expression.pt"), _extra_files={"torchscope.json": json.dumps(card, indent=1)})
    shutil.copy(package / "LICENSE", out / "LICENSE.face-api")
    print(f"wrote {out / 'face_expression.pt'} ({parameters} parameters)")

    photos = sorted((out / "photos").glob("*.png"))
    pixels = {p.stem: np.array(Image.open(p).convert("RGB")) for p in photos}
    (work / "pixels.json").write_text(json.dumps({k: v.reshape(-1).tolist() for k, v in pixels.items()}))
    shutil.copy(ROOT / "scripts" / "face_expression_oracle.cjs", work / "face_expression_oracle.cjs")
    oracle = subprocess.run(["node", "face_expression_oracle.cjs", str(model_dir), "pixels.json"], cwd=work,
                            check=True, capture_output=True, text=True)
    tfjs = json.loads(oracle.stdout.strip().splitlines()[-1])

    worst = 0.0
    with torch.no_grad():
        for name, image in pixels.items():
            x = torch.from_numpy(image).permute(2, 0, 1).float().unsqueeze(0)
            mine = torch.softmax(scripted(x), 1)[0].double()
            theirs = torch.tensor(tfjs["photos"][name]["probabilities"], dtype=torch.float64)
            diff = (mine - theirs).abs().max().item()
            worst = max(worst, diff)
            print(f"{name}: TF.js {LABELS[int(theirs.argmax())]} {theirs.max():.4f}, "
                  f"TorchScript {LABELS[int(mine.argmax())]} {mine.max():.4f}, max |difference| {diff:.2e}")
    print(f"largest probability difference over {len(pixels)} photos: {worst:.2e}")
    data = ROOT / "tests" / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "face_expression_tfjs.json").write_text(json.dumps(tfjs, indent=1) + "\n")
    print(f"wrote {data / 'face_expression_tfjs.json'} (TF.js {tfjs['tfjs']}, backend {tfjs['backend']})")
    if worst > 1e-5:
        sys.exit("the conversion differs from the original by more than 1e-5")


if __name__ == "__main__":
    main()
