"""Concept Relevance Propagation through torchscope-cli (`crp`), against zennit-crp on the eager model
with the same weights: its CondAttribution for each channel's relevance, share and conditional map,
its FeatureVisualization for the RelMax and ActMax references over a folder.

zennit-crp 0.6 runs on Zennit 0.4 (this environment's default Zennit): epsilon_plus_flat with the
canonizers (batch norm merged into the convolution before it, ResNet's residual sums by the norm
rule), seeded with one-hot × logit as TorchScope. Models: ResNet-18 (scripted, and as a
torch.export program) at a block's output, VGG-11 with batch norm at a ReLU; random weights and
batch-norm statistics; colour images 48 × 64 (height ≠ width), two explained at once."""

import json
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
from PIL import Image

from comparisons import relative_diff
from relevance_models import Element, TwoHeads, randomised_norms

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

from crp.attribution import CondAttribution  # noqa: E402
from crp.concepts import ChannelConcept  # noqa: E402
from crp.helper import load_maximization  # noqa: E402
from crp.visualization import FeatureVisualization  # noqa: E402
from zennit.canonizers import SequentialMergeBatchNorm  # noqa: E402
from zennit.composites import EpsilonPlusFlat  # noqa: E402
from zennit.torchvision import ResNetCanonizer  # noqa: E402

CLI = os.environ["TORCHSCOPE_CLI"]
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
TIMEOUT = 900  # the sanitized CLI is several times slower
# As test_relevance: TorchScope's float32 is held to zennit-crp's float64 (the exact value of the same
# definition) within ROUNDING_FACTOR times zennit-crp's own float32 error, plus RELATIVE_TOLERANCE of
# the largest value.
RELATIVE_TOLERANCE = 2e-5
ROUNDING_FACTOR = 4
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
HEIGHT, WIDTH = 48, 64

torch.set_num_threads(int(THREADS))


def cli(*args):
    return subprocess.run([CLI, *map(str, args), "--device", "cpu", "--threads", THREADS], capture_output=True,
                          text=True, timeout=TIMEOUT)


def load(path):
    """An image as TorchScope's --preprocess file gives it: RGB in [0, 1], ImageNet's mean and std."""
    pixels = torch.from_numpy(np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0)
    return ((pixels.permute(2, 0, 1) - torch.tensor(MEAN).view(3, 1, 1)) / torch.tensor(STD).view(3, 1, 1))


class Oracle:
    """zennit-crp on a model, in float32 and float64."""

    def __init__(self, model, canonizers, layer):
        self.models = {torch.float32: model, torch.float64: __import__("copy").deepcopy(model).double()}
        self.canonizers, self.layer = canonizers, layer

    def composite(self):
        return EpsilonPlusFlat(canonizers=self.canonizers)

    def explain(self, x, target, channels, dtype):
        """Shares [C], the whole heat map [H, W] and each channel's conditional map [K, H, W]."""
        attribution = CondAttribution(self.models[dtype], no_param_grad=True)
        data = x.unsqueeze(0).to(dtype).requires_grad_(True)
        whole = attribution(data, [{"y": [target]}], self.composite(), record_layer=[self.layer])
        shares = ChannelConcept().attribute(whole.relevances[self.layer], abs_norm=True)[0]
        relevance = ChannelConcept().attribute(whole.relevances[self.layer], abs_norm=False)[0]
        data = x.unsqueeze(0).to(dtype).requires_grad_(True)
        conditions = [{"y": [target], self.layer: [c]} for c in channels]
        conditional = attribution(data, conditions, self.composite())
        return shares, relevance, whole.heatmap[0], conditional.heatmap


