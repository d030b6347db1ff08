"""LRP through vision transformers (`attribute --method lrp --attention-rule cp|attnlrp`), against
LXT 2.1 on the eager model with the same weights.

LXT's own definitions, in its Gradient × Input form (lxt.efficient): LayerNorm with its standard
deviation held fixed (layer_norm_forward), the identity rule on GELU (non_linear_forward),
attention as CP-LRP (queries and keys detached: cp_multi_head_attention_forward, LXT's patch of
torchvision's ViT) or AttnLRP (the uniform rule: q and k's gradients divided by 4, v's by 2, as its
wrap_attention_forward does before the attention function), and Zennit's γ-rule on linear layers
through LXT's monkey_patch_zennit (Zennit 0.5.1, beside the environment's 0.4.6: zennit-crp pins
that). LXT patches module classes; torchvision's ViT uses its own patch set (vit_torch.cp_LRP); timm's
ViT has none in LXT, so its attention is patched at F.scaled_dot_product_attention with the same
rule functions.

Models: torchvision's ViT-B/16 (scripted, 224 × 224), a small torchvision ViT as a torch.export
program with a dynamic batch, a small timm ViT on 32 × 48 inputs (height ≠ width) with fused
attention and with its explicit softmax, scripted and exported, and an attention written with
torch.einsum and a mask made from the logits' shape (MaxViT's and Swin's forms); random weights,
batch 2."""

import importlib
import os
import pathlib
import subprocess
import sys
import tempfile
import types
import unittest
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from comparisons import relative_diff

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

import zennit05  # noqa: E402,F401  (Zennit 0.5.1 first on the path)

# lxt.efficient's package and models/__init__ import its language-model files, which need
# `transformers`; the vision parts need only torch. Their modules are read without those inits.
import lxt  # noqa: E402

for package in ("lxt.efficient", "lxt.efficient.models"):
    stub = types.ModuleType(package)
    stub.__path__ = [os.path.join(os.path.dirname(lxt.__file__), *package.split(".")[1:])]
    sys.modules[package] = stub
patches = importlib.import_module("lxt.efficient.patches")
rules = importlib.import_module("lxt.efficient.rules")
zennit_patches = importlib.import_module("lxt.efficient.zennit_patches")
vit_torch = importlib.import_module("lxt.efficient.models.vit_torch")

import timm  # noqa: E402
import torchvision  # noqa: E402
from zennit.composites import LayerMapComposite  # noqa: E402
from zennit.rules import Gamma  # noqa: E402

CLI = os.environ["TORCHSCOPE_CLI"]
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
TIMEOUT = 1200  # the sanitized CLI is several times slower
# Both sides in float32 against LXT in float64 (the exact value of the definition): TorchScope may be
# this many times as far as LXT's own float32, plus this fraction of the map's maximum. Measured
# (TORCHSCOPE_MEASURE=1 prints them): ratios 0.79 to 1.72 over the eleven cases below, LXT's own
# float32 error 1.0e-7 to 1.1e-6 of the map's maximum.
ROUNDING_FACTOR = 4
RELATIVE_TOLERANCE = 2e-6

torch.set_num_threads(int(THREADS))

zennit_patches.monkey_patch_zennit()
ORIGINAL_SDPA = F.scaled_dot_product_attention


def cli(*args):
    return subprocess.run([CLI, *map(str, args), "--device", "cpu", "--threads", THREADS], capture_output=True,
                          text=True, timeout=TIMEOUT)


def randomised(model):
    """Weights that do something: torchvision's ViT starts its head at zero."""
    torch.manual_seed(3)
    for module in model.modules():
        if isinstance(module, nn.Linear) and module.weight.abs().sum() == 0:
            nn.init.normal_(module.weight, std=0.2)
            nn.init.normal_(module.bias, std=0.1)
        if isinstance(module, nn.LayerNorm):  # not the identity
            nn.init.normal_(module.weight, mean=1.0, std=0.2)
            nn.init.normal_(module.bias, std=0.2)
    return model.eval()


def lxt_sdpa(attention):
    """LXT's attention rules where timm calls the fused kernel: CP-LRP's stop_gradient on q and k
    (cp_wrap_attention_forward), AttnLRP's divide_gradient q / 4, k / 4, v / 2 (wrap_attention_forward)."""
    def cp(q, k, v, *args, **kwargs):
        return ORIGINAL_SDPA(rules.stop_gradient(q), rules.stop_gradient(k), v, *args, **kwargs)

    def attnlrp(q, k, v, *args, **kwargs):
        return ORIGINAL_SDPA(rules.divide_gradient(q, 4), rules.divide_gradient(k, 4), rules.divide_gradient(v, 2),
                             *args, **kwargs)
    return cp if attention == "cp" else attnlrp


