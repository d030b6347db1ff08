#!/usr/bin/env python3
"""The Python side of TorchScope's .pt2 benchmark, driven line by line by bench_exported.

Makes the model (torchvision, seeded weights), saves it scripted (NAME_scripted.pt) and exported
with a dynamic batch (NAME.pt2) for the C++ side, then times eager PyTorch and the exported
program's own module (ExportedProgram.module()) on the same input.

    exported_worker.py MODEL BATCH THREADS DIR
Commands on stdin, one answer line on stdout each:
    files            -> "ok" once DIR/MODEL_scripted.pt and DIR/MODEL.pt2 are written
    eager | module   -> seconds for one forward pass
    quit
"""
import pathlib
import sys
import time
import warnings

import torch
import torchvision

warnings.filterwarnings("ignore")


def main():
    name, batch, threads, folder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), pathlib.Path(sys.argv[4])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    size = 224
    torch.manual_seed(0)
    x = torch.randn(batch, 3, size, size)
    program = None

    def timed(run):
        start = time.perf_counter()
        with torch.no_grad():
            run()
        return time.perf_counter() - start

    for line in sys.stdin:
        command = line.strip()
        if command == "quit":
            break
        if command == "files":
            folder.mkdir(parents=True, exist_ok=True)
            torch.jit.save(torch.jit.script(model), folder / f"{name}_scripted.pt")
            example = torch.randn(2, 3, size, size)
            exported = torch.export.export(model, (example,),
                                           dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},))
            torch.export.save(exported, folder / f"{name}.pt2")
            program = exported.module()
            print("ok", flush=True)
            continue
        run = {"eager": lambda: model(x), "module": lambda: program(x)}[command]
        print(timed(run), flush=True)


if __name__ == "__main__":
    main()
