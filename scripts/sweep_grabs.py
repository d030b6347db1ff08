#!/usr/bin/env python3
"""Grabs over many model families against eager hooks, as a new user would try them: each model
with random weights, scripted, traced and exported (.pt2) where PyTorch can, run by torchscope-cli
grabbing every module ("*"), a block's input (a module with children half-way through the run) and
the gradient at the block's output of class 0's score, each compared with what forward hooks on
the eager model see (their first call's output; a batch of 2 at the model's own input size). A grab
that comes back None, or a module eager hooks see that is neither grabbed nor skipped with a note
saying why, is a failure; a refusal that says why is reported as such. Prints one Markdown table row per model and form; exits 1 when any grab
differs, is missing or the CLI fails on something it should run.

    scripts/sweep_grabs.py [--cli build/app/torchscope-cli] [--work FOLDER]
        [--timm all | --timm NAME,NAME ...] [--torchvision all | --torchvision resnet18,...]
        [--forms scripted,traced,pt2] [--out table.md]

--timm all takes one small model of every timm family (module); --timm NAMES the named models.
Run it with TorchScope's Python environment (scripts/python_env.sh prints it).
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import warnings

import torch

warnings.filterwarnings("ignore")
ROOT = pathlib.Path(__file__).resolve().parents[1]
# A small model's name has one of these as a part ("vit_tiny_patch16", "cpubone_s0", "resnet18"):
# parts, not substrings, since "t_" inside "cait_m36_384" chose a 384-pixel M36.
SMALL = {"pico", "nano", "femto", "atto", "tiny", "xxs", "xs", "small", "s", "t", "s0", "mini", "lite", "b0", "050"}


def small(name):
    parts = re.split(r"[_.]", name)
    return any(p in SMALL or p.endswith("18") for p in parts)


def input_pixels(name):
    """The model's default input size from its pretrained config, without building it."""
    import timm
    try:
        cfg = timm.models.get_pretrained_cfg(name)
        size = getattr(cfg, "input_size", None) or (3, 224, 224)
    except Exception:  # noqa: BLE001 (no config: treated as 224 x 224)
        size = (3, 224, 224)
    return size[-1] * size[-2]
TOLERANCE = 1e-4  # relative to the eager tensor's largest magnitude: scripted/exported kernels may fuse
FORMS = ("scripted", "traced", "pt2")


def timm_models(which):
    import timm
    if which != ["all"]:
        return [("timm", name) for name in which]
    chosen = []
    for module in sorted(timm.list_modules()):
        names = timm.list_models(module=module)
        if not names:
            continue
        names.sort(key=lambda n: (not small(n), input_pixels(n), len(n), n))
        chosen.append(("timm", names[0]))
    return chosen


def torchvision_models(which):
    import torchvision
    names = torchvision.models.list_models(module=torchvision.models) if which == ["all"] else which
    return [("torchvision", name) for name in names]


def build(source, name):
    torch.manual_seed(0)
    if source == "timm":
        import timm
        model = timm.create_model(name, pretrained=False)
        size = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))
    else:
        import torchvision
        model = torchvision.models.get_model(name, weights=None)
        size = (3, 299, 299) if name == "inception_v3" else (3, 224, 224)
    return model.eval(), size


def first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
        return value[0]
    if isinstance(value, dict) and "out" in value:
        return value["out"]
    return None


def path_aware_hooks(model, on_call):
    """Forward hooks that name each call by the path it was made through, as TorchScope's grabs do.
    A module held under several paths (CoaT's cpe2 is also serial_blocks2.0.cpe and .1.cpe) is one
    object to a hook: hooks name its calls by the object, TorchScope by the call site. So a stack of
    the modules running says who called: the call's path is the alias of the object under the
    caller's path (the shortest, when the caller holds it deeper), else its first name. Calls
    on_call(path, inputs, output) after each call; returns the handles."""
    aliases = {}
    for path, module in model.named_modules(remove_duplicate=False):
        aliases.setdefault(id(module), []).append(path)
    stack, handles = [], []

    def path_of(module):
        names = aliases[id(module)]
        if stack:
            caller = stack[-1]
            under = sorted((p for p in names if caller == "" or p.startswith(caller + ".")), key=len)
            if under:
                return under[0]
        return names[0]

    def before(module, inputs):
        stack.append(path_of(module))

    def after(module, inputs, output):
        path = stack.pop()
        if path:
            on_call(path, inputs, output)
    seen_objects = set()
    for _, module in model.named_modules(remove_duplicate=False):
        if id(module) in seen_objects:
            continue
        seen_objects.add(id(module))
        handles += [module.register_forward_pre_hook(before), module.register_forward_hook(after)]
    return handles


