"""torch.export programs (.pt2) through torchscope-cli, against eager PyTorch on the same nn.Module.

Each model is exported by the environment's PyTorch with a dynamic batch dimension (exported at
batch 2, run at batch 3, ViT-B/16 at batch 1), saved with torch.export.save and opened by
TorchScope with no Python. Every module's output (each call: PATH, PATH#1), first input and
gradient equals what forward hooks, forward pre-hooks and tensor hooks see on the eager nn.Module,
bit for bit (the same ATen kernels on the same values); the model's output equals
ExportedProgram.module()(x) and the eager model's. A module export leaves no node for
(nn.Identity) is not in the program and not compared; a module's output is what it produces that
later code reads (a tuple when several values are).
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest
import warnings
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torch._higher_order_ops import map as control_map, while_loop
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
    """The module paths the program's nodes ran in, those of its regions' subgraphs included (export
    drops modules that compute nothing)."""
    paths = set()
    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
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
        self.skip = nn.Identity()  # computes nothing: no node of the program runs in it

    def forward(self, x):
        y = self.act(self.skip(self.conv(x)))
        z = self.fc(self.pool(y).flatten(1))
        z = self.fc(self.act(z))  # fc and act called twice
        return z, {"features": y}


class AutocastOffBlock(nn.Module):
    """Run as timm's EfficientViT runs its attention: under torch.autocast(enabled=False), which export
    writes as torch.ops.higher_order.wrap_with_autocast over subgraphs (one per stretch between
    module calls)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.act = nn.ReLU()
        self.mix = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, enabled=False):
            y = self.act(self.conv(x.float()))
            return y + self.mix(y), y.mean((2, 3))


class WrappedRegions(nn.Module):
    """A block under autocast off, and a module run under torch.no_grad(), which export writes as
    torch.ops.higher_order.wrap_with_set_grad_enabled: its result is used, its gradient is not."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block = AutocastOffBlock()
        self.frozen = nn.Conv2d(8, 8, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y, m = self.block(self.stem(x))
        with torch.no_grad():
            f = self.frozen(y)
        return self.fc(torch.cat([self.pool(y + f).flatten(1), m], 1))


class DropoutFirst(nn.Module):
    """A block that begins with a Dropout, as timm's ConvNormAct does: in eval mode the dropout returns
    its input itself, and export credits the residual's read of that input to the dropout. A head
    that is a dropout alone returns the dropout's result."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block = nn.Sequential(nn.Dropout(0.0), nn.Conv2d(8, 8, 3, padding=1))
        self.head = nn.Sequential(nn.Dropout(0.1))
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        y = self.stem(x)
        y = y + self.block(y)
        return self.fc(self.head(y).mean((2, 3)))


class Branches(nn.Module):
    """torch.cond whose branches call layers (plain: the same as a Python if)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.b = nn.Conv2d(3, 8, 1)
        self.plain = False

    def forward(self, x):
        if self.plain:
            return self.a(x) if x.mean() > 0 else self.b(x).sigmoid()
        return torch.cond(x.mean() > 0, lambda t: self.a(t), lambda t: self.b(t).sigmoid(), (x,))


class Affine(nn.Module):
    """A layer of its own whose weight and bias are read by two operations: inside a region nothing
    says which module they ran in, and neither is the whole layer."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n) / n ** 0.5)
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return nn.functional.linear(x, self.weight) + self.bias


