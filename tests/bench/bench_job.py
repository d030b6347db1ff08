"""A recording as one job of two ranks against one process with the same total threads, and what
merging the ranks' statistics costs. Prints JSON.

Throughput: `record --reduce stats` over the same images, one process with --threads T against
two ranks with --threads T/2 each (Gloo over the loopback), alternated, the median of each taken:
of the whole commands, and of the recording loops alone (the summaries' seconds; rank 0's loop
waits for rank 1 at every step).
Merge: rank 0's own report of the bytes it received from the other rank and the time to receive
and fold them in ("merged the recordings of ...").

  bench_job.py CLI MODEL.pt --size S --images N --grab L [--grab L ...] [--repeats R] [--threads T]
"""
import argparse
import json
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_process(cli, args, threads):
    """Whole-command seconds, the recording loop's own seconds (its summary), stderr."""
    started = time.perf_counter()
    result = subprocess.run([cli, *args, "--threads", str(threads)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"one process failed: {result.stderr}")
    return seconds, json.loads(result.stdout)["seconds"], result.stderr


def two_ranks(cli, args, threads):
    port = free_port()
    started = time.perf_counter()
    processes = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        processes.append(subprocess.Popen([cli, *args, "--threads", str(threads)], env=env, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outputs = [p.communicate() for p in processes]
    seconds = time.perf_counter() - started
    for p, (_, err) in zip(processes, outputs):
        if p.returncode != 0:
            sys.exit(f"a rank failed: {err}")
    return seconds, json.loads(outputs[0][0])["seconds"], outputs[0][1]


def merge_figures(stderr):
    found = re.search(r"merged the recordings of 2 ranks: (\d+) bytes from the others, ([0-9.e-]+) s", stderr)
    if not found:
        sys.exit(f"rank 0 did not report its merge: {stderr}")
    return int(found.group(1)), float(found.group(2))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cli")
    parser.add_argument("model")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--channels", type=int, default=3)
    parser.add_argument("--images", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--grab", action="append", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    o = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        images = folder / "images.pt"
        generator = torch.Generator().manual_seed(0)
        torch.save(torch.rand(o.images, o.channels, o.size, o.size, generator=generator), images)
        args = ["record", o.model, "--input", str(images), "--batch", str(o.batch), "--reduce", "stats"]
        for grab in o.grab:
            args += ["--grab", grab]
        single, job, single_loop, job_loop, merges = [], [], [], [], []
        one_process(o.cli, [*args, "--out", str(folder / "warm.pt")], o.threads)  # page cache, first touch
        for _ in range(o.repeats):  # alternated, so that drifts of the machine hit both alike
            seconds, loop, _ = one_process(o.cli, [*args, "--out", str(folder / "single.pt")], o.threads)
            single.append(seconds)
            single_loop.append(loop)
            seconds, loop, stderr = two_ranks(o.cli, [*args, "--out", str(folder / "job.pt")], max(1, o.threads // 2))
            job.append(seconds)
            job_loop.append(loop)
            merges.append(merge_figures(stderr))
        rate = lambda times: o.images / statistics.median(times)
        single_rate, job_rate = rate(single), rate(job)
        print(json.dumps({
            "model": pathlib.Path(o.model).name, "grabs": o.grab, "images": o.images, "size": o.size,
            "threads_in_all": o.threads, "repeats": o.repeats,
            "one_process_images_per_second": round(single_rate, 2),
            "two_ranks_images_per_second": round(job_rate, 2),
            "two_ranks_to_one_process": round(job_rate / single_rate, 3),
            "recording_loop_only": {"one_process_images_per_second": round(rate(single_loop), 2),
                                    "two_ranks_images_per_second": round(rate(job_loop), 2),
                                    "two_ranks_to_one_process": round(rate(job_loop) / rate(single_loop), 3)},
            "merge_bytes": merges[0][0],
            "merge_seconds_median": round(statistics.median(m[1] for m in merges), 6),
            "note": "whole commands (start-up, model loading, rendezvous) and their recording loops alone",
        }, indent=1))


if __name__ == "__main__":
    main()