class CrpCase(unittest.TestCase):
    """Two colour images 48 x 64 and a folder of references in two class folders, the class's own."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        rng = np.random.default_rng(0)
        cls.images = []
        for i in range(2):
            path = cls.dir / f"image{i}.png"
            Image.fromarray(rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)).save(path)
            cls.images.append(path)
        cls.folder = cls.dir / "references"
        cls.reference_files = []
        for i in range(8):  # two class folders: labels 0 and 1 in folder order
            path = cls.folder / ("a" if i < 4 else "b") / f"r{i}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)).save(path)
            cls.reference_files.append(path)
        cls.setup = cls.dir / "setup.json"
        cls.setup.write_text(json.dumps({"mean": MEAN, "std": STD}))
        cls.x = torch.stack([load(p) for p in cls.images])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def crp(self, model_file, layer, *extra, out="crp.npz"):
        out = self.dir / f"{pathlib.Path(model_file).stem}_{out}"
        done = cli("crp", model_file, *[a for p in self.images for a in ("--input", p)], "--layer", layer,
                   "--preprocess", self.setup, *extra, "--out", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        return (np.load(out) if out.suffix == ".npz" else json.loads(out.read_text())), done

    def check(self, model, model_file, canonizers, layer, k=4, extra=(), oracle_layer=None):
        """`oracle_layer`: the layer's name in `model` where it wraps the file's model."""
        got, done = self.crp(model_file, layer, "--channels", f"top:{k}", *extra)
        oracle = Oracle(model, canonizers, oracle_layer or layer)
        with torch.no_grad():
            predicted = model(self.x).argmax(1)
        self.assertEqual(got["targets"].tolist(), predicted.tolist())
        self.assertEqual(got["maps"].shape, (2, k, HEIGHT, WIDTH))
        for i in range(2):
            target = int(predicted[i])
            chosen = got["channels"][i].tolist()
            with self.subTest(model=pathlib.Path(model_file).name, image=i):
                exact = oracle.explain(self.x[i], target, chosen, torch.float64)
                single = oracle.explain(self.x[i], target, chosen, torch.float32)
                for name, ours, e, s in [("shares", got["shares"][i], exact[0], single[0]),
                                         ("relevance", got["relevance"][i], exact[1], single[1]),
                                         ("lrp", got["lrp"][i], exact[2], single[2]),
                                         ("maps", got["maps"][i], exact[3], single[3])]:
                    error, theirs = relative_diff(ours, e), relative_diff(s, e)
                    if os.environ.get("TORCHSCOPE_MEASURE"):
                        print(f"{pathlib.Path(model_file).name} image {i} {name}: {error:.2e} vs {theirs:.2e}")
                    self.assertLessEqual(error, ROUNDING_FACTOR * theirs + RELATIVE_TOLERANCE,
                                         f"{name}: TorchScope is {error:.2e} from zennit-crp in float64, "
                                         f"zennit-crp's float32 {theirs:.2e}")
                # The chosen channels are zennit-crp's most relevant, most relevant first.
                order = torch.argsort(exact[0], descending=True)
                self.assertEqual(chosen, order[:k].tolist())
                # Each conditional map carries its channel's relevance to the input (these rules
                # conserve but for the biases' share): the file's sums are the maps'.
                np.testing.assert_allclose(got["map_sums"][i], got["maps"][i].astype(np.float64).sum((1, 2)),
                                           rtol=1e-4, atol=1e-6 * abs(got["scores"][i]))
        return got, done


class CrpAgainstZennitCrp(CrpCase):
    def test_resnet_block_output_scripted_and_exported(self):
        model = randomised_norms(torchvision.models.resnet18(num_classes=10))
        scripted = self.dir / "resnet18.pt"
        torch.jit.save(torch.jit.script(model), scripted)
        self.check(model, scripted, [ResNetCanonizer()], "layer3")
        exported = self.dir / "resnet18.pt2"
        batch = torch.export.Dim("batch", min=1, max=64)
        torch.export.save(torch.export.export(model, (self.x,), dynamic_shapes=({0: batch},)), exported)
        self.check(model, exported, [ResNetCanonizer()], "layer3")


class CrpOnVgg(CrpCase):
    def test_vgg_at_an_activation_with_its_norm_merged(self):
        model = randomised_norms(torchvision.models.vgg11_bn(num_classes=10))
        path = self.dir / "vgg11_bn.pt"
        torch.jit.save(torch.jit.script(model), path)
        _, done = self.check(model, path, [SequentialMergeBatchNorm()], "features.10", k=3)
        self.assertNotIn("measured before the batch norm", done.stderr)
        # At the convolution itself, its batch norm cannot be merged: the warning says so and what to take.
        _, done = self.crp(path, "features.8", "--channels", "top:2", out="conv_bn.npz")
        self.assertIn("'features.8' is a convolution or linear layer measured before the batch norm", done.stderr)
        self.assertIn("aten::batch_norm in features.9", done.stderr)

    def test_a_convolution_an_in_place_relu_follows(self):
        """VGG-11's features.3 is read by ReLU(inplace=True): TorchScope measures the convolution's own
        output (the network goes on from a copy), and the ReLU passes relevance on unchanged, so the
        channels' relevance at the convolution is that at the ReLU, held to zennit-crp there."""
        torch.manual_seed(5)
        model = randomised_norms(torchvision.models.vgg11(num_classes=10))
        path = self.dir / "vgg11.pt"
        torch.jit.save(torch.jit.script(model), path)
        at_relu, _ = self.check(model, path, [], "features.4", k=2)
        at_conv, _ = self.crp(path, "features.3", "--channels", "top:2", out="conv.npz")
        np.testing.assert_allclose(at_conv["relevance"], at_relu["relevance"], rtol=1e-5,
                                   atol=1e-6 * np.abs(at_relu["relevance"]).max())
        np.testing.assert_array_equal(at_conv["channels"], at_relu["channels"])


