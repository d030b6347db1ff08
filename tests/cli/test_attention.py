"""Attention grabs and maps through torchscope-cli, against eager PyTorch on the same weights.

The grabbed probabilities equal what the eager model gives when asked for them: torchvision's
nn.MultiheadAttention with need_weights=True, average_attn_weights=False; timm with fused_attn=False;
Swin's own softmax; PyTorch's math kernel (aten::_scaled_dot_product_attention_math) for a
hand-written module. The output with the grabs equals the output without them, bit for bit.
Rollout equals the NumPy rollout written here; LeGrad equals torchcam's LeGrad."""

import os
import pathlib
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
from color_model import RegisterVit  # noqa: E402  (a non-square patch grid with register tokens)

warnings.filterwarnings("ignore", category=DeprecationWarning)  # TorchScript's, from PyTorch 2.9 on
warnings.filterwarnings("ignore", category=FutureWarning)

CLI = os.environ["TORCHSCOPE_CLI"]
FIXTURES = pathlib.Path(os.environ["TORCHSCOPE_FIXTURES_DIR"])
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
TIMEOUT = 900  # the sanitized CLI is several times slower
PROBABILITY_TOLERANCE = 1e-5  # float32 probabilities of two kernels (fused vs explicit)

torch.set_num_threads(int(THREADS))


def cli(*args):
    return subprocess.run([CLI, *map(str, args), "--device", "cpu", "--threads", THREADS], capture_output=True,
                          text=True, timeout=TIMEOUT)


def max_diff(a, b):
    """The largest absolute difference; NaN (which fails every comparison) where either has one."""
    a, b = torch.as_tensor(a).double(), torch.as_tensor(b).double()
    if a.shape != b.shape:
        raise AssertionError(f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    if torch.isnan(a).any() or torch.isnan(b).any():
        return float("nan")
    return (a - b).abs().max().item()


def multihead_attention_of(model, x):
    """Every nn.MultiheadAttention's per-head probabilities, asked of the eager model itself."""
    found, handles = {}, []
    for name, module in model.named_modules():
        if not isinstance(module, nn.MultiheadAttention):
            continue

        def ask(mod, args, kwargs):
            return args, {**kwargs, "need_weights": True, "average_attn_weights": False}

        def keep(mod, args, kwargs, output, name=name):
            found[f"{name}:attention"] = output[1].detach()
        handles += [module.register_forward_pre_hook(ask, with_kwargs=True),
                    module.register_forward_hook(keep, with_kwargs=True)]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return found


def numpy_rollout(layers, fusion, discard):
    """Abnar & Zuidema's rollout as vit-explain writes it, per image: heads fused, the lowest
    `discard` of each matrix set to 0 (never entry [0, 0]), 0.5 A + 0.5 I, rows renormalised."""
    n, _, t, _ = layers[0].shape
    out = np.zeros((n, t, t))
    for i in range(n):
        result = np.eye(t)
        for layer in layers:
            heads = layer[i].astype(np.float64)
            fused = {"mean": heads.mean(0), "max": heads.max(0), "min": heads.min(0)}[fusion]
            flat = fused.reshape(-1).copy()
            lowest = np.argsort(flat, kind="stable")[:int(flat.size * discard)]
            flat[lowest[lowest != 0]] = 0
            a = 0.5 * flat.reshape(t, t) + 0.5 * np.eye(t)
            a = a / a.sum(-1, keepdims=True)
            result = a @ result
        out[i] = result
    return out


def vit_b_16_fixture():
    """The fixture script's ViT-B/16 (random weights, a random head), eager with the same weights."""
    scripted = torch.jit.load(FIXTURES / "vit_b_16_scripted.pt")
    model = torchvision.models.vit_b_16(weights=None)
    model.load_state_dict(scripted.state_dict())
    return model.eval()


class Router(nn.Module):
    """A mixture of experts' gate: softmax(x W) over the experts, the same shape of code as attention
    (a product, then a softmax over its last dim), but its probabilities weigh the experts' outputs
    elementwise and never meet a product with values: not attention."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Parameter(torch.randn(16, 4))
        self.experts = nn.Linear(16, 4 * 16)

    def forward(self, x):
        weights = torch.softmax(torch.matmul(x, self.gate), dim=-1)
        outputs = self.experts(x).view(x.shape[0], x.shape[1], 4, 16)
        return (weights.unsqueeze(-1) * outputs).sum(2)


class RouterBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = Router()

    def forward(self, x):
        return self.router(x)


class MaskedSdpa(nn.Module):
    """A hand-written attention module calling F.scaled_dot_product_attention three times: with a
    boolean mask (one query's keys all masked), causal with its own scale, and with a float bias."""

    def __init__(self, dim: int = 32, heads: int = 4, tokens: int = 10):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        keep = (torch.rand(tokens, tokens) > 0.3) | torch.eye(tokens, dtype=torch.bool)
        keep[3] = False  # a query with every key masked: the math kernel gives it zeros, not NaN
        self.register_buffer("keep", keep)
        self.register_buffer("bias", torch.randn(heads, tokens, tokens))

    def split(self, x):
        n, t, d = x.shape
        return self.qkv(x).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)

    def forward(self, x):
        q, k, v = self.split(x)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=self.keep)
        b = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
        c = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
        return (a + b + c).sum(1)


