#!/usr/bin/env python3
"""`sae train` at scale, whole commands as a researcher runs them. Prints JSON.

Memory: the peak resident memory of `sae train` on the demo model's features.1 (49 vectors of 64
an image, 16 x expansion, k 32, batches of 4096) over a folder of N images and one of 10 x N (links
to the demo's images, so that only the count differs), each in a fresh process (its own
ru_maxrss). The vectors stream through the shuffle buffer: the peak should not grow with N.

ResNet-18: a TopK SAE on layer3 (256-d, 16 x = 4,096 latents, k 32, every position) of torchvision's
ResNet-18 (random weights, seed 0: no registry is reached; scripted) over a folder of M photos at
224 x 224 (ImageNet's preprocessing), the forward passes included, timed as a whole; then `sae evaluate` on 500 other photos:
the held-out FVU. The photos are random crops (scale, place, flip) of scikit-image's natural
photographs, written here.

  bench_sae_scale.py CLI [--images N] [--resnet-images M] [--threads T] [--batch B] [--work DIR]
  (--resnet-images 0 leaves the ResNet-18 part out)
"""
import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

import numpy as np

DEMO = pathlib.Path(__file__).resolve().parents[2] / "resources" / "demo"


def run_measured(command):
    """(seconds, peak RSS in MiB, stdout) of one command in its own process."""
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([str(c) for c in command], stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed ({process.returncode}): {stderr}")
    return seconds, usage.ru_maxrss / 1024.0, stdout


def linked_folder(folder, count):
    """`count` links to the demo's images, in class sub-folders as the demo has them."""
    sources = sorted(p for p in (DEMO / "images").rglob("*.png"))
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        source = sources[i % len(sources)]
        link = folder / f"{i:07d}_{source.name}"
        if not link.exists():
            link.symlink_to(source)
    return folder


def photo_crops(folder, count, seed):
    """`count` 224 x 224 JPEG crops of scikit-image's photographs."""
    from PIL import Image
    import skimage.data

    names = ["astronaut", "coffee", "chelsea", "rocket", "motorcycle_left", "motorcycle_right", "hubble_deep_field",
             "retina", "camera", "moon", "coins", "brick", "grass", "gravel", "horse", "clock", "page", "text",
             "immunohistochemistry", "cell"]
    photos = []
    for name in names:
        try:
            array = np.asarray(getattr(skimage.data, name)())
        except Exception:  # noqa: BLE001 - a photograph this scikit-image lacks
            continue
        if array.dtype == bool:
            array = array.astype(np.uint8) * 255
        image = Image.fromarray(array.astype(np.uint8)).convert("RGB")
        photos.append(image)
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        path = folder / f"crop_{i:05d}.jpg"
        if path.exists():
            continue
        photo = rng.choice(photos)
        side = min(photo.size) * rng.uniform(0.2, 1.0)
        x, y = rng.uniform(0, photo.size[0] - side), rng.uniform(0, photo.size[1] - side)
        crop = photo.crop((int(x), int(y), int(x + side), int(y + side))).resize((224, 224), Image.BILINEAR)
        if rng.random() < 0.5:
            crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
        crop.save(path, quality=90)
    return folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cli")
    parser.add_argument("--images", type=int, default=10000)
    parser.add_argument("--resnet-images", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4096, help="vectors per training step")
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    temporary = None if args.work else tempfile.TemporaryDirectory(prefix="torchscope_sae_scale_")
    work = pathlib.Path(args.work or temporary.name)
    threads = ["--threads", str(args.threads)]
    report = {"threads": args.threads, "batch": args.batch}

    counts = [args.images, 10 * args.images]
    memory = {"images": counts, "peak_rss_mib": [], "seconds": []}
    for count in counts:
        folder = linked_folder(work / f"demo_{count}", count)
        out = work / f"demo_sae_{count}"
        seconds, rss, _ = run_measured([args.cli, "sae", "train", DEMO / "fashion_cnn.pt", "--layer", "features.1",
                                        "--images", folder, "--expansion", 16, "--k", 32, "--batch", args.batch,
                                        "--batch-images", 256, *threads, "--out", out])
        memory["peak_rss_mib"].append(rss)
        memory["seconds"].append(seconds)
        log = (out / "features.1" / "training_log.csv").read_text().splitlines()
        memory.setdefault("vectors_trained", []).append(int(log[-1].split(",")[1]))
    memory["peak_rss_growth"] = memory["peak_rss_mib"][1] / memory["peak_rss_mib"][0] - 1.0
    report["memory"] = memory

    if args.resnet_images > 0:
        import torch
        import torchvision

        model = work / "resnet18_random.pt"
        if not model.exists():
            torch.manual_seed(0)
            torch.jit.save(torch.jit.script(torchvision.models.resnet18(weights=None).eval()), str(model))
        train_folder = photo_crops(work / f"crops_{args.resnet_images}", args.resnet_images, seed=1)
        held_out = photo_crops(work / "crops_held_out", 500, seed=2)
        out = work / "resnet18_layer3"
        seconds, rss, _ = run_measured([args.cli, "sae", "train", model, "--layer", "layer3", "--images",
                                        train_folder, "--preprocess", "imagenet", "--expansion", 16, "--k", 32,
                                        "--batch", args.batch, "--batch-images", 32, *threads, "--out", out])
        log = (out / "layer3" / "training_log.csv").read_text().splitlines()
        last = log[-1].split(",")
        evaluation = work / "resnet18_layer3_held_out.json"
        run_measured([args.cli, "sae", "evaluate", model, "--sae", out / "layer3", "--images", held_out,
                      "--preprocess", "imagenet", *threads, "--out", evaluation])
        held = json.loads(evaluation.read_text())
        report["resnet18_layer3"] = {
            "images": args.resnet_images, "seconds": seconds, "peak_rss_mib": rss, "steps": len(log) - 1,
            "vectors": int(last[1]), "last_step_fvu": float(last[5]), "last_step_l0": float(last[6]),
            "last_step_dead_fraction": float(last[7]), "held_out_images": 500, "held_out_fvu": held["fvu"],
            "held_out_l0": held["l0"], "held_out_dead_latents": held["dead_latents"],
            "held_out_loss_recovered": held.get("downstream", {}).get("loss_recovered")}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
