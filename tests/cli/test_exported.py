"""torch.export programs (.pt2) through torchscope-cli, against eager PyTorch on the same nn.Module.

Each model is exported by the environment's PyTorch with a dynamic batch dimension (exported at
batch 2, run at batch 3), saved with torch.export.save and opened by TorchScope with no Python.
Every module's output (each call: PATH, PATH#1), first input and gradient equals what forward
hooks, forward pre-hooks and tensor hooks see on the eager nn.Module, bit for bit (the same ATen
kernels on the same values); the model's output equals ExportedProgram.module()(x) and the eager
model's. A module export leaves no node for (nn.Identity) is not in the program and not compared;
a module's output is what it produces that later code reads (a tuple when several values are).
"""

import os
import pathlib
import re
import subprocess
import tempfile
import unittest
import warnings
import zipfile

import torch
import torch.nn as nn
import torchvision
from torch.export import Dim

from comparisons import max_diff

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

CLI = os.environ["TORCHSCOPE_CLI"]
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
TIMEOUT = 900  # the sanitized CLI is several times slower
TARGET = 3

torch.set_num_threads(int(THREADS))


def cli(*args):
    return subprocess.run([CLI, *map(str, args), "--device", "cpu", "--threads", THREADS], capture_output=True,
                          text=True, timeout=TIMEOUT)


class EagerHooks:
    """Outputs (every call), first inputs and output gradients of the eager model's modules.

    A module whose output gets a gradient passes a copy on, so that a following in-place op
    (ReLU(inplace=True)) cannot change the tensor the gradient is taken at."""

    def __init__(self, model, grads):
        self.outputs, self.inputs, self.kept = {}, {}, {}
        self.handles = []
        for path, module in model.named_modules():
            if path:
                self.handles.append(module.register_forward_pre_hook(self.pre_hook(path)))
                self.handles.append(module.register_forward_hook(self.hook(path, path in grads)))

    @staticmethod
    def key(store, path):
        n = sum(1 for k in store if k == path or k.startswith(path + "#"))
        return path if n == 0 else f"{path}#{n}"

    def pre_hook(self, path):
        def hook(module, args):
            if args and isinstance(args[0], torch.Tensor):
                self.inputs[self.key(self.inputs, path + ":in0")] = args[0].detach().clone()
        return hook

    def hook(self, path, keep):
        def hook(module, args, output):
            if not isinstance(output, torch.Tensor):
                return None
            key = self.key(self.outputs, path)
            self.outputs[key] = output.detach().clone()
            if keep and key == path:
                self.kept[path] = output
                return output.clone()
            return None
        return hook

    def close(self):
        for h in self.handles:
            h.remove()


def paths_in_program(program):
    """The module paths the program's nodes ran in (export drops modules that compute nothing)."""
    paths = set()
    for node in program.graph.nodes:
        for _, (path, _) in (node.meta.get("nn_module_stack") or {}).items():
            paths.add(path)
    return paths


def target_of(model, x):
    """TARGET for classifiers; for segmentation the class predicted at most pixels (random weights)."""
    with torch.no_grad():
        output = model(x)
    if isinstance(output, dict):
        return int(torch.bincount(output["out"].argmax(1).flatten()).argmax())
    return TARGET


def score_of(output, target):
    """TorchScope's --target score: the class summed over the batch; segmentation: over the pixels
    where it is predicted."""
    if isinstance(output, dict):
        scores = output["out"]
        return (scores[:, target] * (scores.detach().argmax(1) == target).to(scores.dtype)).sum()
    return output[:, target].sum()