class Holder(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class WeightsMha(nn.Module):
    """nn.MultiheadAttention asked for its weights, sequence first: its explicit softmax path."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4)

    def forward(self, x):
        out, weights = self.mha(x, x, x, need_weights=True, average_attn_weights=False)
        assert weights is not None
        return out + weights.mean()


class MaskedMha(nn.Module):
    """nn.MultiheadAttention given masks, batch first: a causal float mask with a key padding mask,
    then a boolean mask where one query sees only itself; need_weights=False, as models call it."""

    def __init__(self, dim: int = 32, heads: int = 4, tokens: int = 9):
        super().__init__()
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)
        causal = torch.triu(torch.full((tokens, tokens), float("-inf")), 1)
        self.register_buffer("causal", causal)
        only_self = torch.rand(tokens, tokens) > 0.6
        only_self[2] = True
        only_self[2, 2] = False  # True masks a key out: query 2 keeps only itself
        only_self.fill_diagonal_(False)
        self.register_buffer("only_self", only_self)
        padding = torch.zeros(2, tokens)
        padding[1, -3:] = float("-inf")  # the second sequence is 3 tokens shorter
        self.register_buffer("padding", padding)

    def forward(self, x):
        a = self.mha(x, x, x, attn_mask=self.causal, key_padding_mask=self.padding, need_weights=False)[0]
        b = self.mha(x, x, x, attn_mask=self.only_self, need_weights=False)[0]
        return a + b


class CrossSdpa(nn.Module):
    """Causal cross attention: 6 queries over 10 keys (PyTorch's is_causal then keeps the top-left
    triangle), and the same without the mask, heads of 8."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def split(self, x, memory):
        n, t, d = x.shape
        q = self.q(x).reshape(n, t, self.heads, d // self.heads).transpose(1, 2)
        k, v = self.kv(memory).reshape(n, memory.shape[1], 2, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        return q, k, v

    def forward(self, x):
        q, k, v = self.split(x[:, :6], x)
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                + F.scaled_dot_product_attention(q, k, v)).sum(1)


class AttentionCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def save(self, name, value):
        path = self.dir / name
        torch.save(value, path)
        return path

    def script(self, name, model):
        path = self.dir / name
        torch.jit.save(torch.jit.script(model), path)
        return path

    def run_cli(self, *args):
        result = cli(*args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def grab(self, model_path, input_path, *grabs, extra=()):
        out = self.dir / "grabbed.pt"
        args = [a for g in grabs for a in ("--grab", g)]
        self.run_cli("run", model_path, "--input", input_path, *args, *extra, "--out", out)
        return torch.load(out)

    def recorded_and_grabbed(self, model, x, layer, batch):
        """`record` of LAYER:attention over x in batches of `batch` (its statistics), and the
        probabilities of the same samples grabbed by `run`, as NumPy: the oracle's input."""
        model_path, x_path = self.script("recorded.pt", model), self.save("recorded_x.pt", x)
        out = self.dir / "recorded_statistics.pt"
        self.run_cli("record", model_path, "--input", x_path, "--grab", f"{layer}:attention", "--batch", str(batch),
                     "--out", out)
        grabbed = self.grab(model_path, x_path, f"{layer}:attention")[f"{layer}:attention"].numpy()
        return torch.load(out), grabbed

    def assert_same_output_with_and_without(self, model_path, input_path, *grabs):
        plain = self.grab(model_path, input_path)["output"]
        grabbed = self.grab(model_path, input_path, *grabs)["output"]
        self.assertTrue(torch.equal(plain, grabbed), "the attention grabs changed the model's output")

    def assert_probabilities(self, got, want):
        self.assertEqual(set(got), set(want))
        for key in sorted(want):
            diff = max_diff(got[key], want[key])
            print(f"{key}: max abs diff {diff:.3g}")
            self.assertLessEqual(diff, PROBABILITY_TOLERANCE, key)


class AttentionGrabs(AttentionCase):
    """PATH:attention in `run` for every form of attention the issue names."""

    def test_vit_b_16_fast_path_and_sdpa_path_equal_need_weights(self):
        model = vit_b_16_fixture()
        torch.manual_seed(1)
        x = torch.randn(2, 3, 224, 224)
        x_path = self.save("x.pt", x)
        want = multihead_attention_of(model, x)
        layers = [f"encoder.layers.encoder_layer_{i}.self_attention" for i in (0, 5, 11)]
        want = {f"{l}:attention": want[f"{l}:attention"] for l in layers}
        model_path = FIXTURES / "vit_b_16_scripted.pt"
        # Without gradients the scripted module takes nn.MultiheadAttention's fast path
        # (_native_multi_head_attention); with them, scaled_dot_product_attention.
        got = self.grab(model_path, x_path, "encoder.layers.*.self_attention:attention")
        self.assertEqual(len([k for k in got if k.endswith(":attention")]), 12)
        self.assert_probabilities({k: got[k] for k in want}, want)
        got = self.grab(model_path, x_path, *[f"{l}:attention" for l in layers], "heads.head:grad",
                        extra=("--target", "3"))
        del got["heads.head:grad"], got["output"]
        self.assert_probabilities(got, want)
        self.assert_same_output_with_and_without(model_path, x_path, "encoder.layers.*.self_attention:attention")

    def test_timm_fused_attention_equals_unfused(self):
        import timm
        from timm.models.vision_transformer import Attention
        torch.manual_seed(2)
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=96).eval()
        self.assertTrue(all(m.fused_attn for m in model.modules() if isinstance(m, Attention)))
        model_path = self.script("timm_vit.pt", model)
        x_path = self.save("x.pt", torch.randn(2, 3, 96, 96))
        want = {}
        for name, module in model.named_modules():
            if isinstance(module, Attention):
                module.fused_attn = False
                module.attn_drop.register_forward_hook(
                    lambda mod, args, out, name=name: want.__setitem__(f"{name}:attention", out.detach()))
        with torch.no_grad():
            model(torch.load(x_path))
        got = self.grab(model_path, x_path, "blocks.*.attn:attention")
        del got["output"]
        self.assertEqual(len(got), 12)
        self.assert_probabilities(got, want)
        self.assert_same_output_with_and_without(model_path, x_path, "blocks.*.attn:attention")

    def test_swin_t_windows_equal_its_own_softmax(self):
        from torchvision.models.swin_transformer import ShiftedWindowAttention
        scripted = torch.jit.load(FIXTURES / "pt2_swin_t.pt")
        model = torchvision.models.swin_t(weights=None)
        model.load_state_dict(scripted.state_dict())
        model.eval()
        x_path = FIXTURES / "pt2_swin_t_input.pt"
        want, current = {}, [None]
        for name, module in model.named_modules():
            if isinstance(module, ShiftedWindowAttention):
                module.register_forward_pre_hook(lambda mod, args, name=name: current.__setitem__(0, name))
        softmax = F.softmax

        def recording(input, dim=None, _stacklevel=3, dtype=None):
            out = softmax(input, dim=dim, dtype=dtype)
            want[f"{current[0]}:attention"] = out.detach()
            return out
        F.softmax = recording
        try:
            with torch.no_grad():
                model(torch.load(x_path))
        finally:
            F.softmax = softmax
        got = self.grab(FIXTURES / "pt2_swin_t.pt", x_path, "features.*.attn:attention")
        del got["output"]
        self.assertEqual(len(got), 12)
        self.assertEqual(tuple(got["features.1.0.attn:attention"].shape), (64, 3, 49, 49))  # per window
        self.assert_probabilities(got, want)
        self.assert_same_output_with_and_without(FIXTURES / "pt2_swin_t.pt", x_path, "features.*.attn:attention")

    def test_masked_causal_and_biased_sdpa_equal_the_math_kernel(self):
        torch.manual_seed(3)
        model = MaskedSdpa().eval()
        x = torch.randn(2, 10, 32)
        model_path, x_path = self.script("sdpa.pt", Holder(model)), self.save("x.pt", x)
        with torch.no_grad():
            q, k, v = model.split(x)
            math = torch.ops.aten._scaled_dot_product_attention_math
            # The public op turns a boolean mask into -inf where it is False before its kernels see it.
            keep = torch.zeros(model.keep.shape).masked_fill(~model.keep, float("-inf"))
            want = {"inner:attention": math(q, k, v, keep)[1],
                    "inner:attention#1": math(q, k, v, None, 0.0, True, scale=0.3)[1],
                    "inner:attention#2": math(q, k, v, model.bias)[1]}
        got = self.grab(model_path, x_path, "inner:attention")
        del got["output"]
        self.assertTrue(torch.equal(got["inner:attention"][:, :, 3], torch.zeros(2, 4, 10)))
        self.assert_probabilities(got, want)
        self.assert_same_output_with_and_without(model_path, x_path, "inner:attention")

    def test_masks_given_to_multihead_attention_are_kept(self):
        torch.manual_seed(8)
        model = MaskedMha().eval()
        x = torch.randn(2, 9, 32)
        model_path, x_path = self.script("masked_mha.pt", Holder(model)), self.save("x.pt", x)
        want = multihead_attention_of(model, x)
        want = {"inner:attention": want["mha:attention"]}
        # The eager hook keeps the last call: the boolean mask's. The first call's, by the math kernel.
        with torch.no_grad():
            q, k, v = F.linear(x, model.mha.in_proj_weight, model.mha.in_proj_bias).chunk(3, -1)
            split = lambda t: t.reshape(2, 9, 4, 8).transpose(1, 2)
            bias = model.causal.expand(2, 4, 9, 9) + model.padding.view(2, 1, 1, 9)
            first = torch.ops.aten._scaled_dot_product_attention_math(split(q), split(k), split(v), bias)[1]
        got = self.grab(model_path, x_path, "inner.mha:attention")
        self.assertEqual(set(got), {"output", "inner.mha:attention", "inner.mha:attention#1"})
        self.assertLessEqual(max_diff(got["inner.mha:attention"], first), PROBABILITY_TOLERANCE)
        self.assertLessEqual(max_diff(got["inner.mha:attention#1"], want["inner:attention"]), PROBABILITY_TOLERANCE)
        self.assertTrue(torch.equal(got["inner.mha:attention"][1, :, :, -3:], torch.zeros(4, 9, 3)))  # padded keys
        self.assertLessEqual(max_diff(got["inner.mha:attention#1"][:, :, 2, 2], torch.ones(2, 4)), 1e-6)
        self.assert_same_output_with_and_without(model_path, x_path, "inner.mha:attention")

    def test_causal_cross_attention_with_fewer_queries_than_keys(self):
        torch.manual_seed(9)
        model = CrossSdpa().eval()
        x = torch.randn(3, 10, 32)
        model_path, x_path = self.script("cross.pt", Holder(model)), self.save("x.pt", x)
        with torch.no_grad():
            q, k, v = model.split(x[:, :6], x)
            math = torch.ops.aten._scaled_dot_product_attention_math
            want = {"inner:attention": math(q, k, v, None, 0.0, True)[1], "inner:attention#1": math(q, k, v)[1]}
        got = self.grab(model_path, x_path, "inner:attention")
        del got["output"]
        self.assertEqual(tuple(got["inner:attention"].shape), (3, 4, 6, 10))
        # Top-left causal: query i sees keys 0..i, never the 4 keys past the last query.
        self.assertTrue(torch.equal(got["inner:attention"][..., 6:], torch.zeros(3, 4, 6, 4)))
        self.assert_probabilities(got, want)
        self.assert_same_output_with_and_without(model_path, x_path, "inner:attention")

    def test_multihead_attention_asked_for_weights_splits_its_heads(self):
        torch.manual_seed(4)
        model = WeightsMha().eval()
        x = torch.randn(7, 3, 32)  # sequence first: the explicit softmax path
        model_path, x_path = self.script("mha.pt", model), self.save("x.pt", x)
        want = multihead_attention_of(model, x)
        got = self.grab(model_path, x_path, "mha:attention")
        del got["output"]
        self.assertEqual(tuple(got["mha:attention"].shape), (3, 4, 7, 7))
        self.assert_probabilities(got, want)
        self.assert_same_output_with_and_without(model_path, x_path, "mha:attention")

    def test_a_routers_softmax_is_not_attention(self):
        torch.manual_seed(5)
        model_path = self.script("router.pt", RouterBlock().eval())
        x_path = self.save("x.pt", torch.randn(2, 6, 16))
        result = cli("run", model_path, "--input", x_path, "--grab", "router:attention", "--out", self.dir / "x.pt")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("computes no attention", result.stderr)

    def test_a_module_without_attention_is_refused_with_the_ones_that_have_it(self):
        # torchvision's ViT class at a small width (the fixtures' vit_small): ViT-B/16's modules and queries.
        result = cli("run", FIXTURES / "vit_small_scripted.pt", "--input", FIXTURES / "vit_input.pt",
                     "--grab", "encoder.layers.encoder_layer_0.mlp:attention", "--out", self.dir / "x.pt")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("computes no attention", result.stderr)
        result = cli("attention", FIXTURES / "vit_small_scripted.pt", "--input", FIXTURES / "vit_input.pt",
                     "--layer", "encoder.layers.encoder_layer_0", "--out", self.dir / "x.pt")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("encoder.layers.encoder_layer_0.self_attention", result.stderr)
        self.assertFalse((self.dir / "x.pt").exists())


class AttentionMaps(AttentionCase):
    """torchscope-cli attention: head maps, rollout and LeGrad."""

    def test_what_cannot_be_mapped_is_refused_with_why(self):
        out = self.dir / "x.pt"
        result = cli("attention", FIXTURES / "vit_small_scripted.pt", "--input", FIXTURES / "vit_input.pt",
                     "--query", "197", "--out", out)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--query 197 is out of range: the attention has 197 queries", result.stderr)
        result = cli("attention", FIXTURES / "pt2_swin_t.pt", "--input", FIXTURES / "pt2_swin_t_input.pt",
                     "--method", "rollout", "--out", out)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("not a class token and the patch grid", result.stderr)
        self.assertFalse(out.exists())
        # Heads alone work on windows: the probabilities and each image's entropy per head.
        result = self.run_cli("attention", FIXTURES / "pt2_swin_t.pt", "--input", FIXTURES / "pt2_swin_t_input.pt",
                              "--layer", "features.1.0.attn", "--out", out)
        self.assertIn("windowed attention", result.stdout)
        got = torch.load(out)
        p = got["features.1.0.attn:attention"]
        self.assertEqual(tuple(p.shape), (64, 3, 49, 49))
        entropy = -(p * p.clamp_min(1e-30).log()).sum(-1).mean(-1).view(1, 64, 3).mean(1)
        self.assertLessEqual(max_diff(got["features.1.0.attn:entropy"], entropy), 1e-5)

    def test_vit_heads_rollout_and_legrad(self):
        from torchcam.methods import LeGrad
        model = vit_b_16_fixture()
        torch.manual_seed(5)
        x = torch.randn(2, 3, 224, 224)
        x_path = self.save("x.pt", x)
        want = multihead_attention_of(model, x)
        layers = [f"encoder.layers.encoder_layer_{i}.self_attention" for i in range(12)]
        out = self.dir / "maps.npz"
        self.run_cli("attention", FIXTURES / "vit_b_16_scripted.pt", "--input", x_path, "--method", "heads",
                     "--method", "rollout", "--head-fusion", "max", "--discard", "0.9", "--out", out)
        got = np.load(out)
        self.assertEqual(got[f"{layers[0]}:attention"].shape, (2, 12, 197, 197))
        for layer in (layers[0], layers[11]):
            p = want[f"{layer}:attention"]
            self.assertLessEqual(max_diff(got[f"{layer}:attention"], p), PROBABILITY_TOLERANCE)
            self.assertLessEqual(max_diff(got[f"{layer}:maps"], p[:, :, 0, 1:].reshape(2, 12, 14, 14)),
                                 PROBABILITY_TOLERANCE)
            entropy = -(p * p.clamp_min(1e-30).log()).sum(-1).mean(-1)
            self.assertLessEqual(max_diff(got[f"{layer}:entropy"], entropy), 1e-4)
        rollout = numpy_rollout([want[f"{l}:attention"].numpy() for l in layers], "max", 0.9)
        self.assertEqual(got["rollout"].shape, (2, 1, 14, 14))
        diff = max_diff(got["rollout"], rollout[:, 0, 1:].reshape(2, 1, 14, 14))
        print(f"rollout: max abs diff {diff:.3g}")
        self.assertLessEqual(diff, 1e-5)

        last = layers[8:]
        out = self.dir / "legrad.pt"
        self.run_cli("attention", FIXTURES / "vit_b_16_scripted.pt", "--input", x_path, "--method", "legrad",
                     *[a for l in last for a in ("--layer", l)], "--target", "3", "--out", out)
        got = torch.load(out)
        with LeGrad(model, [l.rsplit(".", 1)[0] for l in last]) as extractor:
            model(x)
            cam = extractor(3)[0]
        self.assertEqual(tuple(got["legrad"].shape), (2, 1, 14, 14))
        self.assertEqual(got["targets"].tolist(), [3, 3])
        diff = max_diff(got["legrad"][:, 0], cam)
        print(f"legrad: max abs diff {diff:.3g}")
        self.assertLessEqual(diff, 1e-4)

    def test_register_tokens_and_a_model_without_a_class_token(self):
        from timm.models.vision_transformer import VisionTransformer
        torch.manual_seed(6)
        x = torch.randn(2, 3, 64, 64)
        x_path = self.save("x.pt", x)
        for name, options, prefix in (("registers", dict(reg_tokens=4), 5),
                                      ("pooled", dict(class_token=False, global_pool="avg"), 0)):
            with self.subTest(name):
                model = VisionTransformer(img_size=64, patch_size=16, embed_dim=64, depth=2, num_heads=4,
                                          num_classes=10, **options).eval()
                model_path = self.script(f"{name}.pt", model)  # fused, before the oracle's changes
                want = {}
                for block_name, module in model.named_modules():
                    if block_name.endswith(".attn"):
                        module.fused_attn = False
                        module.attn_drop.register_forward_hook(
                            lambda mod, a, o, n=block_name: want.__setitem__(n, o.detach()))
                with torch.no_grad():
                    model(x)
                out = self.dir / f"{name}.pt"
                result = self.run_cli("attention", model_path, "--input", x_path, "--out", out)
                got = torch.load(out)
                p = want["blocks.1.attn"]
                self.assertEqual(p.shape[-1], prefix + 16)
                rows = p[:, :, 0] if prefix else p.mean(2)
                self.assertLessEqual(max_diff(got["blocks.1.attn:maps"], rows[..., prefix:].reshape(2, 4, 4, 4)),
                                     PROBABILITY_TOLERANCE)
                self.assertIn("4 more token(s) between the class token and the patches" if prefix else "no class token",
                              result.stdout)


class AttentionNonSquare(AttentionCase):
    """Every attention method on 3-channel, non-square images (3 x 40 x 56, a 5 x 7 patch grid) with a
    class token and two register tokens, a batch of 2: heads, --query, entropy and distance against
    the eager model asked for its weights, rollout against NumPy, LeGrad against torchcam."""

    def setUp(self):
        super().setUp()
        torch.manual_seed(11)
        self.model = RegisterVit().eval()
        self.x = torch.randn(2, 3, 40, 56)
        self.model_path, self.x_path = self.script("register_vit.pt", self.model), self.save("x.pt", self.x)
        self.layers = [f"encoder.layers.{i}.self_attention" for i in range(3)]
        self.want = multihead_attention_of(self.model, self.x)

    def test_heads_query_entropy_distance_and_rollout(self):
        out = self.dir / "maps.npz"
        result = self.run_cli("attention", self.model_path, "--input", self.x_path, "--method", "heads",
                              "--method", "rollout", "--head-fusion", "min", "--discard", "0.5", "--out", out)
        self.assertIn("2 more token(s) between the class token and the patches", result.stdout)
        got = np.load(out)
        for layer in self.layers:
            p = self.want[f"{layer}:attention"]
            self.assertEqual(tuple(p.shape), (2, 4, 38, 38))
            self.assertLessEqual(max_diff(got[f"{layer}:attention"], p), PROBABILITY_TOLERANCE)
            # Row-major 5 x 7: a height/width swap reshapes the same numbers into another picture.
            self.assertLessEqual(max_diff(got[f"{layer}:maps"], p[:, :, 0, 3:].reshape(2, 4, 5, 7)),
                                 PROBABILITY_TOLERANCE)
            entropy = -(p * p.clamp_min(1e-30).log()).sum(-1).mean(-1)
            self.assertLessEqual(max_diff(got[f"{layer}:entropy"], entropy), 1e-5)
            distance = numpy_distance(p.numpy(), 3, 5, 7) * 8  # pixels: 8-pixel patches
            self.assertLessEqual(max_diff(got[f"{layer}:distance"], distance), 1e-4)
        rollout = numpy_rollout([self.want[f"{l}:attention"].numpy() for l in self.layers], "min", 0.5)
        self.assertLessEqual(max_diff(got["rollout"], rollout[:, 0, 3:].reshape(2, 1, 5, 7)), 1e-5)
        # Another query token: patch 12 (row 1, column 5) over the patches.
        query = self.dir / "query.pt"
        self.run_cli("attention", self.model_path, "--input", self.x_path, "--query", "15",
                     "--layer", self.layers[1], "--out", query)
        p = self.want[f"{self.layers[1]}:attention"]
        self.assertLessEqual(max_diff(torch.load(query)[f"{self.layers[1]}:maps"], p[:, :, 15, 3:].reshape(2, 4, 5, 7)),
                             PROBABILITY_TOLERANCE)

    def test_legrad_equals_torchcam_on_the_grid(self):
        from torchcam.methods import LeGrad
        out = self.dir / "legrad.pt"
        self.run_cli("attention", self.model_path, "--input", self.x_path, "--method", "legrad",
                     *[a for l in self.layers[1:] for a in ("--layer", l)], "--out", out)
        got = torch.load(out)
        with torch.no_grad():
            predicted = self.model(self.x).argmax(1)
        self.assertEqual(got["targets"].tolist(), predicted.tolist())
        blocks = [l.rsplit(".", 1)[0] for l in self.layers[1:]]
        for i in range(2):  # torchcam explains one class per call
            with LeGrad(self.model, blocks, prefix_tokens=3, grid_shape=(5, 7)) as extractor:
                self.model(self.x[i:i + 1])
                cam = extractor(int(predicted[i]))[0]
            self.assertEqual(tuple(got["legrad"][i].shape), (1, 5, 7))
            self.assertLessEqual(max_diff(got["legrad"][i], cam), 1e-4)

    def test_grad_cam_of_a_block_on_the_grid_equals_pytorch_grad_cam(self):
        # A block's tokens as their 5 x 7 patch grid (three tokens before the patches), not refused for
        # not being square: Grad-CAM by attribute (per image, its predicted class) and by gradcam,
        # against pytorch-grad-cam's get_cam_image on the same tokens reshaped as its
        # reshape_transform would (row-major 5 x 7: a height/width swap gives another picture).
        from pytorch_grad_cam import GradCAM
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
        block = "encoder.layers.1"
        out = self.dir / "cams.npz"
        self.run_cli("attribute", self.model_path, "--input", self.x_path, "--method", "grad_cam", "--layer", block,
                     "--out", out)
        got = np.load(out)
        module = dict(self.model.named_modules())[block]
        grid = lambda t: t[:, 3:, :].reshape(t.shape[0], 5, 7, t.shape[2]).permute(0, 3, 1, 2)
        with torch.no_grad():
            predicted = self.model(self.x).argmax(1)
        self.assertEqual(got["targets"].tolist(), predicted.tolist())
        for i in range(2):
            seen = {}
            hook = module.register_forward_hook(lambda m, inputs, output: seen.__setitem__("a", output))
            score = self.model(self.x[i:i + 1])[0, int(predicted[i])]
            hook.remove()
            gradient, = torch.autograd.grad(score, seen["a"])
            raw = GradCAM(model=self.model, target_layers=[module]).get_cam_image(
                self.x[i:i + 1], module, [ClassifierOutputTarget(int(predicted[i]))],
                grid(seen["a"].detach()).numpy(), grid(gradient).numpy(), False)
            want = torch.from_numpy(np.maximum(raw, 0))
            self.assertEqual(tuple(got["grad_cam"][i].shape), (1, 5, 7))
            self.assertGreater(float(want.max()), 0.0)
            self.assertLessEqual(max_diff(got["grad_cam"][i, 0], want[0]), 1e-5 * float(want.max()))

    def test_the_gradcam_command_reads_the_same_grid(self):
        # gradcam (the window's Grad-CAM tab) on two 56 x 40 colour photos: its layer maps are
        # attribute's Grad-CAM (checked against pytorch-grad-cam above) of the same images.
        photos = [FIXTURES / "color" / f"astronaut_{n}.png" for n in ("a", "b")]
        setup = self.dir / "setup.json"
        setup.write_text('{"preprocess": {"resize": [40, 56], "scale": 255, "mean": [0.5, 0.5, 0.5], '
                         '"std": [0.25, 0.25, 0.25]}}')
        block, common = "encoder.layers.1", ["--preprocess", setup, "--input", *photos]
        self.run_cli("gradcam", self.model_path, *common, "--layer", block, "--out", self.dir / "tab.pt")
        self.run_cli("attribute", self.model_path, *common, "--method", "grad_cam", "--layer", block,
                     "--out", self.dir / "maps.pt")
        tab, maps = torch.load(self.dir / "tab.pt"), torch.load(self.dir / "maps.pt")
        self.assertEqual(tuple(tab["gradcam_layer"].shape), (2, 5, 7))
        self.assertEqual(tab["target"].tolist(), maps["targets"].tolist())
        self.assertGreater(float(maps["grad_cam"].max()), 0.0)
        self.assertLessEqual(max_diff(tab["gradcam_layer"], maps["grad_cam"][:, 0]), 1e-6)

    def test_timm_registers_on_a_non_square_grid_recorded(self):
        from timm.models.vision_transformer import VisionTransformer
        torch.manual_seed(12)
        model = VisionTransformer(img_size=(40, 56), patch_size=8, embed_dim=32, depth=2, num_heads=4,
                                  num_classes=5, reg_tokens=2).eval()
        got, p = self.recorded_and_grabbed(model, torch.randn(5, 3, 40, 56), "blocks.1.attn", batch=2)
        self.assertEqual(p.shape, (5, 4, 38, 38))
        distance = numpy_distance(p, 3, 5, 7) * 8
        self.assertEqual(got["blocks.1.attn:distance:samples"].item(), 5)
        self.assertLessEqual(max_diff(got["blocks.1.attn:distance:mean"], distance.mean(0)), 1e-5)
        self.assertLessEqual(max_diff(got["blocks.1.attn:distance:max"], distance.max(0)), 1e-5)


def numpy_distance(p, prefix, height, width=None):
    """Mean attention distance in patches: over patch queries, Σ over patch keys of p · distance.
    The patches' distance is euclidean between their grid positions (row-major, height x width)."""
    width = height if width is None else width
    yx = np.stack(np.meshgrid(np.arange(height), np.arange(width), indexing="ij"), -1).reshape(-1, 2)
    d = np.sqrt(((yx[:, None, :] - yx[None, :, :]) ** 2).sum(-1))
    patches = p[:, :, prefix:, prefix:].astype(np.float64)
    return (patches * d).sum(-1).mean(-1)


def timm_legrad(model, x, blocks, prefix, grid, element=None):
    """LeGrad as torchcam 0.5 defines it (ReLU of the gradient of the class score at each block's
    attention probabilities, the mean over heads and queries, the prefix keys dropped, the layers
    averaged, each image scaled to [0, 1]), written for timm: the probabilities from the eager model
    with its attention unfused, each block's score read by the model's own forward_head(norm(.)).
    `element`: the output element of a tuple model that holds the class scores."""
    import copy
    model = copy.deepcopy(model)
    probabilities, tokens = {}, {}
    modules = dict(model.named_modules())
    for block in blocks:
        modules[block].attn.fused_attn = False
        modules[block].attn.attn_drop.register_forward_hook(
            lambda mod, a, o, n=block: probabilities.__setitem__(n, o))
        modules[block].register_forward_hook(lambda mod, a, o, n=block: tokens.__setitem__(n, o))
    target = (model(x) if element is None else model(x)[element]).argmax(1)
    maps = []
    for block in blocks:
        score = model.forward_head(model.norm(tokens[block])).gather(1, target[:, None]).sum()
        gradient, = torch.autograd.grad(score, probabilities[block], retain_graph=True)
        maps.append(gradient.relu().mean((1, 2))[:, prefix:].reshape(x.shape[0], *grid))
    cam = torch.stack(maps).mean(0)
    cam = cam - cam.amin((1, 2), keepdim=True)
    return (cam / (cam.amax((1, 2), keepdim=True) + 1e-8)).detach(), target


class LeGradTimm(AttentionCase):
    """LeGrad on timm's VisionTransformer, scripted and as a .pt2 with a dynamic batch (where the
    read-out's nn.Identity modules leave no operation and the pooling is no attribute), on 3 x 40 x 56
    images (a 5 x 7 grid), a batch of 2: the class token with two registers, and no class token with
    average pooling and fc_norm. Oracle: timm_legrad on the eager model."""

    def test_scripted_and_exported_equal_the_eager_definition(self):
        from timm.models.vision_transformer import VisionTransformer
        torch.manual_seed(13)
        x = torch.randn(2, 3, 40, 56)
        x_path = self.save("x.pt", x)
        blocks = ["blocks.1", "blocks.2"]
        for name, options, prefix in (("registers", dict(reg_tokens=2), 3),
                                      ("pooled", dict(class_token=False, global_pool="avg", fc_norm=True), 0)):
            model = VisionTransformer(img_size=(40, 56), patch_size=8, embed_dim=32, depth=3, num_heads=4,
                                      num_classes=7, **options).eval()
            want, target = timm_legrad(model, x, blocks, prefix, (5, 7))
            exported = self.dir / f"{name}.pt2"
            batch = torch.export.Dim("batch", min=1, max=16)
            torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), exported)
            for form, path in (("scripted", self.script(f"{name}.pt", model)), ("pt2", exported)):
                with self.subTest(name=name, form=form):
                    out = self.dir / f"{name}_{form}_legrad.pt"
                    self.run_cli("attention", path, "--input", x_path, "--method", "legrad",
                                 *[a for b in blocks for a in ("--layer", f"{b}.attn")], "--out", out)
                    got = torch.load(out)
                    self.assertEqual(got["targets"].tolist(), target.tolist())
                    self.assertEqual(tuple(got["legrad"].shape), (2, 1, 5, 7))
                    self.assertLessEqual(max_diff(got["legrad"][:, 0], want), 1e-4)

    def test_the_scores_element_of_a_tuple_model(self):
        # (region [N, 3], classes [N, 7]): the default scores, the region's, are no read-out of the class
        # token through `head`, and LeGrad says so; --scores 1 explains the classes, as the eager definition.
        from timm.models.vision_transformer import VisionTransformer

        class TwoOutputs(VisionTransformer):
            def __init__(self):
                super().__init__(img_size=(40, 56), patch_size=8, embed_dim=32, depth=3, num_heads=4, num_classes=7)
                self.region = nn.Linear(32, 3)

            def forward(self, x):
                x = self.forward_features(x)
                return self.region(x[:, 1:].mean(1)), self.forward_head(x)

        torch.manual_seed(15)
        model = TwoOutputs().eval()
        x = torch.randn(2, 3, 40, 56)
        exported = self.dir / "two_outputs.pt2"
        batch = torch.export.Dim("batch", min=1, max=16)
        torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), exported)
        x_path = self.save("x.pt", x)
        refused = cli("attention", exported, "--input", x_path, "--method", "legrad", "--out", self.dir / "no.pt")
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("no pooling (token, avg, max, avgmax) gives the model's own output", refused.stderr)
        want, target = timm_legrad(model, x, ["blocks.1", "blocks.2"], 1, (5, 7), element=1)
        out = self.dir / "classes.pt"
        self.run_cli("attention", exported, "--input", x_path, "--method", "legrad", "--scores", "1",
                     "--layer", "blocks.1.attn", "--layer", "blocks.2.attn", "--out", out)
        got = torch.load(out)
        self.assertEqual(got["targets"].tolist(), target.tolist())
        self.assertLessEqual(max_diff(got["legrad"][:, 0], want), 1e-4)

    def test_a_read_out_that_reproduces_nothing_is_refused(self):
        # Two heads averaged (DeiT's distillation head's way): no pooling of norm's tokens through
        # `head` alone gives the output, so LeGrad says so instead of explaining another score.
        from timm.models.vision_transformer import VisionTransformer

        class TwoHeads(VisionTransformer):
            def __init__(self):
                super().__init__(img_size=(40, 56), patch_size=8, embed_dim=32, depth=2, num_heads=4, num_classes=7)
                self.head_dist = nn.Linear(32, 7)

            def forward(self, x):
                x = self.forward_features(x)  # the blocks, then norm
                return 0.5 * (self.head(x[:, 0]) + self.head_dist(x[:, 1]))

        torch.manual_seed(14)
        model = TwoHeads().eval()
        exported = self.dir / "two_heads.pt2"
        x = torch.randn(2, 3, 40, 56)
        batch = torch.export.Dim("batch", min=1, max=16)
        torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), exported)
        result = cli("attention", exported, "--input", self.save("x.pt", x), "--method", "legrad",
                     "--out", self.dir / "refused.pt")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no pooling (token, avg, max, avgmax) gives the model's own output", result.stderr)


class AttentionRecorders(AttentionCase):
    """record folds each head's entropy and mean attention distance over many samples."""

    def test_entropy_and_distance_per_head_over_samples(self):
        import timm
        torch.manual_seed(7)
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, depth=2).eval()
        got, p = self.recorded_and_grabbed(model, torch.randn(20, 3, 64, 64), "blocks.1.attn", batch=6)
        entropy = -(p * np.log(np.where(p > 0, p, 1))).sum(-1).mean(-1)  # [N, H]
        self.assertEqual(got["blocks.1.attn:entropy:samples"].item(), 20)
        self.assertLessEqual(max_diff(got["blocks.1.attn:entropy:mean"], entropy.mean(0)), 1e-5)
        self.assertLessEqual(max_diff(got["blocks.1.attn:entropy:max"], entropy.max(0)), 1e-5)
        distance = numpy_distance(p, 1, 4) * 16  # pixels: 16-pixel patches
        self.assertLessEqual(max_diff(got["blocks.1.attn:distance:mean"], distance.mean(0)), 1e-5)
        self.assertLessEqual(max_diff(got["blocks.1.attn:distance:std"], distance.std(0)), 1e-5)


if __name__ == "__main__":
    unittest.main()
