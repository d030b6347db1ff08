#!/usr/bin/env python3
"""`dissect` against NetDissect-Lite's procedure transcribed in NumPy, whole runs as a researcher runs
them. Prints JSON.

The model: torchvision's ResNet-50 (random weights, seed 0: no registry is reached; scripted) at
S x S (ImageNet's normalisation); the concept set: `concepts make` (N images of S x S, seed 0).

- TorchScope: `dissect --layer layer4 --method iou` (2,048 units) over the set, in a fresh process
  (its wall time and ru_maxrss); again over N / 4 images (peak memory against the number of images);
  and all four stages (layer1 ... layer4) from one run.
- The transcription (this file, --numpy): the eager model with a forward hook keeps layer4's maps of
  every image (as NetDissect-Lite's feature memmap does), np.quantile per unit, and per image and unit
  whose map exceeds its threshold PIL's bilinear resize to the masks, the pixels above the threshold
  counted against each concept's mask (PIL); also in a fresh process.
- The two IoU tables compared: the largest difference over units x concepts.

  bench_dissect.py CLI [--images N] [--size S] [--threads T] [--batch B] [--work DIR] [--model NAME]
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

QUANTILE = 0.005


def run_measured(command, env=None):
    """(seconds, peak RSS in MiB, stdout) of one command in its own process."""
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([str(c) for c in command], stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - started
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if code != 0:
        sys.exit(f"{' '.join(map(str, command))} failed ({code}): {stderr[-2000:]}")
    # Each measured step as it ends (stderr: stdout is the report), so that a long run shows where it is.
    print(f"{seconds:9.1f} s {usage.ru_maxrss / 1024.0:8.0f} MiB  {' '.join(map(str, command[:4]))}", file=sys.stderr,
          flush=True)
    return seconds, usage.ru_maxrss / 1024.0, stdout


def spilled_mib(said):
    """The maps `dissect` kept on disk between its passes (0: it ran the model twice)."""
    found = re.search(r"the second pass read (\d+) MiB of maps", said)
    return int(found.group(1)) if found else 0


def dissect_phases(said):
    """(the dissection's seconds, of which the model's forward passes) as `dissect` prints them."""
    found = re.search(r"dissected \d+ images in ([0-9.]+) s, of which the model's forward passes ([0-9.]+) s", said)
    if not found:
        sys.exit(f"dissect did not say how long its passes took: {said[-2000:]}")
    return float(found.group(1)), float(found.group(2))


def eager_model(name):
    import torch
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models, name)().eval()


def write_model(path, name, size):
    import torch
    setup = {"preprocess": {"resize": [size, size], "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
    torch.jit.save(torch.jit.script(eager_model(name)), str(path), _extra_files={"torchscope.json": json.dumps(setup)})


def numpy_dissection(args):
    """NetDissect-Lite's quantile and tally on layer4, its IoU table saved to --iou-out."""
    import torch
    from PIL import Image
    torch.set_num_threads(args.threads)
    model = eager_model(args.model)
    model.load_state_dict(torch.jit.load(args.model_file).state_dict())
    root = pathlib.Path(args.concepts)
    names = sorted(p.stem for p in (root / "images").glob("*.png"))[: args.images]
    concepts = sorted(p.name for p in (root / "masks").iterdir())
    mean, std = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1), torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    seen = []
    hook = model.layer4.register_forward_hook(lambda m, i, o: seen.append(o.detach().numpy().copy()))
    started = time.monotonic()
    with torch.no_grad():
        for start in range(0, len(names), args.batch):
            batch = [np.asarray(Image.open(root / "images" / f"{n}.png").convert("RGB"), np.float32) / 255
                     for n in names[start:start + args.batch]]
            model((torch.from_numpy(np.stack(batch)).permute(0, 3, 1, 2) - mean) / std)
    hook.remove()
    forward_seconds = time.monotonic() - started
    features = np.concatenate(seen)  # [N, U, h, w]: every map kept, as NetDissect-Lite's memmap
    n, units = features.shape[:2]
    thresholds = np.array([np.quantile(features[:, u].ravel(), 1 - QUANTILE) for u in range(units)])
    inter, area = np.zeros((units, len(concepts))), np.zeros(units)
    concept_area = np.zeros(len(concepts))
    for i, name in enumerate(names):
        masks = np.zeros((len(concepts), args.size, args.size), bool)
        for k, c in enumerate(concepts):
            path = root / "masks" / c / f"{name}.png"
            if path.exists():
                masks[k] = np.asarray(Image.open(path)) > 0
        concept_area += masks.sum((1, 2))
        for u in range(units):
            fmap = features[i, u]
            if fmap.max() <= thresholds[u]:
                continue
            up = np.asarray(Image.fromarray(fmap, mode="F").resize((args.size, args.size), Image.BILINEAR))
            on = up > thresholds[u]
            area[u] += on.sum()
            inter[u] += masks[:, on].sum(1)
    union = area[:, None] + concept_area[None, :] - inter
    iou = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
    np.save(args.iou_out, iou)
    # Its phases: the forward passes (decoding and normalising the images with them), the rest.
    json.dump({"concepts": concepts, "forward_seconds": forward_seconds,
               "after_forward_seconds": time.monotonic() - started - forward_seconds},
              open(args.iou_out + ".json", "w"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cli", nargs="?")
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--work", default=None)
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--numpy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-file", help=argparse.SUPPRESS)
    parser.add_argument("--concepts", help=argparse.SUPPRESS)
    parser.add_argument("--iou-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.numpy:
        return numpy_dissection(args)
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="bench_dissect_"))
    work.mkdir(parents=True, exist_ok=True)
    model = work / f"{args.model}_{args.size}.pt"
    if not model.exists():
        write_model(model, args.model, args.size)
    concepts = work / f"set_{args.images}_{args.size}"
    if not concepts.exists():
        run_measured([args.cli, "concepts", "make", "--out", concepts, "--images", args.images, "--size", args.size,
                      "--seed", 0])
    common = ["--concepts", concepts, "--method", "iou", "--device", "cpu", "--threads", args.threads,
              "--batch-images", args.batch]
    ours = work / "ours.json"
    seconds, rss, said = run_measured([args.cli, "dissect", model, "--layer", "layer4", *common, "--out", ours])
    dissect_seconds, model_seconds = dissect_phases(said)
    quarter = max(1, args.images // 4)
    _, rss_quarter, _ = run_measured([args.cli, "dissect", model, "--layer", "layer4", *common, "--max-images", quarter,
                                      "--out", work / "quarter.json"])
    stages_seconds, stages_rss, stages_said = run_measured(
        [args.cli, "dissect", model, *[a for s in range(1, 5) for a in ("--layer", f"layer{s}")], *common,
         "--out", work / "stages.json"])
    iou_out = str(work / "numpy_iou.npy")
    numpy_seconds, numpy_rss, _ = run_measured(
        [sys.executable, __file__, "--numpy", "--model", args.model, "--model-file", model, "--concepts", concepts,
         "--images", args.images, "--size", args.size, "--threads", args.threads, "--batch", args.batch,
         "--iou-out", iou_out])
    expected = np.load(iou_out)
    phases = json.load(open(iou_out + ".json"))
    names = phases["concepts"]
    result = json.loads(ours.read_text())
    got = np.zeros_like(expected)
    for unit in result["layers"][0]["units"]:
        for entry in unit.get("iou", []):
            got[unit["unit"], names.index(entry["concept"])] = entry["iou"]
    # `--top` keeps 5 concepts per unit: compare those.
    kept = got > 0
    report = {
        "model": args.model, "size": args.size, "images": args.images, "threads": args.threads, "batch": args.batch,
        "units": int(expected.shape[0]),
        "torchscope": {"seconds": seconds, "peak_rss_mib": rss, "spilled_mib": spilled_mib(said),
                       "dissect_seconds": dissect_seconds, "model_seconds": model_seconds},
        "numpy": {"seconds": numpy_seconds, "peak_rss_mib": numpy_rss, "forward_seconds": phases["forward_seconds"],
                  "after_forward_seconds": phases["after_forward_seconds"]},
        "speedup": numpy_seconds / seconds,
        # Both run the model over every image once (eager PyTorch and LibTorch, the same threads); the rest
        # is the dissection itself: the quantile, upsampling and counting (TorchScope's: its dissection's
        # time less its forward passes, as it prints them; the images' decoding stays in TorchScope's
        # rest and in the transcription's forward phase).
        "speedup_after_forward": phases["after_forward_seconds"] / max(1e-9, dissect_seconds - model_seconds),
        "model_against_eager_forward": model_seconds / max(1e-9, phases["forward_seconds"]),
        "memory": {"images": [quarter, args.images], "peak_rss_mib": [rss_quarter, rss],
                   "peak_rss_growth": rss / rss_quarter - 1.0},
        "all_stages": {"layers": ["layer1", "layer2", "layer3", "layer4"], "seconds": stages_seconds,
                       "peak_rss_mib": stages_rss, "spilled_mib": spilled_mib(stages_said),
                       "against_layer4_alone": stages_seconds / seconds},
        "iou_max_abs_difference": float(np.abs(got[kept] - expected[kept]).max()) if kept.any() else 0.0,
        "interpretable_units": int(result["layers"][0]["interpretable"]["iou"]),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
