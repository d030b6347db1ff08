#!/usr/bin/env python3
"""Tries every torchvision architecture in TorchScope as a researcher would: scripted with random
weights, inspected with a dry run on a real photo, run with a layer grabbed and its gradient taken
(the CLI), and opened in the window with Grad-CAM of that layer (offscreen, --screenshot).
Prints one Markdown table row per model; a failure shows the first line of what TorchScope said.

    scripts/try_torchvision.py [--build build] [--work /tmp/tv] [--models resnet18,vit_b_16] [--no-window]

Run it with TorchScope's Python environment (scripts/python_env.sh prints it): its scikit-image
ships the photos (astronaut.png, chelsea.png).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import torch
import skimage.data
import torchvision

PHOTOS = pathlib.Path(skimage.data.__file__).parent  # photos shipped in the package
# Models that take something other than one image: video clips, pairs of frames, quantized CPU kernels.
SKIPPED = ("raft_", "quantized")
VIDEO = {"r3d_18", "mc3_18", "r2plus1d_18", "s3d", "mvit_v1_b", "mvit_v2_s", "swin3d_t", "swin3d_s", "swin3d_b"}


def builders():
    models = []
    for module, kind in ((torchvision.models, "classification"), (torchvision.models.segmentation, "segmentation"),
                         (torchvision.models.detection, "detection"), (torchvision.models.video, "video")):
        for name in torchvision.models.list_models(module=module):
            if not any(s in name for s in SKIPPED):
                models.append((name, kind))
    return models


def script(name, kind, path):
    if path.exists():
        return None
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if kind == "detection":
        kwargs.update(weights_backbone=None, box_score_thresh=0.01)
    if kind == "segmentation":
        kwargs.update(weights_backbone=None)
    if name in ("googlenet", "inception_v3"):
        kwargs.update(init_weights=True)
    model = torchvision.models.get_model(name, **kwargs).eval()
    try:
        torch.jit.save(torch.jit.script(model), str(path))
    except Exception as e:  # not scriptable: worth a row too
        return "torch.jit.script fails: " + str(e).strip().splitlines()[0][:120]
    return None


def first_line(text):
    """The line that says what went wrong (the last error line, else the last line)."""
    lines = [l for l in text.strip().splitlines() if l.strip() and "warning" not in l.lower()]
    errors = [l for l in lines if "error" in l.lower() or "fails" in l.lower()]
    return ((errors or lines or [text.strip()])[-1])[:200].replace("|", "/")


def run(command, timeout=600):
    start = time.time()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
        return result.returncode, result.stdout, result.stderr, time.time() - start
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s", time.time() - start


def pick_layer(tree):
    """The last module up to three levels deep that runs and gives maps bigger than 1x1 (or a
    video's [N, C, T, H, W]); else the last with tokens [N, T, D]."""
    maps, tokens = None, None
    for m in tree["modules"]:
        depth = m["path"].count(".") + 1 if m["path"] else 0
        shapes = m.get("output_shapes") or []
        shape = shapes[0] if shapes else []
        if not (1 <= depth <= 3 and m["called"]):
            continue
        if len(shape) in (4, 5) and shape[-1] > 1:
            maps = m["path"]
        elif len(shape) == 3 and shape[1] > 1:
            tokens = m["path"]
    return maps or tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--work", default="/tmp/torchscope-torchvision")
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--no-window", action="store_true")
    args = parser.parse_args()
    cli = pathlib.Path(args.build) / "app" / "torchscope-cli"
    gui = pathlib.Path(args.build) / "app" / "torchscope"
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    photo = PHOTOS / "chelsea.png"
    clip, long_clip = work / "clip.pt", work / "clip16.pt"
    torch.save(torch.rand(1, 3, 8, 112, 112), clip)
    torch.save(torch.rand(1, 3, 16, 224, 224), long_clip)  # MViT and S3D want 16 frames of 224 x 224
    inception = work / "inception_setup.json"
    inception.write_text(json.dumps({"preprocess": {"resize": 342, "crop": 299, "mean": [0.485, 0.456, 0.406],
                                                    "std": [0.229, 0.224, 0.225]}}))
    detection = work / "detection_setup.json"  # torchvision's detectors resize and normalise inside
    detection.write_text(json.dumps({"preprocess": {"resize": 320}}))
    wanted = set(args.models.split(",")) if args.models else None

    print("| model | kind | dry run (inspect --input) | layer | CLI: grab + gradient | window: Grad-CAM |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, kind in builders():
        if wanted and name not in wanted:
            continue
        path = work / f"{name}.pt"
        problem = script(name, kind, path)
        if problem:
            print(f"| {name} | {kind} | {problem} | | | |", flush=True)
            continue
        if name in VIDEO:
            inputs = ["--input", str(long_clip if name.startswith(("mvit", "s3d")) else clip)]
        else:
            inputs = ["--input", str(photo)]
        setup = ["--preprocess", str(inception)] if name == "inception_v3" else (
            ["--preprocess", str(detection)] if kind == "detection" else [])
        code, out, err, seconds = run([str(cli), "inspect", str(path), "--json", *inputs, *setup])
        if code != 0:
            print(f"| {name} | {kind} | fails: {first_line(err)} | | | |", flush=True)
            continue
        tree = json.loads(out)
        never = sum(1 for m in tree["modules"] if m["path"] and not m["called"])
        dry = f"ok, {len(tree['modules'])} modules" + (f", {never} never run" if never else "") + f" ({seconds:.1f} s)"
        layer = pick_layer(tree)
        if not layer:
            print(f"| {name} | {kind} | {dry} | none with maps | | |", flush=True)
            continue
        code, out, err, seconds = run([str(cli), "run", str(path), *inputs, *setup, "--grab", layer,
                                       "--grab", f"{layer}:grad", "--target", "-1", "--out", str(work / "out.pt")])
        if code == 0:
            target = next((l for l in out.splitlines() if l.startswith("gradients are of")), "")
            cli_result = f"ok, {target.replace('gradients are of ', 'of ')} ({seconds:.1f} s)"
        else:
            cli_result = "fails: " + first_line(err)
        window = "not tried"
        if not args.no_window and name not in VIDEO:
            gui_setup = ["--setup", setup[1]] if setup else []
            code, out, err, seconds = run([str(gui), str(path), str(photo), *gui_setup, "--select", layer,
                                           "--gradcam", layer, "--screenshot", str(work / f"{name}.png")], 300)
            window = f"ok ({seconds:.1f} s)" if code == 0 else "fails: " + first_line(err)
        elif name in VIDEO:
            window = "video: the window feeds single images"
        print(f"| {name} | {kind} | {dry} | {layer} | {cli_result} | {window} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