def choose_grabs(model, x):
    """What eager hooks see: every module path's first call (by the path it was made through:
    path_aware_hooks), and at a block half-way through the run its input and the gradient of class 0's
    score (summed over the batch) at its output."""
    order, seen, calls = [], {}, {}

    def on_call(path, inputs, output):
        calls[path] = calls.get(path, 0) + 1
        if path not in seen:  # a copy: a later in-place op (ReLU(inplace=True)) must not change it
            order.append(path)
            copy = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v
            seen[path] = (tuple(copy(i) for i in inputs), copy(output))
    handles = path_aware_hooks(model, on_call)
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    modules = dict(model.named_modules(remove_duplicate=False))

    def usable(path):
        inputs, output = seen[path]
        return (calls[path] == 1 and isinstance(output, torch.Tensor) and output.is_floating_point()
                and inputs and isinstance(inputs[0], torch.Tensor) and inputs[0].is_floating_point())
    blocks = [p for p in order if list(modules[p].children()) and usable(p)]
    if not blocks:
        return None
    block = blocks[len(blocks) // 2]

    kept = {}

    def keep(path, inputs, output):  # the block's call through its own path (a shared one has others)
        if path == block and block not in kept:
            kept.update({block: output, f"{block}:in0": inputs[0]})
    handles = path_aware_hooks(model, keep)
    out = first_tensor(model(x))
    for h in handles:
        h.remove()
    gradient, = torch.autograd.grad(out[:, 0].sum(), kept[block], allow_unused=True)
    want = {path: output for path, (inputs, output) in seen.items()
            if isinstance(output, torch.Tensor) and output.is_floating_point()}
    want[f"{block}:in0"] = kept[f"{block}:in0"].detach()
    want["output"] = out.detach()
    if gradient is not None:
        want[f"{block}:grad"] = gradient
    return want, block


def convert(model, x, form, path):
    if form == "scripted":
        torch.jit.save(torch.jit.script(model), str(path))
    elif form == "traced":
        torch.jit.save(torch.jit.trace(model, x, check_trace=False), str(path))
    else:
        torch.export.save(torch.export.export(model, (x,)), str(path))


def compare(got, want, skipped):
    """Problems: keys missing (and not skipped with a note), None, of another shape or differing
    beyond the tolerance."""
    problems = []
    for key, value in want.items():
        if key not in got and key in skipped:
            continue
        g = got.get(key, "missing")
        if g is None or isinstance(g, str):
            problems.append(f"{key}: {'None' if g is None else 'missing'}")
            continue
        if not isinstance(g, torch.Tensor):
            g = first_tensor(g)
        if g is None or tuple(g.shape) != tuple(value.shape):
            problems.append(f"{key}: shape {None if g is None else tuple(g.shape)} vs {tuple(value.shape)}")
            continue
        a, b = g.double(), value.double()
        finite = torch.isfinite(b)
        # NaN and infinities where eager has them, and only there; the finite values compared below.
        if not (torch.equal(torch.isfinite(a), finite) and torch.equal(a.isnan(), b.isnan())
                and torch.equal(a[b.isinf()], b[b.isinf()])):
            problems.append(f"{key}: NaN or infinity where eager PyTorch has none (or the other way)")
            continue
        a, b = a[finite], b[finite]
        diff = float((a - b).abs().max()) if a.numel() else 0.0
        scale = float(b.abs().max()) if b.numel() else 0.0
        if diff > TOLERANCE * scale + 1e-6:
            problems.append(f"{key}: differs by {diff:.3g} (scale {scale:.3g})")
    return problems


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    errors = [l for l in lines if "error" in l.lower()]
    return (errors[-1] if errors else lines[-1] if lines else "")[:160]


def sweep_one(source, name, forms, cli, work, threads):
    rows = []
    try:
        model, size = build(source, name)
        x = torch.randn(2, *size)
        want = choose_grabs(model, x)
    except Exception as e:  # noqa: BLE001 (the model itself fails in eager PyTorch: worth a row)
        return [(source, name, "-", "not built", str(e).splitlines()[0][:120], True)]
    if want is None:
        return [(source, name, "-", "no grabs", "no block called once with tensors", True)]
    want, block = want
    x_path = work / f"{name}_x.pt"
    torch.save(x, x_path)
    grabs = ["*", f"{block}:in0", f"{block}:grad"]
    for form in forms:
        path = work / f"{name}_{form}.{'pt2' if form == 'pt2' else 'pt'}"
        try:
            convert(model, x, form, path)
        except Exception as e:  # noqa: BLE001
            rows.append((source, name, form, "not converted", str(e).strip().splitlines()[0][:100], True))
            continue
        out = work / f"{name}_{form}_got.pt"
        out.unlink(missing_ok=True)
        args = [cli, "run", path, "--input", x_path, "--target", "0", "--threads", str(threads), "--device", "cpu",
                "--out", out, *[a for g in grabs for a in ("--grab", g)]]
        started = time.time()
        result = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=900)
        seconds = time.time() - started
        if result.returncode != 0:
            message = first_line(result.stderr)
            # A refusal that says why is fine where the form keeps no value (a trace, an export); a
            # scripted model keeps every call, and anything else is a failure.
            refused = "never runs in this model" in message and form != "scripted"
            rows.append((source, name, form, "refused" if refused else "CLI FAILED", message, refused))
            continue
        # The modules TorchScope says never run in this form (the tree marks them, with the reason;
        # '*' skips them with a note): a trace keeps no value for a pass-through, export none for a
        # module that computes nothing.
        tree = subprocess.run([str(cli), "inspect", str(path), "--json"], capture_output=True, text=True, timeout=600)
        skipped = {m["path"] for m in json.loads(tree.stdout)["modules"] if not m["called"]} if tree.returncode == 0 \
            else set()
        got = torch.load(out, weights_only=False)
        problems = compare(got, want, skipped)
        if form == "scripted":  # the scripted model keeps every call: what runs eagerly runs there
            problems += [f"{p}: runs eagerly, marked as never running" for p in sorted(skipped & set(want))]
        equal = sum(1 for key in want if key in got)
        rows.append((source, name, form, "ok" if not problems else "MISMATCH",
                     f"{equal} grabs equal, {len(skipped)} skipped with a note ({seconds:.0f} s)" if not problems
                     else "; ".join(problems)[:200], not problems))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default=str(ROOT / "build" / "app" / "torchscope-cli"))
    parser.add_argument("--work", help="keep the models and results here (default: a temporary folder, removed)")
    parser.add_argument("--timm", default="", help="all, or comma-separated model names")
    parser.add_argument("--torchvision", default="", help="all, or comma-separated model names")
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    temporary = None if args.work else tempfile.TemporaryDirectory(prefix="torchscope-sweep-")
    work = pathlib.Path(args.work or temporary.name)
    work.mkdir(parents=True, exist_ok=True)
    models = []
    if args.timm:
        models += timm_models(args.timm.split(","))
    if args.torchvision:
        models += torchvision_models(args.torchvision.split(","))
    forms = [f for f in args.forms.split(",") if f]
    unknown = set(forms) - set(FORMS)
    if unknown or not models:
        parser.error(f"unknown forms {sorted(unknown)}" if unknown else "name models with --timm or --torchvision")
    lines = ["| source | model | form | result | detail |", "| --- | --- | --- | --- | --- |"]
    print("\n".join(lines), flush=True)
    failed = 0
    for source, name in models:
        rows = sweep_one(source, name, forms, args.cli, work, args.threads)
        if temporary:  # a model's files go once it is done: the whole sweep would fill a disk
            for file in work.glob(f"{name}_*"):
                file.unlink(missing_ok=True)
        for row in rows:
            line = "| " + " | ".join(str(v).replace("|", "/") for v in row[:5]) + " |"
            print(line, flush=True)
            lines.append(line)
            failed += not row[5]
    if args.out:
        pathlib.Path(args.out).write_text("\n".join(lines) + "\n")
    compared = sum(1 for line in lines if "| ok |" in line)
    print(f"\n{failed} failure(s), {compared} model form(s) compared, over {len(models)} model(s)", flush=True)
    return 1 if failed or not compared else 0  # a sweep that compared nothing proves nothing


if __name__ == "__main__":
    sys.exit(main())