class LxtTimmAttention(nn.Module):
    """timm's Attention with its explicit softmax, LXT's rules at q, k, v as above (the products and
    the softmax then by their plain gradient: Gradient × Input's uniform rule and softmax rule)."""

    def __init__(self, original, attention):
        super().__init__()
        self.original = original
        self.attention = attention

    def forward(self, x, attn_mask=None, is_causal=False):
        a = self.original
        B, N, C = x.shape
        q, k, v = a.qkv(x).reshape(B, N, 3, a.num_heads, a.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        if self.attention == "cp":
            q, k = rules.stop_gradient(q), rules.stop_gradient(k)
        else:
            q, k, v = rules.divide_gradient(q, 4), rules.divide_gradient(k, 4), rules.divide_gradient(v, 2)
        if a.fused_attn:
            x = ORIGINAL_SDPA(q, k, v)
        else:
            x = ((q * a.scale) @ k.transpose(-2, -1)).softmax(dim=-1) @ v
        return a.proj(x.transpose(1, 2).reshape(B, N, C))


class EinsumAttention(nn.Module):
    """Attention written with torch.einsum (as torchvision's MaxViT) and a mask made from the logits'
    shape (as Swin's), over the patches of a convolution;
    `rule` set: LXT's rules at q, k, v as in LxtTimmAttention (the oracle's copy)."""

    def __init__(self, rule=""):
        super().__init__()
        self.embed = nn.Conv2d(3, 12, 4, stride=4)
        self.qkv = nn.Linear(12, 36)
        self.norm = nn.LayerNorm(12)
        self.head = nn.Linear(12, 5)
        self.rule = rule

    def forward(self, x):
        tokens = self.norm(self.embed(x).flatten(2).transpose(1, 2))
        q, k, v = self.qkv(tokens).chunk(3, dim=-1)
        if not torch.jit.is_scripting():
            q, k, v = self.lxt_rules(q, k, v)
        logits = torch.einsum("bid,bjd->bij", q, k) * 0.3
        # A mask made from the logits' own shape, as Swin's shifted windows make theirs: no relevance.
        mask = logits.new_zeros(logits.shape[-2:])
        mask = mask.masked_fill(torch.ones_like(mask).triu(1) != 0, -2.0)
        weights = torch.softmax(logits + mask, dim=-1)
        return self.head(torch.einsum("bij,bjd->bid", weights, v).mean(1) + tokens.mean(1))

    @torch.jit.unused
    def lxt_rules(self, q, k, v):
        if self.rule == "cp":
            return rules.stop_gradient(q), rules.stop_gradient(k), v
        if self.rule == "attnlrp":
            return rules.divide_gradient(q, 4), rules.divide_gradient(k, 4), rules.divide_gradient(v, 2)
        return q, k, v


def lxt_relevance(model, x, attention, gammas=None):
    """LXT's input relevance, seeded with the logit (Gradient × Input at the input, the backward
    seeded with 1 at the explained class)."""
    import copy
    model = copy.deepcopy(model)
    if isinstance(model, EinsumAttention):
        model.rule = attention
    for name, module in list(model.named_modules()):
        # LXT's patches for torchvision's ViT (GELU, LayerNorm, MultiheadAttention), as its patch_method
        # applies them to the classes, here on the instances (a patched class cannot be scripted, and
        # timm's LayerNorm subclasses nn.LayerNorm with its own forward).
        for cls, patch in vit_torch.cp_LRP.items():
            if isinstance(module, cls):
                if patch.keywords.get("keep_original"):
                    module.original_forward = module.forward
                module.forward = types.MethodType(patch.args[0], module)
        if isinstance(module, timm.models.vision_transformer.Attention):
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, LxtTimmAttention(module, attention))
    composite = None
    if gammas:
        composite = LayerMapComposite([(nn.Conv2d, Gamma(gammas[0])), (nn.Linear, Gamma(gammas[1]))])
        composite.register(model)
    x = x.clone().requires_grad_()
    logits = model(x)
    target = logits.argmax(1)
    logits[torch.arange(len(x)), target].sum().backward()
    if composite:
        composite.remove()
    return (x * x.grad).detach(), target, logits[torch.arange(len(x)), target].detach()