class ControlFlow(nn.Module):
    """torch.cond, while_loop and map calling layers, as torch.export writes them; with plain=True
    the same computation in Python control flow, on which eager hooks see every call (torch.cond
    itself runs through Dynamo even in eager mode, where a hook with side effects is refused)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 3, 1)
        self.gate = Branches()
        self.step = nn.Linear(8, 8)
        self.rows = nn.Linear(8, 8)
        self.shift = Affine(8)
        self.head = nn.Linear(8, 10)
        bn = self.gate.a[1]
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        self.plain = False

    def set_plain(self, plain):
        self.plain = self.gate.plain = plain
        return self

    def forward(self, x):
        y = self.gate(self.stem(x)).mean((2, 3))
        if self.plain:
            for _ in range(3):
                y = self.step(y).tanh()
            z = torch.stack([self.shift(self.rows(r).relu()) for r in y.unsqueeze(1).expand(-1, 2, -1).contiguous()])
        else:
            _, y = while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, self.step(h).tanh()),
                              (torch.zeros((), dtype=torch.int64), y))
            z = control_map(lambda r: self.shift(self.rows(r).relu()), y.unsqueeze(1).expand(-1, 2, -1).contiguous())
        return self.head(z.mean(1))


# ViT-B/16 is exported once per process (about 15 s of the suite's slowest tests on 2 cores) and
# serves the grab check and the attention check; its weights are random and neither test changes them.
_SHARED_DIR = tempfile.TemporaryDirectory()
_SHARED = {}


def tearDownModule():
    _SHARED.clear()
    _SHARED_DIR.cleanup()


def export_to(model, path, size=64, batch=2):
    """`model` exported on a seeded example of batch x 3 x size x size, any batch up to 64, saved at path."""
    torch.manual_seed(0)
    example = torch.randn(batch, 3, size, size)
    program = torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", min=1, max=64)},))
    torch.export.save(program, path)
    return program


def shared_vit_b_16():
    """(model, program, path) of torchvision's ViT-B/16 exported at 224 x 224, made on first use."""
    if "vit_b_16" not in _SHARED:
        model = torchvision.models.vit_b_16().eval()
        path = pathlib.Path(_SHARED_DIR.name) / "vit_b_16.pt2"
        _SHARED["vit_b_16"] = (model, export_to(model, path, size=224), path)
    return _SHARED["vit_b_16"]


class ExportedCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def export(self, name, model, size=64, batch=2):
        path = self.dir / f"{name}.pt2"
        return export_to(model, path, size, batch), path

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

    def check(self, name, model, size=64, gradients=True, batch=3, without_gradients=(), operators=(),
              exported=None):
        """without_gradients: modules run under torch.no_grad(), whose outputs have no gradient to
        compare; operators: targets the program must hold (what the model is there to exercise);
        exported: (program, path) of `model` exported already."""
        model.eval()
        program, path = exported if exported else self.export(name, model, size)
        in_program = paths_in_program(program)
        targets = {str(node.target) for node in program.graph.nodes}
        for operator in operators:
            self.assertIn(operator, targets, f"{name}: export wrote no {operator}")
        torch.manual_seed(1)
        x = torch.randn(batch, 3, size, size)  # not the exported batch size: the batch is dynamic

        modules = dict(model.named_modules())
        grads = [p for p in in_program if p in modules and p not in without_gradients] if gradients else []
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
        model, program, path = shared_vit_b_16()  # 224 x 224: its patch grid
        self.check("vit_b_16", model, size=224, batch=1, exported=(program, path))

    def test_swin_t(self):
        self.check("swin_t", torchvision.models.swin_t())

    def test_deeplabv3_dict_output(self):
        self.check("deeplabv3", torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=True))

    def test_attention_of_an_exported_vit_equals_need_weights(self):
        # Export traces nn.MultiheadAttention's Python path: scaled_dot_product_attention, which the
        # attention grab taps. Eager asked for its weights runs the explicit softmax: float32 apart.
        model, _, path = shared_vit_b_16()
        x = torch.randn(1, 3, 224, 224)
        layers = ["encoder.layers.encoder_layer_0.self_attention", "encoder.layers.encoder_layer_11.self_attention"]
        want, handles = {}, []
        for layer in layers:
            module = model.get_submodule(layer)
            handles.append(module.register_forward_pre_hook(
                lambda m, a, k: (a, {**k, "need_weights": True, "average_attn_weights": False}), with_kwargs=True))
            handles.append(module.register_forward_hook(
                lambda m, a, o, layer=layer: want.__setitem__(f"{layer}:attention", o[1].detach())))
        with torch.no_grad():
            model(x)
        for h in handles:
            h.remove()
        got = self.grab(path, x, *[f"{layer}:attention" for layer in layers])
        plain = self.grab(path, x)
        self.assertTrue(torch.equal(got["output"], plain["output"]), "the attention grabs changed the output")
        for key, value in want.items():
            diff = max_diff(got[key], value)
            print(f"{key}: max abs diff {diff:.3g}")
            self.assertLessEqual(diff, 1e-5, key)

    def test_regions_under_autocast_off_and_without_gradients(self):
        # Each region's nodes run in its place: the modules inside are grabbed, their gradients are
        # eager PyTorch's, and no gradient flows back through what torch.no_grad() computed.
        got = self.check("wrapped_regions", WrappedRegions(), size=16, without_gradients={"frozen"},
                         operators=("wrap_with_autocast", "wrap_with_set_grad_enabled"))
        for key in ("block.conv", "block.act", "block.mix", "frozen", "block.mix:grad", "stem:grad"):
            self.assertIn(key, got)
        # Eager PyTorch has no gradient at what torch.no_grad() computed: TorchScope's is zero, and says why.
        x, out = self.dir / "x.pt", self.dir / "frozen.pt"
        torch.save(torch.randn(2, 3, 16, 16), x)
        result = self.run_cli("run", self.dir / "wrapped_regions.pt2", "--input", x, "--preprocess", "none",
                              "--grab", "frozen:grad", "--target", TARGET, "--out", out)
        self.assertEqual(torch.count_nonzero(torch.load(out)["frozen:grad"]).item(), 0)
        self.assertIn("'frozen:grad' is zero", result.stderr)
        self.assertIn("torch.no_grad()", result.stderr)

    def test_a_block_that_begins_with_a_dropout_returns_one_tensor(self):
        got = self.check("dropout_first", DropoutFirst(), size=16, operators=("aten.dropout.default",))
        self.assertIsInstance(got["block"], torch.Tensor)  # not (its result, the dropout's)
        self.assertIsInstance(got["head"], torch.Tensor)

    def test_tuple_output_and_a_module_called_twice(self):
        got = self.check("tuple_out", TupleOut(), size=16, gradients=False)
        self.assertIn("fc#1", got)
        self.assertIn("act#1", got)


