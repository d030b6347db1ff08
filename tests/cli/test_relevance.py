"""LRP through torchscope-cli (`attribute --method lrp`), against Zennit on the eager model with the
same weights, and against numbers worked out by hand.

Zennit's composites run with their canonizers (batch norm merged into the convolution before it;
ResNet's residual sums given the norm rule), seeded with one-hot × logit, so that its input relevance
is the logit's, as TorchScope's. Models: VGG-11 with batch norm (scripted) and ResNet-18 (scripted
and as a torch.export program), random weights and batch-norm statistics, on a batch of 2 colour
inputs 48 × 64 (height ≠ width)."""

import os
import pathlib
import subprocess
import tempfile
import unittest
import warnings

import numpy as np
import torch
import torch.nn as nn
import torchvision

import zennit05  # noqa: F401  (Zennit 0.5.1 first on the path)
from comparisons import relative_diff
from relevance_models import Element, TwoHeads, randomised_norms

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

from zennit.attribution import Gradient  # noqa: E402
from zennit.canonizers import SequentialMergeBatchNorm  # noqa: E402
from zennit.composites import (EpsilonAlpha2Beta1, EpsilonAlpha2Beta1Flat, EpsilonGammaBox,  # noqa: E402
                               EpsilonPlus, EpsilonPlusFlat)
from zennit.torchvision import ResNetCanonizer  # noqa: E402

CLI = os.environ["TORCHSCOPE_CLI"]
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
TIMEOUT = 900  # the sanitized CLI is several times slower
# Beyond twice Zennit's own float32 error (see check): float32 on both sides, the same operations in
# another order. Measured on VGG-11: below 2e-5 of the map's maximum.
RELATIVE_TOLERANCE = 2e-5
# Two float32 computations of one ill-conditioned value: where ε and γ divide by outputs near zero,
# each side's rounding is amplified at its own pixels. Measured TorchScope / Zennit error ratios
# (both against Zennit in float64): 0.26 to 3.5 over VGG-11 and ResNet-18, five composites.
ROUNDING_FACTOR = 4
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # --preprocess imagenet: zbox's bounds

torch.set_num_threads(int(THREADS))


def cli(*args):
    return subprocess.run([CLI, *map(str, args), "--device", "cpu", "--threads", THREADS], capture_output=True,
                          text=True, timeout=TIMEOUT)


def bounds():
    low = torch.tensor([(0 - m) / s for m, s in zip(MEAN, STD)]).view(1, 3, 1, 1)
    high = torch.tensor([(1 - m) / s for m, s in zip(MEAN, STD)]).view(1, 3, 1, 1)
    return low, high


COMPOSITES = {
    "epsilon_plus_flat": lambda canonizers: EpsilonPlusFlat(canonizers=canonizers),
    "epsilon_plus": lambda canonizers: EpsilonPlus(canonizers=canonizers),
    "epsilon_alpha2_beta1": lambda canonizers: EpsilonAlpha2Beta1(canonizers=canonizers),
    "epsilon_alpha2_beta1_flat": lambda canonizers: EpsilonAlpha2Beta1Flat(canonizers=canonizers),
    "epsilon_gamma_box": lambda canonizers: EpsilonGammaBox(*bounds(), canonizers=canonizers),
}


def zennit_relevance(model, x, composite, canonizers):
    with torch.no_grad():
        logits = model(x)
    target = logits.argmax(1)
    seed = torch.zeros_like(logits)
    seed[torch.arange(len(x)), target] = logits[torch.arange(len(x)), target]
    with Gradient(model=model, composite=COMPOSITES[composite](canonizers)) as attributor:
        _, relevance = attributor(x.clone(), seed)
    return relevance, target, logits[torch.arange(len(x)), target]