class TupleOut(nn.Module):
    """A tuple output with a dict inside, and a module called twice."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.act(self.conv(x))
        z = self.fc(self.pool(y).flatten(1))
        z = self.fc(self.act(z))  # fc and act called twice
        return z, {"features": y}


class ExportedCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def export(self, name, model, size=64, batch=2):
        torch.manual_seed(0)
        example = torch.randn(batch, 3, size, size)
        program = torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", min=1, max=64)},))
        path = self.dir / f"{name}.pt2"
        torch.export.save(program, path)
        return program, path

    def run_cli(self, *args):
        result = cli(*args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def grab(self, path, x, *grabs, extra=()):
        inputs, out = self.dir / "x.pt", self.dir / "grabbed.pt"
        torch.save(x, inputs)
        args = [a for g in grabs for a in ("--grab", g)]
        self.run_cli("run", path, "--input", inputs, "--preprocess", "none", *args, *extra, "--out", out)
        return torch.load(out)


class ExportedModels(ExportedCase):
    """Every grab, input and gradient of five torchvision models and a tuple-output model."""

    def check(self, name, model, size=64, gradients=True):
        model.eval()
        program, path = self.export(name, model, size)
        in_program = paths_in_program(program)
        torch.manual_seed(1)
        x = torch.randn(3, 3, size, size)  # not the exported batch size: the batch is dynamic

        modules = dict(model.named_modules())
        grads = [p for p in in_program if p in modules] if gradients else []
        target = target_of(model, x)
        hooks = EagerHooks(model, set(grads))
        output = model(x)
        if gradients:
            names = [p for p in grads if p in hooks.kept]
            values = torch.autograd.grad(score_of(output, target), [hooks.kept[p] for p in names],
                                         allow_unused=True)
            expected_grads = {f"{p}:grad": g for p, g in zip(names, values) if g is not None}
        hooks.close()

        expected = {k: v for k, v in hooks.outputs.items() if k.split("#")[0] in in_program}
        expected.update({k: v for k, v in hooks.inputs.items() if k.split(":")[0] in in_program})
        grabs = ["*", "*:in0"]
        if gradients:
            expected.update(expected_grads)
            grabs += [f"{p}:grad" for p in sorted(expected_grads)]
            grabs = [g.replace(":grad:grad", ":grad") for g in grabs]
        got = self.grab(path, x, *grabs, extra=("--target", target) if gradients else ())

        missing = sorted(set(expected) - set(got))
        self.assertFalse(missing, f"{name}: not grabbed: {missing[:10]}")
        unequal = [k for k in sorted(expected) if not torch.equal(got[k], expected[k])]
        worst = max((max_diff(got[k], expected[k]) for k in unequal), default=0.0)
        print(f"{name}: {len(expected)} grabs ({len([k for k in expected if k.endswith(':grad')])} gradients) "
              f"equal eager hooks; {len(unequal)} differ, worst {worst:.3g}")
        self.assertFalse(unequal, f"{name}: differ from eager hooks: {unequal[:10]} (worst {worst:.3g})")

        with torch.no_grad():
            exported = program.module()(x)
            eager = model(x)
        self.assert_same(got["output"], exported, "output vs ExportedProgram.module()")
        self.assert_same(got["output"], eager, "output vs the eager model")
        return got

    def assert_same(self, got, want, what):
        """Equal values in the same nesting (tuples, dicts), bit for bit."""
        if isinstance(want, torch.Tensor):
            self.assertIsInstance(got, torch.Tensor, what)
            self.assertTrue(torch.equal(got, want), f"{what}: max diff {max_diff(got, want):.3g}")
        elif isinstance(want, dict):
            self.assertIsInstance(got, dict, what)
            self.assertEqual(list(got), list(want), what)
            for key in want:
                self.assert_same(got[key], want[key], f"{what}[{key!r}]")
        else:
            self.assertIsInstance(got, (tuple, list), what)
            self.assertEqual(len(got), len(want), what)
            for i, (g, w) in enumerate(zip(got, want)):
                self.assert_same(g, w, f"{what}[{i}]")

    def test_resnet50(self):
        self.check("resnet50", torchvision.models.resnet50())

    def test_mobilenet_v3_small(self):
        self.check("mobilenet_v3_small", torchvision.models.mobilenet_v3_small())

    def test_vit_b_16(self):
        self.check("vit_b_16", torchvision.models.vit_b_16(), size=224)

    def test_swin_t(self):
        self.check("swin_t", torchvision.models.swin_t())

    def test_deeplabv3_dict_output(self):
        self.check("deeplabv3", torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=True))

    def test_tuple_output_and_a_module_called_twice(self):
        got = self.check("tuple_out", TupleOut(), size=16, gradients=False)
        self.assertIn("fc#1", got)
        self.assertIn("act#1", got)


if __name__ == "__main__":
    unittest.main()