class ExportedControlFlow(ExportedCase):
    """torch.cond, while_loop and map: the program runs the branch its predicate picks and each
    iteration, and the layers called inside are grabbed at every call, against eager hooks on the
    same model written in Python control flow."""

    # What TorchScope cannot see inside a region (export keeps no module there): the Sequential
    # around the branch's layers, the ReLU, which has no weights to recognise it by, and a layer of
    # two operations (either alone would be a wrong value).
    UNSEEN = {"gate.a", "gate.a.2", "shift"}

    def test_layers_inside_regions_equal_eager_hooks(self):
        torch.manual_seed(0)
        model = ControlFlow().eval()
        program = torch.export.export(model, (torch.randn(2, 3, 10, 7),),
                                      dynamic_shapes=({0: Dim("batch", min=1, max=64)},))
        path = self.dir / "control_flow.pt2"
        torch.export.save(program, path)
        targets = {str(node.target) for node in program.graph.nodes}
        for operator in ("cond", "while_loop", "map_impl"):
            self.assertIn(operator, targets)
        # Inputs 10 x 7 (a dynamic batch of 3): one takes the cond's true branch, one the false.
        inputs, sign = {}, lambda x: bool(model.stem(x).mean() > 0)
        generator = torch.Generator().manual_seed(1)
        while len(inputs) < 2:
            with torch.no_grad():
                x = torch.randn(3, 3, 10, 7, generator=generator) + torch.randn((), generator=generator)
                inputs.setdefault(sign(x), x)
        model.set_plain(True)
        modules = [p for p, _ in model.named_modules() if p and p not in self.UNSEEN]
        for branch, x in sorted(inputs.items()):
            with self.subTest(branch=branch):
                taken, skipped = ("gate.a.0", "gate.b") if branch else ("gate.b", "gate.a.0")
                grads = ["stem", "gate", taken, "step", "rows", "head"]
                hooks = EagerHooks(model, set(grads))
                output = model(x)
                values = torch.autograd.grad(output[:, TARGET].sum(), [hooks.kept[p] for p in grads])
                hooks.close()
                expected = {k: v for k, v in {**hooks.outputs, **hooks.inputs}.items()
                            if k.split("#")[0].split(":")[0] in modules}
                expected.update({f"{p}:grad": g for p, g in zip(grads, values)})
                self.assertIn("step#2", expected)  # three iterations
                self.assertIn("rows#2", expected)  # one call per sample of the batch
                self.assertNotIn(skipped, expected)
                # The branch not taken is grabbed too, its gradient included: it was not reached, so
                # nothing comes back for it (a warning says so).
                got = self.grab(path, x, "*", "*:in0", *[f"{p}:grad" for p in grads + [skipped]],
                                extra=("--target", TARGET))
                self.assertEqual(sorted(set(expected) - set(got)), [])
                self.assertEqual([k for k in got if k.split("#")[0].split(":")[0] in self.UNSEEN], [])
                self.assertFalse(any(k.split("#")[0].split(":")[0] == skipped for k in got), sorted(got))
                unequal = [k for k in sorted(expected) if not torch.equal(got[k], expected[k])]
                worst = max((max_diff(got[k], expected[k]) for k in unequal), default=0.0)
                print(f"control flow, {'true' if branch else 'false'} branch: {len(expected)} grabs "
                      f"({len(grads)} gradients) equal eager hooks; {len(unequal)} differ, worst {worst:.3g}")
                self.assertFalse(unequal, f"differ from eager hooks: {unequal[:10]} (worst {worst:.3g})")
                with torch.no_grad():
                    self.assertTrue(torch.equal(got["output"], program.module()(x)))
                    self.assertTrue(torch.equal(got["output"], model(x)))

    def test_what_a_region_hides_is_refused_with_the_reason(self):
        torch.manual_seed(0)
        _, path = self.export("control_flow", ControlFlow().eval(), size=8)
        x = torch.randn(2, 3, 8, 8)
        for module, reason in (("gate.a", "inside the exported program's control-flow region node 'cond'"),
                               ("gate.a.2", "or it runs inside the control-flow region node 'cond'"),
                               ("shift", "inside the exported program's control-flow region node 'map_impl'")):
            with self.subTest(module=module):
                torch.save(x, self.dir / "x.pt")
                result = cli("run", path, "--input", self.dir / "x.pt", "--preprocess", "none", "--grab", module,
                             "--out", self.dir / "out.pt")
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(reason, result.stderr)
                self.assertIn("by its weights", result.stderr)
        rows = {line.split()[0]: line for line in self.run_cli("inspect", path).stdout.splitlines()
                if line and not line.startswith(" ")}
        self.assertIn("inside an if-branch", rows["gate.b"])
        self.assertIn("inside a loop", rows["step"])
        self.assertIn("inside a loop", rows["rows"])


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = nn.ReLU()
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        return self.head(self.act(self.conv(x)).mean((2, 3)))