class Normalising(nn.Module):
    """A ViT that normalises its input inside forward ((x - mean) / std before the patch embedding)."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, x):
        return self.net((x - self.mean) / self.std)


class LxtCase(unittest.TestCase):
    """Against LXT on the eager model, in a folder of the class's own."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def attribute(self, model_file, x, *extra):
        inputs = self.dir / f"x_{'x'.join(map(str, x.shape))}.pt"
        torch.save(x, inputs)
        out = self.dir / f"{pathlib.Path(model_file).stem}.npz"
        done = cli("attribute", model_file, "--input", inputs, "--method", "lrp", *extra, "--out", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        return np.load(out), done

    def check(self, model, model_file, x, attention, gammas=None, oracle=None):
        """TorchScope's float32 map is about as close to LXT's float64 map as LXT's own float32. `oracle`:
        (model, input) LXT is given instead, where the file's model does more before its first layer."""
        oracle_model, oracle_x = oracle or (model, x)
        expected, target, logit = lxt_relevance(oracle_model, oracle_x, attention, gammas)
        exact, _, _ = lxt_relevance(oracle_model.double(), oracle_x.double(), attention, gammas)
        oracle_model.float()
        extra = ["--composite", "epsilon0", "--attention-rule", attention]
        if gammas:
            extra += ["--rule", f"type:Conv2d=gamma:{gammas[0]}", "--rule", f"type:Linear=gamma:{gammas[1]}"]
        got, done = self.attribute(model_file, x, *extra)
        self.assertEqual(got["targets"].tolist(), target.tolist())
        self.assertEqual(got["lrp"].shape, tuple(x.shape))
        ours = relative_diff(got["lrp"], exact)
        lxts = relative_diff(expected, exact)
        if os.environ.get("TORCHSCOPE_MEASURE"):
            print(f"\n{pathlib.Path(model_file).name} {attention}: TorchScope {ours:.2e}, LXT {lxts:.2e}", file=sys.stderr)
        self.assertLessEqual(ours, ROUNDING_FACTOR * lxts + RELATIVE_TOLERANCE,
                             f"TorchScope is {ours:.2e} from LXT in float64, LXT's float32 {lxts:.2e}")
        np.testing.assert_allclose(got["lrp:logit"], logit.double().numpy(), rtol=1e-5)
        return got, done


class RelevanceVitB16AgainstLxt(LxtCase):
    def test_torchvision_vit_b16_cp_lrp_with_gamma(self):
        """LXT's recipe for torchvision's ViT: its cp_LRP patches, γ on convolutions and linear layers
        through Zennit. nn.MultiheadAttention's projections are not nn.Linear calls (F.linear on its
        parameters): Zennit's hooks never see them, and TorchScope gives them the composite's ε = 0."""
        torch.manual_seed(9)
        model = randomised(torchvision.models.vit_b_16())
        path = self.dir / "vit_b_16.pt"
        torch.jit.save(torch.jit.script(model), path)
        torch.manual_seed(0)
        x = torch.randn(1, 3, 224, 224)
        _, done = self.check(model, path, x, "cp", gammas=(0.25, 0.05))
        self.assertIn("conv_proj conv2d: gamma:0.25", done.stdout)
        self.assertIn("encoder.layers.encoder_layer_0.mlp.0 linear: gamma:0.05", done.stdout)
        self.assertIn("encoder.layers.encoder_layer_0.ln_1 layer_norm: σ held fixed", done.stdout)
        self.assertIn("self_attention scaled_dot_product_attention: values through fixed weights (cp)", done.stdout)
        self.assertNotIn("no rule for", done.stderr)
        self.assertIn("self_attention _native_multi_head_attention: not taken (gradients rule it out)", done.stdout)


class TransformerRelevanceAgainstLxt(LxtCase):
    def test_small_torchvision_vit_exported_both_rules(self):
        torch.manual_seed(6)
        model = randomised(torchvision.models.VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=3, hidden_dim=48, mlp_dim=96, num_classes=7))
        torch.manual_seed(1)
        x = torch.randn(2, 3, 32, 32)
        scripted = self.dir / "vit_small.pt"
        torch.jit.save(torch.jit.script(model), scripted)
        exported = self.dir / "vit_small.pt2"
        batch = torch.export.Dim("batch", min=1, max=16)
        torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), exported)
        for path in (scripted, exported):
            with self.subTest(model=path.name):
                self.check(model, path, x, "cp")

    def test_normalisation_inside_a_vits_forward_scripted_and_exported(self):
        """What precedes the patch embedding passes relevance on as it is: TorchScope on the model that
        normalises inside forward equals LXT on the ViT itself given the normalised input."""
        torch.manual_seed(6)
        inner = randomised(torchvision.models.VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=3, hidden_dim=48, mlp_dim=96, num_classes=7))
        model = Normalising(inner).eval()
        torch.manual_seed(2)
        x = torch.rand(2, 3, 32, 32)
        normalised = (x - model.mean) / model.std
        scripted = self.dir / "vit_normalising.pt"
        torch.jit.save(torch.jit.script(model), scripted)
        exported = self.dir / "vit_normalising.pt2"
        batch = torch.export.Dim("batch", min=1, max=16)
        torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), exported)
        for path in (scripted, exported):
            with self.subTest(model=path.name):
                self.check(model, path, x, "cp", oracle=(inner, normalised))

    def test_timm_vit_fused_and_explicit_attention(self):
        """timm's fused attention (F.scaled_dot_product_attention) and its explicit softmax path, each
        under CP-LRP and AttnLRP, on 32 × 48 inputs; scripted, and the fused one as a .pt2 too."""
        torch.manual_seed(2)
        x = torch.randn(2, 3, 32, 48)
        for fused in (True, False):
            torch.manual_seed(7)
            model = randomised(timm.models.vision_transformer.VisionTransformer(
                img_size=(32, 48), patch_size=8, embed_dim=48, depth=2, num_heads=3, num_classes=5))
            for block in model.blocks:
                block.attn.fused_attn = fused
            scripted = self.dir / f"timm_vit_{fused}.pt"
            torch.jit.save(torch.jit.script(model), scripted)
            files = [scripted]
            if fused:
                exported = self.dir / "timm_vit.pt2"
                batch = torch.export.Dim("batch", min=1, max=16)
                torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), exported)
                files.append(exported)
            for path in files:
                for attention in ("cp", "attnlrp"):
                    with self.subTest(model=path.name, attention=attention):
                        _, done = self.check(model, path, x, attention)
                        self.assertEqual(done.stderr.count("no rule for"), 0, done.stderr)

    def test_einsum_attention(self):
        """Attention through torch.einsum (MaxViT's form): the softmax reaches its product through the
        einsum's operand list; AttnLRP splits each einsum half and half."""
        torch.manual_seed(5)
        model = randomised(EinsumAttention())
        path = self.dir / "einsum.pt"
        torch.jit.save(torch.jit.script(model), path)
        torch.manual_seed(4)
        x = torch.randn(2, 3, 16, 24)
        for attention in ("cp", "attnlrp"):
            with self.subTest(attention=attention):
                _, done = self.check(model, path, x, attention)
                self.assertNotIn("no rule for", done.stderr)

    def test_the_rules_differ_where_they_should(self):
        """CP-LRP and AttnLRP are different maps (queries and keys carry relevance only in AttnLRP), and
        ε = 1e-6 is not ε = 0: the comparison above would see a rule applied in the wrong place."""
        torch.manual_seed(8)
        model = randomised(timm.models.vision_transformer.VisionTransformer(
            img_size=(32, 48), patch_size=8, embed_dim=48, depth=2, num_heads=3, num_classes=5))
        path = self.dir / "timm_vit_rules.pt"
        torch.jit.save(torch.jit.script(model), path)
        torch.manual_seed(2)
        x = torch.randn(2, 3, 32, 48)
        cp, _ = self.attribute(path, x, "--composite", "epsilon0", "--attention-rule", "cp")
        cp = cp["lrp"]
        attn, _ = self.attribute(path, x, "--composite", "epsilon0", "--attention-rule", "attnlrp")
        attn = attn["lrp"]
        self.assertGreater(np.abs(cp - attn).max() / np.abs(cp).max(), 1e-2)
        stabilised, _ = self.attribute(path, x, "--composite", "epsilon", "--attention-rule", "cp")
        difference = np.abs(cp - stabilised["lrp"]).max() / np.abs(cp).max()
        if os.environ.get("TORCHSCOPE_MEASURE"):
            print(f"\nepsilon against epsilon0: {difference:.2e}", file=sys.stderr)
        self.assertGreater(difference, 1e-5)  # LXT's own float32 error is below 1e-6
        done = cli("attribute", path, "--input", self.dir / "x_2x3x32x48.pt", "--method", "lrp",
                   "--attention-rule", "softmax", "--out", self.dir / "r.npz")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("softmax", done.stderr)


if __name__ == "__main__":
    unittest.main()