class ZennitCase(unittest.TestCase):
    """Against Zennit on torchvision's models, a batch of 2 inputs 48 x 64 in a folder of the class's own."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        torch.manual_seed(0)
        cls.x = torch.randn(2, 3, 48, 64)
        torch.save(cls.x, cls.dir / "x.pt")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def attribute(self, model_file, composite, *extra):
        out = self.dir / f"{pathlib.Path(model_file).stem}_{composite}.npz"
        done = cli("attribute", model_file, "--input", self.dir / "x.pt", "--method", "lrp", "--composite",
                   composite, "--preprocess", "imagenet", *extra, "--out", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        return np.load(out), done

    def check(self, model, model_file, canonizers, composites):
        """TorchScope's float32 relevance is about as close to Zennit's float64 relevance (the exact
        value of the same definition) as Zennit's own float32 is: ε and γ divide by layer outputs near
        zero, where float32 rounding grows (on ResNet-18 with random statistics Zennit's float32 is
        up to 1 % of the map's maximum from its float64), so a fixed tolerance against Zennit's
        float32 would measure rounding, not the definition."""
        exact_model = __import__("copy").deepcopy(model).double()
        for composite in composites:
            with self.subTest(model=pathlib.Path(model_file).name, composite=composite):
                expected, target, logit = zennit_relevance(model, self.x, composite, canonizers)
                exact, _, _ = zennit_relevance(exact_model, self.x.double(), composite, canonizers)
                got, _ = self.attribute(model_file, composite)
                self.assertEqual(got["targets"].tolist(), target.tolist())
                self.assertEqual(got["lrp"].shape, (2, 3, 48, 64))
                ours = relative_diff(torch.from_numpy(got["lrp"]), exact)
                zennits = relative_diff(expected, exact)
                self.assertLessEqual(ours, ROUNDING_FACTOR * zennits + RELATIVE_TOLERANCE,
                                     f"TorchScope is {ours:.2e} from Zennit in float64, Zennit's float32 {zennits:.2e}")
                np.testing.assert_allclose(got["lrp:logit"], logit.double().numpy(), rtol=1e-5)
                # The readout is the map's sum (the map itself is held to Zennit above).
                np.testing.assert_allclose(got["lrp:relevance_sum"], got["lrp"].astype(np.float64).sum((1, 2, 3)),
                                           rtol=1e-4)


class RelevanceVggComposites(ZennitCase):
    def test_vgg_with_batch_norm_every_composite(self):
        model = randomised_norms(torchvision.models.vgg11_bn(num_classes=10))
        path = self.dir / "vgg11_bn.pt"
        torch.jit.save(torch.jit.script(model), path)
        self.check(model, path, [SequentialMergeBatchNorm()], list(COMPOSITES))
        # The coverage: every convolution with its batch norm merged, the first flat.
        _, done = self.attribute(path, "epsilon_plus_flat")
        self.assertIn("features.0 conv2d + batch_norm features.1 merged: flat", done.stdout)
        self.assertIn("features.4 conv2d + batch_norm features.5 merged: zplus", done.stdout)
        self.assertIn("classifier.6 linear: epsilon:1e-06", done.stdout)
        self.assertNotIn("no rule for", done.stderr)


class RelevanceResnet(ZennitCase):
    def test_resnet_residual_sums_scripted_and_exported(self):
        model = randomised_norms(torchvision.models.resnet18(num_classes=10))
        scripted = self.dir / "resnet18.pt"
        torch.jit.save(torch.jit.script(model), scripted)
        exported = self.dir / "resnet18.pt2"
        batch = torch.export.Dim("batch", min=1, max=64)
        torch.export.save(torch.export.export(model, (self.x,), dynamic_shapes=({0: batch},)), exported)
        composites = ["epsilon_plus_flat", "epsilon_gamma_box", "epsilon_alpha2_beta1"]
        self.check(model, scripted, [ResNetCanonizer()], composites)
        self.check(model, exported, [ResNetCanonizer()], composites[:1])  # the same rewrite on another graph


class RelevanceVggSettings(ZennitCase):
    def test_zennit_leaves_a_factor_per_merged_norm(self):
        """With batch norm's default eps, Zennit's canonizer computes another function: each merged
        batch norm stays in the model as running_var = 1, so it divides by √(1 + 1e-5) (an ε-rule
        relevance and the forward carry 1 − 5e-6 per batch norm). TorchScope removes the batch norm
        it merges; the logit it explains is the model's."""
        model = randomised_norms(torchvision.models.vgg11_bn(num_classes=10))
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.eps = 1e-5
        path = self.dir / "vgg11_bn_eps.pt"
        torch.jit.save(torch.jit.script(model), path)
        with torch.no_grad():
            logits = model(self.x)
            with Gradient(model=model, composite=EpsilonPlusFlat(canonizers=[SequentialMergeBatchNorm()])):
                norm = model.features[1]
                ones = torch.ones(1, norm.num_features, 2, 2)
                left = norm(ones)
        self.assertAlmostEqual(left.mean().item(), (1 + 1e-5) ** -0.5, delta=1e-6)  # float32's √
        self.assertLess(left.mean().item(), 1 - 4e-6)  # not the identity
        target = logits.argmax(1)
        explained = logits[torch.arange(2), target].double()
        got, _ = self.attribute(path, "epsilon_plus_flat")
        ours = torch.from_numpy(got["lrp:logit"])
        self.assertLess(((ours - explained).abs() / explained.abs()).max().item(), 1e-5)

    def test_a_rule_per_layer(self):
        """--rule PATH=RULE: ε = 0.25 on the classifier's layers, γ = 0.1 in features.8, as Zennit's
        NameMapComposite gives them over the composite's other rules."""
        from zennit.core import Composite
        from zennit.rules import Epsilon, Gamma
        model = randomised_norms(torchvision.models.vgg11_bn(num_classes=10))
        path = self.dir / "vgg11_bn_rules.pt"
        torch.jit.save(torch.jit.script(model), path)
        with torch.no_grad():
            logits = model(self.x)
        target = logits.argmax(1)
        seed = torch.zeros_like(logits)
        seed[torch.arange(2), target] = logits[torch.arange(2), target]
        base = EpsilonPlusFlat()

        def rules(ctx, name, module):
            if name in ("classifier.0", "classifier.3", "classifier.6"):
                return Epsilon(0.25)
            if name == "features.8":
                return Gamma(0.1)
            return base.module_map(ctx, name, module)

        composite = Composite(module_map=rules, canonizers=[SequentialMergeBatchNorm()])
        with Gradient(model=model, composite=composite) as attributor:
            _, expected = attributor(self.x.clone(), seed)
        got, done = self.attribute(path, "epsilon_plus_flat", "--rule", "classifier.*=epsilon:0.25",
                                   "--rule", "features.8=gamma:0.1")
        self.assertIn("features.8 conv2d + batch_norm features.9 merged: gamma:0.1", done.stdout)
        self.assertLess(relative_diff(torch.from_numpy(got["lrp"]), expected), 2e-4)


class Normalised(nn.Module):
    """A model that normalises its input inside forward, as many researchers' models do: pixels in [0, 1]
    to 0..255 first, then the mean and std of 0..255 (three ops before the first layer, so that the sum
    follows another of them)."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1) * 255)
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1) * 255)

    def normalise(self, x):
        return (x * 255.0 - self.mean) / self.std

    def forward(self, x):
        return self.net(self.normalise(x))


def face_expression_twin(scripted):
    """The bundled face-expression net as an eager model for Zennit: scripts/convert_face_expression.py's
    classes with the scripted file's weights, each residual sum a zennit.layer.Sum (Zennit gives a module
    Sum the norm rule, as TorchScope gives the graph's sums; a functional `+` it would pass by its plain
    gradient), and without its Normalize (Zennit is given the normalised input: its first layer's)."""
    import importlib.util
    from zennit.layer import Sum
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("convert_face_expression", root / "scripts/convert_face_expression.py")
    face = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(face)

    class SummedBlock(face.DenseBlock):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.sums = nn.ModuleList(Sum() for _ in range(6))

        def add(self, k, a, b):
            return self.sums[k](torch.stack([a, b], dim=-1))

        def forward(self, x):
            out1 = torch.relu(self.conv0(x))
            out2 = self.conv1(out1)
            out3 = self.conv2(torch.relu(self.add(0, out1, out2)))
            out4 = self.conv3(torch.relu(self.add(1, out1, self.add(2, out2, out3))))
            return torch.relu(self.add(3, out1, self.add(4, out2, self.add(5, out3, out4))))

    face.DenseBlock = SummedBlock
    model = face.FaceExpressionNet()
    missing, unexpected = model.load_state_dict(scripted.state_dict(), strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    mean = model.normalize.mean.clone()
    model.normalize = nn.Identity()
    return model.eval(), mean


class InModelPreprocessingCase(unittest.TestCase):
    """LRP's rules start at the first layer: what the model does to its input before it ((x − mean) / std,
    a rescaling) passes relevance on as it is. It used to take the norm rule, which multiplied each
    pixel's relevance by x / (x − mean): signs flipped below the mean, values exploded near it (the
    bundled demo's input relevance summed to −50.6 of a logit 9.66). The oracle: Zennit on the eager
    model without the normalisation, given the normalised input."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def lrp(self, model_file, x, composite, *extra):
        torch.save(x, self.dir / "x.pt")
        out = self.dir / f"{pathlib.Path(model_file).stem}_{composite}.npz"
        done = cli("attribute", model_file, "--input", self.dir / "x.pt", "--method", "lrp", "--composite",
                   composite, *extra, "--out", out)
        return (np.load(out) if done.returncode == 0 else None), done

    def assertLikeZennit(self, got, inner, normalised, composite, canonizers):
        expected, target, logit = zennit_relevance(inner, normalised, composite, canonizers)
        exact, _, _ = zennit_relevance(__import__("copy").deepcopy(inner).double(), normalised.double(), composite,
                                       canonizers)
        self.assertEqual(got["targets"].tolist(), target.tolist())
        ours = relative_diff(torch.from_numpy(got["lrp"]), exact)
        zennits = relative_diff(expected, exact)
        self.assertLessEqual(ours, ROUNDING_FACTOR * zennits + RELATIVE_TOLERANCE,
                             f"TorchScope is {ours:.2e} from Zennit in float64, Zennit's float32 {zennits:.2e}")
        # The eager twin adds its sums by torch.sum over a stacked pair: another order, float32's last bits.
        np.testing.assert_allclose(got["lrp:logit"], logit.double().numpy(), rtol=1e-5,
                                   atol=1e-6 * float(logit.abs().max()))
        # The sum is Zennit's (what its rules conserve; with biases not the logit), not a multiple of it: as
        # close to Zennit's float64 sum as Zennit's own float32 sum is, by the same factor as the map.
        exact_sum = exact.sum((1, 2, 3)).numpy()
        zennits_error = np.abs(expected.double().sum((1, 2, 3)).numpy() - exact_sum)
        np.testing.assert_array_less(np.abs(got["lrp:relevance_sum"] - exact_sum),
                                     ROUNDING_FACTOR * zennits_error + 1e-4 * float(logit.abs().max()))


class RelevanceThroughInModelPreprocessing(InModelPreprocessingCase):
    def test_normalisation_inside_forward_scripted_and_exported(self):
        inner = randomised_norms(torchvision.models.vgg11_bn(num_classes=10))
        model = Normalised(inner).eval()
        torch.manual_seed(1)
        x = torch.rand(2, 3, 48, 64)  # pixels in [0, 1], normalised by the model
        normalised = model.normalise(x)
        scripted = self.dir / "normalised.pt"
        torch.jit.save(torch.jit.script(model), scripted)
        exported = self.dir / "normalised.pt2"
        batch = torch.export.Dim("batch", min=1, max=64)
        torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), exported)
        for path, composites in ((scripted, ("epsilon_plus_flat", "epsilon_alpha2_beta1")),
                                 (exported, ("epsilon_plus_flat",))):
            for composite in composites:
                with self.subTest(model=path.name, composite=composite):
                    got, done = self.lrp(path, x, composite)
                    self.assertEqual(done.returncode, 0, done.stderr)
                    self.assertLikeZennit(got, inner, normalised, composite, [SequentialMergeBatchNorm()])
                    for op in ("mul", "sub", "div"):
                        self.assertIn(f" {op}: pass (before the first layer)", done.stdout)
                    self.assertNotIn("warning", done.stderr)
        # zbox's bounds come from the input setup, which this model's own normalisation changes: refused.
        _, done = self.lrp(scripted, x, "epsilon_gamma_box", "--preprocess", "imagenet")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("transforms its input first", done.stderr)


class RelevanceOfTheBundledFaceNet(InModelPreprocessingCase):
    def test_the_bundled_face_expression_net_against_zennit(self):
        from PIL import Image
        import torchvision.transforms.functional as TF
        root = pathlib.Path(__file__).resolve().parents[2]
        path = root / "resources/face/face_expression.pt"
        model, mean = face_expression_twin(torch.jit.load(str(path)))
        photos = [root / "resources/face/photos" / name for name in ("astronaut_face.png", "cameraman_face.png")]
        x = torch.stack([TF.resize(TF.to_tensor(Image.open(p).convert("RGB")), [112, 112], antialias=True)
                         for p in photos]) * 255
        got, done = self.lrp(path, x, "epsilon_plus_flat")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertLikeZennit(got, model, (x - mean) / 255.0, "epsilon_plus_flat", [])
        self.assertIn("normalize sub: pass (before the first layer)", done.stdout)
        self.assertIn("normalize div: pass (before the first layer)", done.stdout)
        self.assertNotIn("warning", done.stderr)
        # A rule on the normalisation's module is applied, not accepted silently: its plain gradient
        # divides the relevance by 255.
        gradient, done = self.lrp(path, x, "epsilon_plus_flat", "--rule", "normalize=gradient")
        self.assertEqual(done.returncode, 0, done.stderr)
        np.testing.assert_allclose(gradient["lrp"] * 255.0, got["lrp"], rtol=1e-4,
                                   atol=1e-6 * float(np.abs(got["lrp"]).max()))
        # The norm rule there is the old definition (each pixel's relevance times x / (x − mean)): far from
        # the logit, and said so.
        _, done = self.lrp(path, x, "epsilon_plus_flat", "--rule", "normalize=norm")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("warning: image 0: the input relevance sums to", done.stderr)
        # A layer's rule on it is refused, naming the op.
        _, done = self.lrp(path, x, "epsilon_plus_flat", "--rule", "normalize=zplus")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("relevance rule 'zplus' at 'normalize'", done.stderr)
        self.assertIn("element-wise op", done.stderr)
        # A rule for a module with no op a rule applies to (SamePad only pads) would change nothing: refused.
        _, done = self.lrp(path, x, "epsilon_plus_flat", "--rule", "features.dense0.conv0.pad=flat")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("would change nothing", done.stderr)


class TwoLayers(nn.Module):
    """A hand-built network: relevance worked out by hand (docs/attribution.md)."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(2, 2, bias=False)
        self.second = nn.Linear(2, 1, bias=False)
        self.first.weight.data = torch.tensor([[1.0, 2.0], [-1.0, 1.0]])
        self.second.weight.data = torch.tensor([[1.0, 1.0]])

    def forward(self, x):
        return self.second(torch.relu(self.first(x.flatten(1))))


class GatedConv(nn.Module):
    """A convolution gated by its own pooled sigmoid (squeeze-and-excitation): no rule takes the product."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        y = y * torch.sigmoid(y.mean((2, 3), keepdim=True))
        return self.head(y.mean((2, 3)))


class Cubes(nn.Module):
    """y³ between two layers: no rule takes it, so its plain gradient (3y², y large) multiplies the relevance."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 3)
        with torch.no_grad():
            self.conv.weight.mul_(20)

    def forward(self, x):
        y = self.conv(x)
        return self.head((y * y * y).mean((2, 3)))


class RelevanceByHand(unittest.TestCase):
    def test_two_layers_conserve_the_logit(self):
        """x = (1, 2): z₁ = (5, 1), after the ReLU (5, 1), y = 6. LRP-0 gives R₁ = (5/6·6, 1/6·6) = (5, 1)
        and R_x = (1·1/5·5 − 1·1/1·1, 2·2/5·5 + 2·1/1·1) = (0, 6): the input's relevance sums to the
        logit, 6."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            torch.jit.save(torch.jit.script(TwoLayers().eval()), tmp / "two.pt")
            torch.save(torch.tensor([1.0, 2.0]).view(1, 2, 1, 1), tmp / "x.pt")
            done = cli("attribute", tmp / "two.pt", "--input", tmp / "x.pt", "--method", "lrp", "--composite",
                       "epsilon", "--rule", "type:Linear=epsilon:0", "--out", tmp / "r.npz")
            self.assertEqual(done.returncode, 0, done.stderr)
            got = np.load(tmp / "r.npz")
            np.testing.assert_allclose(got["lrp"].reshape(-1), [0.0, 6.0], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(got["lrp:logit"], [6.0], rtol=1e-6)
            np.testing.assert_allclose(got["lrp:relevance_sum"], [6.0], rtol=1e-6)
            self.assertNotIn("far from the logit", done.stderr)

    def test_a_tuple_models_scores_element_is_explained(self):
        """--scores 1 explains the second head's logit (--target 2, named by --labels); by default the first
        [N, C >= 2] element's predicted class: each against Zennit on that element of the eager model."""
        model = TwoHeads().eval()
        generator = torch.Generator().manual_seed(4)
        x = torch.rand(2, 3, 10, 14, generator=generator)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            torch.jit.save(torch.jit.script(model), tmp / "two_heads.pt")
            torch.save(x, tmp / "x.pt")
            (tmp / "names.txt").write_text("cat\ndog\nfox\nowl\n")
            common = ["attribute", tmp / "two_heads.pt", "--input", tmp / "x.pt", "--method", "lrp", "--composite",
                      "epsilon_plus"]
            for element, extra in ((1, ["--scores", "1", "--target", "2", "--labels", tmp / "names.txt"]), (0, [])):
                with self.subTest(element=element):
                    done = cli(*common, *extra, "--out", tmp / f"r{element}.npz")
                    self.assertEqual(done.returncode, 0, done.stderr)
                    got = np.load(tmp / f"r{element}.npz")
                    head = Element(model, element)
                    with torch.no_grad():
                        logits = head(x)
                    target = torch.full((2,), 2) if element == 1 else logits.argmax(1)
                    seed = torch.zeros_like(logits)
                    seed[torch.arange(2), target] = logits[torch.arange(2), target]
                    with Gradient(model=head, composite=EpsilonPlus()) as attributor:
                        _, expected = attributor(x.clone(), seed)
                    self.assertLessEqual(relative_diff(torch.from_numpy(got["lrp"]), expected), RELATIVE_TOLERANCE)
                    np.testing.assert_allclose(got["lrp:logit"], logits[torch.arange(2), target].numpy(), rtol=1e-5)
                    if element == 1:
                        self.assertIn("fox", done.stdout)

    def test_a_sum_far_from_the_logit_is_warned_of(self):
        """An image whose input relevance sums to more than twice the logit's size away from it is named in a
        warning, with its sum and logit as the file holds them; a conserving model warns of none."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            torch.jit.save(torch.jit.script(Cubes().eval()), tmp / "cubes.pt")
            torch.manual_seed(1)
            torch.save(torch.rand(2, 3, 12, 20), tmp / "x.pt")
            done = cli("attribute", tmp / "cubes.pt", "--input", tmp / "x.pt", "--method", "lrp", "--out", tmp / "r.npz")
            self.assertEqual(done.returncode, 0, done.stderr)
            got = np.load(tmp / "r.npz")
            sums, logits = got["lrp:relevance_sum"], got["lrp:logit"]
            np.testing.assert_allclose(sums, got["lrp"].astype(np.float64).sum((1, 2, 3)), rtol=1e-4)
            far = np.abs(sums - logits) > 2 * np.abs(logits)
            self.assertTrue(far.all(), f"sums {sums}, logits {logits}: the model was meant not to conserve")
            for i in range(2):
                self.assertIn(f"image {i}: the input relevance sums to {sums[i]:.6g}, far from the logit "
                              f"{logits[i]:.6g} it explains", done.stderr)

    def test_what_no_rule_covers_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            torch.jit.save(torch.jit.script(GatedConv().eval()), tmp / "gated.pt")
            torch.save(torch.randn(2, 3, 12, 20), tmp / "x.pt")
            done = cli("attribute", tmp / "gated.pt", "--input", tmp / "x.pt", "--method", "lrp", "--out",
                       tmp / "r.npz")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("no rule for aten::mul in the model's forward (1 node): its plain gradient", done.stderr)
            self.assertIn("conv conv2d: flat", done.stdout)

    def test_wrong_rules_say_what_is_wrong(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            torch.jit.save(torch.jit.script(GatedConv().eval()), tmp / "gated.pt")
            torch.save(torch.randn(1, 3, 12, 20), tmp / "x.pt")
            common = ["attribute", tmp / "gated.pt", "--input", tmp / "x.pt", "--method", "lrp", "--out", tmp / "r.npz"]
            cases = {("--rule", "conv=gama"): "unknown relevance rule 'gama'",
                     ("--rule", "conv=pass"): "relevance rule 'pass' at 'conv'",
                     ("--rule", "nowhere=flat"): "nowhere",
                     ("--composite", "epsilon_plus_flatt"): "epsilon_plus_flatt",
                     ("--rule", "conv=alphabeta:3:1"): "alpha - beta = 1"}
            for extra, message in cases.items():
                with self.subTest(extra=extra):
                    done = cli(*common, *extra)
                    self.assertNotEqual(done.returncode, 0)
                    self.assertIn(message, done.stderr)
                    self.assertFalse((tmp / "r.npz").exists())


if __name__ == "__main__":
    unittest.main()