class CrpChannelsAndReferences(CrpCase):
    def test_a_tuple_models_scores_element(self):
        """--scores 1 explains the second head's predicted class (named by --labels): zennit-crp on that
        element of the eager model (its pooling a module, as Zennit rules it)."""
        model = TwoHeads().eval()
        path = self.dir / "two_heads.pt"
        torch.jit.save(torch.jit.script(model), path)
        names = self.dir / "names.txt"
        names.write_text("cat\ndog\nfox\nowl\n")
        _, done = self.check(Element(model, 1), path, [], "features.2", k=3,
                             extra=("--scores", "1", "--labels", names), oracle_layer="model.features.2")
        with torch.no_grad():
            predicted = model(self.x)[1].argmax(1)
        for target in predicted.tolist():
            self.assertIn(["cat", "dog", "fox", "owl"][target], done.stdout)
        # Every setting that shapes the numbers is in the manifest, from the request's own parameters.
        settings = json.loads((self.dir / "two_heads_crp.manifest.json").read_text())["settings"]
        for key, value in {"scores": "1", "layer": "features.2", "target": "-1", "channels": "top:3",
                           "composite": "epsilon_plus_flat", "attention_rule": "cp", "rule": "", "top": "9",
                           "reference_by": "relevance", "memory_mb": "0"}.items():
            self.assertEqual(settings.get(key), value, key)

    def test_every_channel_adds_up_to_the_whole_map(self):
        """Relevance is linear in what starts the backward, so the conditional maps of all of a layer's
        channels sum to the image's whole map (what reaches the input through the layer)."""
        model = randomised_norms(torchvision.models.resnet18(num_classes=10))
        path = self.dir / "resnet18_all.pt"
        torch.jit.save(torch.jit.script(model), path)
        everything = ",".join(str(c) for c in range(64))
        got, _ = self.crp(path, "layer1", "--channels", everything, out="all.npz")
        self.assertEqual(got["channels"].shape, (2, 64))
        total = got["maps"].astype(np.float64).sum(1)
        error = np.abs(total - got["lrp"]).max() / np.abs(got["lrp"]).max()
        self.assertLess(error, 1e-5)
        # And the layer's relevance, channel by channel, is what the file says it is.
        np.testing.assert_allclose(got["layer_sums"], got["relevance"].sum(1), rtol=1e-9)

    def test_references_as_zennit_crp_finds_them(self):
        """RelMax (by each image's class folder) and ActMax over a folder: the same images in the same
        order, their values and the position where the channel peaks, as FeatureVisualization's."""
        model = randomised_norms(torchvision.models.resnet18(num_classes=10))
        path = self.dir / "resnet18_refs.pt"
        torch.jit.save(torch.jit.script(model), path)
        layer, channels, top = "layer2", [3, 17, 40], 5
        files = sorted(self.reference_files)
        labels = [0 if f.parent.name == "a" else 1 for f in files]
        dataset = [(load(f), label) for f, label in zip(files, labels)]
        attribution = CondAttribution(model, no_param_grad=True)
        visualization = FeatureVisualization(attribution, dataset, {layer: ChannelConcept()},
                                             path=str(self.dir / "fv"), device="cpu")
        with open(os.devnull, "w") as quiet, __import__("contextlib").redirect_stdout(quiet), \
                __import__("contextlib").redirect_stderr(quiet):
            visualization.run(EpsilonPlusFlat(canonizers=[ResNetCanonizer()]), 0, len(dataset), batch_size=4)
        for mode, folder in [("relevance", visualization.RelMax.PATH), ("activation", visualization.ActMax.PATH)]:
            with self.subTest(mode=mode):
                got, _ = self.crp(path, layer, "--channels", ",".join(map(str, channels)), "--references",
                                  self.folder, "--top", top, "--reference-by", mode, out=f"refs_{mode}.json")
                samples, values, peaks = load_maximization(folder, layer)
                self.assertEqual(got["reference_images"], len(files))
                for entry in got["references"]:
                    c = entry["channel"]
                    refs = entry["references"]
                    self.assertEqual(len(refs), top)
                    self.assertEqual([pathlib.Path(r["image"]).resolve() for r in refs],
                                     [files[int(s)].resolve() for s in samples[:top, c]])
                    np.testing.assert_allclose([r["value"] for r in refs], values[:top, c], rtol=1e-4, atol=1e-7)
                    self.assertEqual([r["position"] for r in refs], peaks[:top, c].tolist())
                    if mode == "relevance":
                        self.assertEqual([r["target"] for r in refs], [labels[int(s)] for s in samples[:top, c]])
                    for r in refs:  # layer2 of a 48 x 64 input is 6 x 8: each cell 8 pixels square
                        row, col = divmod(r["position"], 8)
                        self.assertEqual(r["box"], [col * 8, row * 8, col * 8 + 8, row * 8 + 8])

    def test_vision_transformer_tokens_have_their_channels_last(self):
        """A ViT block's output [N, T, D]: D channels, the tokens as positions. Every channel's map adds
        up to the whole map, and the whole map is attribute's lrp (held to LXT in
        test_relevance_transformers). torchvision's ViT is square; a batch of two colour images."""
        torch.manual_seed(3)
        model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                     hidden_dim=16, mlp_dim=32, num_classes=5).eval()
        nn.init.normal_(model.heads.head.weight, std=0.5)  # torchvision starts it at zero: every logit 0
        path = self.dir / "vit.pt"
        torch.jit.save(torch.jit.script(model), path)
        rng = np.random.default_rng(4)
        images = []
        for i in range(2):
            images.append(self.dir / f"square{i}.png")
            Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(images[-1])
        layer = "encoder.layers.encoder_layer_0"  # the first block: its tokens all carry relevance on
        # The default rules, then AttnLRP with ε and a γ on the linear layers (CRP's --attention-rule,
        # --composite and --rule away from their defaults): each the same rules as attribute's lrp.
        wholes = []
        for name, rules in (("default", []), ("attnlrp", ["--attention-rule", "attnlrp", "--composite", "epsilon",
                                                           "--rule", "type:Linear=gamma:0.05"])):
            with self.subTest(rules=name):
                out = self.dir / f"vit_{name}.json"
                done = cli("crp", path, "--input", images[0], "--input", images[1], "--layer", layer, "--channels",
                           ",".join(map(str, range(16))), "--preprocess", self.setup, *rules, "--out", out)
                self.assertEqual(done.returncode, 0, done.stderr)
                got = json.loads(out.read_text())
                self.assertTrue(got["tokens"])
                self.assertEqual(got["channel_count"], 16)
                self.assertEqual(got["layer_shape"], [17, 16])
                lrp = self.dir / f"vit_lrp_{name}.npz"
                done = cli("attribute", path, "--input", images[0], "--input", images[1], "--method", "lrp",
                           "--preprocess", self.setup, *rules, "--out", lrp)
                self.assertEqual(done.returncode, 0, done.stderr)
                whole = np.load(lrp)["lrp"].astype(np.float64).sum(1)
                wholes.append(whole)
                for i, image in enumerate(got["images"]):
                    ours = np.array(image["lrp"])
                    scale = np.abs(whole[i]).max()
                    self.assertLess(np.abs(ours - whole[i]).max() / scale, 1e-5)
                    total = sum(np.array(c["map"]) for c in image["channels"])
                    self.assertLess(np.abs(total - ours).max() / scale, 1e-5)
                    self.assertAlmostEqual(sum(abs(s) for s in image["shares"]), 1.0, places=6)
        self.assertGreater(np.abs(wholes[0] - wholes[1]).max(), 1e-3 * np.abs(wholes[0]).max())  # the rules differ

    def test_bad_requests_say_what_is_wrong(self):
        model = torchvision.models.resnet18(num_classes=10).eval()
        path = self.dir / "resnet18_plain.pt"
        torch.jit.save(torch.jit.script(model), path)
        out = self.dir / "never.npz"
        for extra, message in [(["--layer", "layer3", "--channels", "300"], "channel 300 is out of range: 'layer3' has 256"),
                               (["--layer", "layer3", "--channels", "top:x"], "top:K"),
                               (["--layer", "nowhere"], "nowhere"),
                               (["--layer", "layer3", "--target", "12"], "class 12 is out of range"),
                               # The request's own ranges and choices, refused before the model runs.
                               (["--layer", "layer3", "--top", "0"], "--top: Value 0 not in range 1 to 10000"),
                               (["--layer", "layer3", "--target", "-2"], "--target: Value -2 not in range"),
                               (["--layer", "layer3", "--reference-by", "gradient"], "--reference-by: gradient not in"),
                               (["--layer", "layer3", "--rule", "layer3"], "--rule"),
                               (["--channels", "top:2"], "--layer is required")]:
            with self.subTest(extra=extra):
                done = cli("crp", path, "--input", self.images[0], "--preprocess", self.setup, *extra, "--out", out)
                self.assertNotEqual(done.returncode, 0)
                self.assertIn(message, done.stderr)
                self.assertNotIn("Traceback", done.stderr)
                self.assertFalse(out.exists())


if __name__ == "__main__":
    unittest.main()