class Nested(nn.Module):
    """A dict input, a dict output holding a tuple, a non-persistent buffer, a lifted tensor
    constant, sizes computed from the input and a factory call export bakes the device into."""

    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.linspace(0.5, 1.5, 3), persistent=False)
        self.lin = nn.Linear(3, 3)

    def forward(self, x, extra):
        n = x.shape[0]
        z = self.lin(x) * self.k + torch.tensor([1.0, 2.0, 3.0])
        z = z.view(n, 3, 1).expand(n, 3, 2).reshape(n, 6)
        steps = torch.arange(n, device=x.device).float()
        return {"z": z, "w": (steps, extra["b"] * 2)}


class ExportedEngineFeatures(ExportedCase):
    """Truncation, edits and the module tree on a .pt2, as for TorchScript."""

    def test_truncation_runs_nothing_after_the_cut(self):
        model = torchvision.models.resnet18().eval()
        _, path = self.export("resnet18", model)
        x = torch.randn(3, 3, 64, 64)
        inputs, out = self.dir / "x.pt", self.dir / "cut.pt"
        torch.save(x, inputs)
        result = subprocess.run([CLI, "run", path, "--input", inputs, "--preprocess", "none", "--truncate", "layer2",
                                 "--out", out, "--device", "cpu", "--threads", THREADS], capture_output=True,
                                text=True, timeout=TIMEOUT, env={**os.environ, "TORCHSCOPE_DUMP_GRAPH": "1"})
        self.assertEqual(result.returncode, 0, result.stderr)
        called = re.findall(r'prim::CallMethod\[name="forward"\]\(%(\w+)', result.stderr)
        modules = re.findall(r'prim::GetAttr\[name="(\w+)"\]\(%self', result.stderr)
        ran = []
        hooks = [m.register_forward_hook(lambda m, a, o, n=n: ran.append(n)) for n, m in model.named_children()]
        with torch.no_grad():
            model(x)
        for h in hooks:
            h.remove()
        kept = ran[:ran.index("layer2") + 1]
        print(f"truncated at layer2: {len(called)} module calls left of {len(ran)}: {[m for m in modules]}")
        self.assertEqual(len(called), len(kept))
        self.assertEqual([m for m in modules if m in ran], kept)
        for later in ("layer3", "layer4", "fc", "aten::linear", "aten::flatten"):
            self.assertNotIn(later, result.stderr.split("instrumented graph:")[1], later)
        grabbed = {}
        handle = model.layer2.register_forward_hook(lambda m, a, o: grabbed.__setitem__("a", o))
        with torch.no_grad():
            model(x)
        handle.remove()
        self.assertTrue(torch.equal(torch.load(out)["output"], grabbed["a"]))

    def test_float16_and_bfloat16_programs(self):
        # A program exported in half precision runs in it: every grab, a gradient and the output equal
        # eager PyTorch's in that dtype, bit for bit (an input 16 x 12, batch 2).
        for dtype in (torch.float16, torch.bfloat16):
            with self.subTest(dtype=dtype):
                torch.manual_seed(0)
                model = Small().eval().to(dtype)
                x = torch.randn(2, 3, 16, 12).to(dtype)
                program = torch.export.export(model, (x,), dynamic_shapes=({0: Dim("batch", min=1, max=64)},))
                path = self.dir / f"small_{str(dtype).split('.')[1]}.pt2"
                torch.export.save(program, path)
                seen = {}
                hooks = [m.register_forward_hook(lambda m, a, o, n=n: seen.__setitem__(n, o))
                         for n, m in model.named_modules() if n]
                y = model(x.clone())
                for hook in hooks:
                    hook.remove()
                grad = torch.autograd.grad(y[:, TARGET].sum(), seen["conv"])[0]
                got = self.grab(path, x, "*", "conv:grad", extra=("--target", TARGET))
                for name in ("conv", "act", "head"):
                    self.assertEqual(got[name].dtype, dtype, name)
                    self.assertTrue(torch.equal(got[name], seen[name].detach()), name)
                self.assertTrue(torch.equal(got["output"], y.detach()))
                self.assertEqual(got["conv:grad"].dtype, dtype)
                self.assertTrue(torch.equal(got["conv:grad"], grad))

    def test_edits_equal_an_eager_hook_that_edits(self):
        model = torchvision.models.resnet18().eval()
        _, path = self.export("resnet18", model)
        x = torch.randn(2, 3, 64, 64)

        def zeroed(m, a, o):
            o = o.clone()
            o[:, [0, 5, 7]] = 0
            return o
        handle = model.layer2.register_forward_hook(zeroed)
        with torch.no_grad():
            want = model(x)
        handle.remove()
        got = self.grab(path, x, extra=("--edit", "layer2:zero:0,5,7"))
        self.assertTrue(torch.equal(got["output"], want), f"max diff {max_diff(got['output'], want):.3g}")

    def test_nested_inputs_and_outputs_buffers_and_constants(self):
        model = Nested().eval()
        x, extra = torch.randn(4, 3), {"b": torch.randn(2)}
        program = torch.export.export(model, (x, extra), dynamic_shapes=({0: Dim("batch", min=2, max=64)}, {"b": None}))
        path = self.dir / "nested.pt2"
        torch.export.save(program, path)
        x = torch.randn(5, 3)
        torch.save(x, self.dir / "x.pt")
        torch.save(extra, self.dir / "extra.pt")
        self.run_cli("run", path, "--input", self.dir / "x.pt", "--input", self.dir / "extra.pt", "--preprocess",
                     "none", "--grab", "lin", "--out", self.dir / "o.pt")
        got = torch.load(self.dir / "o.pt")
        with torch.no_grad():
            want = program.module()(x, extra)
            lin = model.lin(x)
        self.assertEqual(set(got["output"]), {"z", "w"})
        self.assertTrue(torch.equal(got["output"]["z"], want["z"]))
        self.assertTrue(torch.equal(got["output"]["w"][0], want["w"][0]))
        self.assertTrue(torch.equal(got["output"]["w"][1], want["w"][1]))
        self.assertTrue(torch.equal(got["lin"], lin))
        shown = self.run_cli("inspect", path).stdout
        self.assertIn("forward(x: Tensor, extra: Dict[str, Tensor])", shown)

    def test_a_setup_stored_in_a_copy_is_read_back(self):
        _, path = self.export("small", Small(), size=16)
        setup = self.dir / "setup.json"
        setup.write_text('{"preprocess": {"resize": 16, "crop": 16, "grayscale": false}}')
        copy = self.dir / "small_setup.pt2"
        self.run_cli("setup", path, "--preprocess", setup, "--out", copy)
        self.assertIn("setup (none stored", self.run_cli("setup", path).stdout)
        shown = self.run_cli("setup", copy).stdout
        self.assertIn("setup (the model's torchscope.json): 16×16", shown)
        self.assertIn("torch.export program", self.run_cli("inspect", copy).stdout)

    def test_many_inputs_go_in_batches_the_program_takes(self):
        """A program exported with Dim("batch", max=4): Integrated Gradients (2 images × 16 path
        points) and deletion (81 steps an image) evaluate at most 4 inputs a forward pass, equal to the
        scripted model; they sent 16 and 81 at a time before, which the program refuses."""
        torch.manual_seed(0)
        model = Small().eval()
        x = torch.randn(2, 3, 12, 20)
        program = torch.export.export(model, (x,), dynamic_shapes=({0: Dim("batch", min=1, max=4)},))
        exported, scripted, inputs = self.dir / "small.pt2", self.dir / "small.pt", self.dir / "x.pt"
        torch.export.save(program, exported)
        torch.jit.save(torch.jit.script(model), scripted)
        torch.save(x, inputs)
        common = ["--input", inputs, "--preprocess", "none", "--method", "integrated_gradients", "--steps", "16",
                  "--target", TARGET]
        results = {}
        for path in (scripted, exported):
            maps, metrics = self.dir / f"{path.suffix[1:]}.npz", self.dir / f"{path.suffix[1:]}.json"
            done = self.run_cli("attribute", path, *common, "--out", maps)
            self.run_cli("evaluate", path, *common, "--metric", "deletion", "--out", metrics)
            results[path.suffix] = (np.load(maps)["integrated_gradients"], json.loads(metrics.read_text()))
        self.assertIn("4 input(s) at a time", done.stdout)
        np.testing.assert_allclose(results[".pt2"][0], results[".pt"][0], rtol=1e-4, atol=1e-6)
        deletion = [r[1]["methods"]["integrated_gradients"]["deletion"]["per_image"] for r in results.values()]
        np.testing.assert_allclose(deletion[1], deletion[0], rtol=1e-4, atol=1e-6)

    def test_the_tree_and_the_dynamic_batch_are_shown(self):
        _, path = self.export("tuple_out", TupleOut(), size=16)
        shown = self.run_cli("inspect", path).stdout
        self.assertIn("torch.export program", shown)
        self.assertRegex(shown, r"x: float32\[s\d+, 3, 16, 16\]")
        self.assertRegex(shown, r"s\d+ in \[1, 64\]")
        rows = {line.split()[0]: line for line in shown.splitlines() if line and not line.startswith(" ")}
        self.assertRegex(rows["fc"], r"\bLinear\b.*\b2x\b")
        self.assertRegex(rows["act"], r"\bReLU\b.*\b2x\b")
        self.assertRegex(rows["conv"], r"\bConv2d\b.*\b1x\b")
        self.assertIn("skip: no node of the exported program ran in it", shown)


class BadExportedPrograms(ExportedCase):
    """A damaged or unsupported .pt2 gets a message naming what is wrong, never a crash."""

    def setUp(self):
        super().setUp()
        _, self.good = self.export("small", Small(), size=16)
        self.x = self.dir / "x.pt"
        torch.save(torch.randn(2, 3, 16, 16), self.x)

    def rewrite(self, change):
        """A copy of the good archive with change(name, bytes) -> bytes or None (left out)."""
        path = self.dir / "bad.pt2"
        with zipfile.ZipFile(self.good) as source, zipfile.ZipFile(path, "w") as target:
            for info in source.infolist():
                data = change(info.filename, source.read(info.filename))
                if data is not None:
                    target.writestr(info, data)
        return path

    def refused(self, path, says, *extra):
        result = cli("run", path, "--input", self.x, "--preprocess", "none", "--out", self.dir / "o.pt", *extra)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(says, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        print(f"refused: {result.stderr.strip()[:300]}")

    def model_json(self, edit):
        return self.rewrite(lambda n, d: edit(d.decode()).encode() if n.endswith("models/model.json") else d)

    def test_cut_short(self):
        path = self.dir / "short.pt2"
        data = self.good.read_bytes()
        path.write_bytes(data[:len(data) // 2])
        self.refused(path, "truncated or damaged")

    def test_wrong_json(self):
        self.refused(self.model_json(lambda t: "{" + t[:100]), "is not valid JSON")
        self.refused(self.model_json(lambda t: '{"schema_version": {"major": 8, "minor": 0}, "graph_module": {}}'),
                     "does not follow the export schema")

    def test_other_schema_version(self):
        self.refused(self.model_json(lambda t: re.sub(r'"major": \d+', '"major": 99', t)), "schema version 99.")

    def test_a_region_under_autocast_on(self):
        class LowerPrecision(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(16, 4)

            def forward(self, x):
                with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                    return self.lin(x.mean((1, 2)))
        _, path = self.export("autocast_on", LowerPrecision(), size=16)
        self.refused(path, "runs its region under torch.autocast on 'cpu', in a lower precision")

    def test_unknown_operator(self):
        def renamed(operator):
            return self.model_json(lambda t: t.replace("torch.ops.aten.relu.default", operator))
        self.refused(renamed("torch.ops.aten.relu_x9.default"), "aten::relu_x9 is unknown to this TorchScope's LibTorch")
        self.refused(renamed("torch.ops.mylib.fancy.default"), "--ops-library")

    def test_missing_or_short_weight(self):
        self.refused(self.rewrite(lambda n, d: None if n.endswith("data/weights/weight_0") else d),
                     "lacks the record")
        self.refused(self.rewrite(lambda n, d: d[:8] if n.endswith("data/weights/weight_0") else d),
                     "damaged or cut short")
        huge = re.compile(rb'"sizes": \[\{"as_int": \d+\}')
        self.refused(self.rewrite(lambda n, d: huge.sub(b'"sizes": [{"as_int": 4611686018427387904}', d, count=1)
                                  if n.endswith("weights_config.json") else d), "too large for any tensor")

    def test_a_record_claiming_gigabytes(self):
        # The byteorder record's local and central headers say 4 GB: refused without allocating them.
        data = bytearray(self.good.read_bytes())
        name = next(n for n in zipfile.ZipFile(self.good).namelist() if n.endswith("/byteorder")).encode()
        for signature, size_at, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
            start = 0
            while (start := data.find(signature, start)) >= 0:
                if data[start + name_at:start + name_at + len(name)] == name:
                    data[start + size_at:start + size_at + 4] = (0xFFFFFFF2).to_bytes(4, "little")
                start += 4
        path = self.dir / "claims.pt2"
        path.write_bytes(bytes(data))
        self.refused(path, "more than the file")
        # The CLI's peak memory, alone in a fresh process: far below the 4 GB the header claims.
        measure = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
                   "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        peak = subprocess.run([sys.executable, "-c", measure, CLI, "inspect", path], capture_output=True, text=True,
                              timeout=TIMEOUT)
        peak_mib = int(peak.stdout) / 1024
        print(f"peak memory opening it: {peak_mib:.0f} MiB")
        self.assertLess(peak_mib, 2048)

    def test_inputs_outside_the_exported_shapes(self):
        torch.save(torch.randn(2, 3, 20, 20), self.x)
        self.refused(self.good, "fixed at 16")
        torch.save(torch.randn(2, 3, 16), self.x)
        self.refused(self.good, "has 3 dimensions")
        torch.save(torch.randn(65, 3, 16, 16), self.x)
        self.refused(self.good, "outside the range")


if __name__ == "__main__":
    unittest.main()
