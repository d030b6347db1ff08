"""Sparse autoencoders through torchscope-cli (`sae train`, `sae evaluate`) against oracles that
share no code with it:

- the file: Overcomplete's TopKSAE (0.3.0) built from the saved sae_weights.safetensors as read by
  the safetensors library (its encoder Linear: W_enc^T, with b_dec's centring folded into its bias
  b_enc - b_dec W_enc; its dictionary: W_dec, not renormalised; b_dec added to its decoding);
- the evaluation: the eager model with the same weights and a forward hook that splices
  Overcomplete's reconstruction (or zeros) into the layer's output; FVU, L0, each latent's firing
  count, KL divergence, top-1 agreement, cross-entropy and the loss recovered recomputed from those
  outputs in float64.

Models (tests/fixtures/color_model.py): color_cnn.pt on 3 x 40 x 56 images (height != width), whose
features.3 gives 12 maps of 20 x 28, with a folder of class sub-folders named by the model's labels
(the cross-entropy against them); and register_vit.pt, a class token and two register tokens before
a 5 x 7 patch grid, at positions `patches` and `class` (the cross-entropy against the clean
predictions). Batches of 4 images. The vector cache (`sae train --cache`) read by NumPy against the
eager model's forward hooks."""

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
from safetensors.torch import load_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
from color_model import RegisterVit, SETUP, color_model  # noqa: E402

# Overcomplete's package imports its visualisation module (unused here), which still calls
# matplotlib.cm.get_cmap, removed in matplotlib 3.9: the same function under its new name.
import matplotlib  # noqa: E402
import matplotlib.cm  # noqa: E402
if not hasattr(matplotlib.cm, "get_cmap"):
    matplotlib.cm.get_cmap = matplotlib.colormaps.get_cmap
from overcomplete.sae import TopKSAE  # noqa: E402

CLI = os.environ["TORCHSCOPE_CLI"]
FIXTURES = pathlib.Path(os.environ["TORCHSCOPE_FIXTURES_DIR"])
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
TIMEOUT = 900  # the sanitized CLI is several times slower
IMAGES = ["astronaut_a", "disc", "stripes", "astronaut_b"]
# TorchScope runs the scripted model in float32, the oracle the eager one: the figures agree to
# float32 rounding of the activations, carried through a top-k and a softmax.
RELATIVE, ABSOLUTE = 1e-4, 1e-6

torch.set_num_threads(int(THREADS))


def cli(*args):
    return subprocess.run([CLI, *map(str, args), "--device", "cpu", "--threads", THREADS], capture_output=True,
                          text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def model_inputs(model, first, paths):
    """The images as the model saw them in TorchScope: the input of its first layer, grabbed by `run`."""
    batch = []
    with tempfile.TemporaryDirectory() as folder:
        for path in paths:
            out = pathlib.Path(folder) / "input.pt"
            result = cli("run", model, "--input", path, "--grab", f"{first}:in0", "--out", out)
            assert result.returncode == 0, result.stderr
            batch.append(torch.load(out)[f"{first}:in0"])
    return torch.cat(batch)


def overcomplete_sae(folder):
    """Overcomplete's TopKSAE holding the saved SAE, and the b_dec it adds after decoding."""
    cfg = json.loads((folder / "cfg.json").read_text())
    w = load_file(str(folder / "sae_weights.safetensors"))
    sae = TopKSAE(cfg["d_in"], cfg["d_sae"], top_k=cfg["k"], dictionary_params={"normalization": "identity"})
    sae.untied(bias=True, copy_from_dictionary=False)
    with torch.no_grad():
        sae.encoder.weight.copy_(w["W_enc"].T)
        sae.encoder.bias.copy_(w["b_enc"] - w["b_dec"] @ w["W_enc"])
        sae.dictionary._weights.copy_(w["W_dec"])
    sae.eval()
    return sae, w["b_dec"]


def oracle(model, module, x, folder, tokens=None, labels=None):
    """The evaluation recomputed: `tokens` a slice of the token axis ([N, T, D] outputs), else maps."""
    sae, b_dec = overcomplete_sae(folder)
    seen = {}
    hook = module.register_forward_hook(lambda m, i, o: seen.__setitem__("a", o.detach().clone()))
    with torch.no_grad():
        clean = model(x)
    hook.remove()
    a = seen["a"]
    vectors = a.permute(0, 2, 3, 1).reshape(-1, a.shape[1]) if a.dim() == 4 else a[:, tokens].reshape(-1, a.shape[2])
    with torch.no_grad():
        codes = sae.encode(vectors)[1]
        cfg = json.loads((folder / "cfg.json").read_text())
        if cfg.get("architecture") == "batchtopk":
            # BatchTopK at inference, SAELens's JumpReLU form: a latent fires where its pre-activation
            # (Overcomplete's encoder, before the top-k) is above the threshold the file keeps.
            threshold = float(load_file(str(folder / "sae_weights.safetensors"))["threshold"])
            positive = sae.encode(vectors)[0].relu()
            codes = positive * (positive > threshold)
        reconstruction = sae.decode(codes) + b_dec

    def splice(r):
        if a.dim() == 4:
            n, c, h, w = a.shape
            return r.reshape(n, h, w, c).permute(0, 3, 1, 2)
        out = a.clone()
        out[:, tokens] = r.reshape(a.shape[0], -1, a.shape[2])
        return out

    def run_with(value):
        hook = module.register_forward_hook(lambda m, i, o: value)
        with torch.no_grad():
            out = model(x)
        hook.remove()
        return torch.log_softmax(out.double(), 1)

    log_clean = torch.log_softmax(clean.double(), 1)
    log_spliced, log_zero = run_with(splice(reconstruction)), run_with(splice(torch.zeros_like(reconstruction)))
    targets = labels if labels is not None else log_clean.argmax(1)
    ce = {name: float(-lp.gather(1, targets[:, None]).mean())
          for name, lp in (("clean", log_clean), ("spliced", log_spliced), ("zero", log_zero))}
    v = vectors.double()
    active = codes > 0
    return {
        "vectors": v.shape[0],
        "fvu": float(((v - reconstruction.double()) ** 2).sum() / ((v - v.mean(0)) ** 2).sum()),
        "l0": float(active.sum(1).double().mean()),
        "fires": active.sum(0).tolist(),
        "kl_spliced": float((log_clean.exp() * (log_clean - log_spliced)).sum(1).mean()),
        "kl_zero_ablated": float((log_clean.exp() * (log_clean - log_zero)).sum(1).mean()),
        "top1_agreement_spliced": float((log_spliced.argmax(1) == log_clean.argmax(1)).double().mean()),
        "top1_agreement_zero_ablated": float((log_zero.argmax(1) == log_clean.argmax(1)).double().mean()),
        "loss_clean": ce["clean"], "loss_spliced": ce["spliced"], "loss_zero_ablated": ce["zero"],
        # Undefined where zero-ablating costs nothing (or helps, as it can a random model): no share of a
        # cost that is not there is recovered.
        "loss_recovered": ((ce["zero"] - ce["spliced"]) / (ce["zero"] - ce["clean"])
                           if ce["zero"] - ce["clean"] > 1e-9 * max(1.0, abs(ce["clean"])) else None),
    }


def spliced_by_hook(model, module, x, folder, edit, tokens=None, target=None):
    """The eager model with the SAE spliced in at `module`, its latents edited: x + (f' - f) W_dec
    on the vectors the SAE reads, f Overcomplete's codes. `edit`: ("ablate", latents),
    ("scale", latents, factor) or ("steer", latents, amount). With `target`, also the gradient of
    that class's score (summed over the batch) with respect to the first layer's output."""
    sae, b_dec = overcomplete_sae(folder)
    w_dec = load_file(str(folder / "sae_weights.safetensors"))["W_dec"]
    op, latents = edit[0], list(edit[1])

    def hook(m, i, a):
        v = a.permute(0, 2, 3, 1) if a.dim() == 4 else a[:, tokens]
        codes = sae.encode(v.reshape(-1, v.shape[-1]))[1].reshape(*v.shape[:-1], -1)
        chosen = codes[..., latents]
        edited = chosen * 0 if op == "ablate" else chosen * edit[2] if op == "scale" else chosen + edit[2]
        spliced = v + (edited - chosen) @ w_dec[latents]
        if a.dim() == 4:
            return spliced.permute(0, 3, 1, 2)
        out = a.clone()
        out[:, tokens] = spliced
        return out

    handle = module.register_forward_hook(hook)
    try:
        if target is None:
            with torch.no_grad():
                return model(x), None
        first = {}

        def keep(m, i, o):
            o.retain_grad()
            first["o"] = o

        first_hook = model.features[0].register_forward_hook(keep)
        out = model(x)
        out[:, target].sum().backward()
        first_hook.remove()
        return out.detach(), first["o"].grad
    finally:
        handle.remove()


class SaeCase:
    """Trains in setUpClass, in a temporary folder of the class's own."""

    def assertFigure(self, name, actual, expected):
        self.assertIsNotNone(actual, name)
        self.assertTrue(np.isfinite(actual) and np.isfinite(expected), f"{name}: {actual} vs {expected}")
        self.assertLessEqual(abs(actual - expected), ABSOLUTE + RELATIVE * abs(expected),
                             f"{name}: TorchScope {actual}, oracle {expected}")

    def check_evaluation(self, evaluation, expected, against, images=4):
        self.assertEqual(evaluation["vectors"], expected["vectors"])
        self.assertEqual(evaluation["images"], images)
        for key in ("fvu", "l0"):
            self.assertFigure(key, evaluation[key], expected[key])
        self.assertAlmostEqual(evaluation["explained_variance"], 1 - evaluation["fvu"], places=12)
        frequency = np.array(evaluation["latent_frequency"])
        np.testing.assert_allclose(frequency * expected["vectors"], expected["fires"], atol=1e-6)
        self.assertEqual(evaluation["dead_latents"], sum(f == 0 for f in expected["fires"]))
        downstream = evaluation["downstream"]
        self.assertEqual(downstream["loss_against"], against)
        for key in ("kl_spliced", "kl_zero_ablated", "top1_agreement_spliced", "top1_agreement_zero_ablated",
                    "loss_clean", "loss_spliced", "loss_zero_ablated", "loss_recovered"):
            if key == "loss_recovered" and expected[key] is None:
                self.assertIsNone(downstream[key], "zero-ablating costs nothing here: no share is recovered")
            else:
                self.assertFigure(key, downstream[key], expected[key])


    def check_effects(self, measured, folder, scores, module, labels):
        """Each measured latent's effect against the eager model: its part of the reconstruction removed
        at `module` on its top images (Overcomplete's codes, the file's W_dec); `scores(x)` the model's
        class scores, `labels` their names."""
        sae, _ = overcomplete_sae(folder)
        w_dec = load_file(str(folder / "sae_weights.safetensors"))["W_dec"]
        for latent in measured:
            i, images = latent["latent"], [t["image"] for t in latent["top"]]
            x = self.x[images]

            def ablate(m, inputs, out):
                v = out.permute(0, 2, 3, 1)
                code = sae.encode(v.reshape(-1, v.shape[-1]))[1][:, i].reshape(*v.shape[:-1], 1)
                return (v - code * w_dec[i]).permute(0, 3, 1, 2)

            with torch.no_grad():
                before = scores(x).double()
                handle = module.register_forward_hook(ablate)
                after = scores(x).double()
                handle.remove()
            predicted = before.argmax(1, keepdim=True)
            change = (after - before).mean(0)
            with self.subTest(effect=i):
                effect = latent["effect"]
                self.assertFigure("probability_before", effect["probability_before"],
                                  float(before.softmax(1).gather(1, predicted).mean()))
                self.assertFigure("probability_after", effect["probability_after"],
                                  float(after.softmax(1).gather(1, predicted).mean()))
                np.testing.assert_allclose(effect["logit_change"], change.numpy(), rtol=1e-4, atol=1e-5)
                self.assertEqual(effect["supports"], int(change.argmin()))
                self.assertEqual(effect["supports_label"], labels[int(change.argmin())])


class SaeOnColorCnn(SaeCase, unittest.TestCase):
    MODEL = FIXTURES / "color_cnn.pt"
    LABELS = {"astronaut_a": "light", "disc": "red", "stripes": "green", "astronaut_b": "dark"}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        cls.images = cls.dir / "labelled"
        for name, label in cls.LABELS.items():
            (cls.images / label).mkdir(parents=True)
            shutil.copy(FIXTURES / "color" / f"{name}.png", cls.images / label / f"{name}.png")
        cls.out = cls.dir / "saes"
        cls.train = cli("sae", "train", cls.MODEL, "--layer", "features.3", "--layer", "features.0", "--images",
                        cls.images, "--expansion", 4, "--k", 3, "--batch", 128, "--seed", 3, "--batch-images", 4,
                        "--out", cls.out)
        # The folder's images in its order (class folders by name, files by name), as the model saw them.
        cls.paths = sorted(cls.images.glob("*/*.png"))
        cls.labels = torch.tensor([SETUP["labels"].index(p.parent.name) for p in cls.paths])
        cls.x = model_inputs(cls.MODEL, "features.0", cls.paths)
        cls.model = color_model(cls.MODEL)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_two_layers_train_from_one_pass(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        run = json.loads((self.out / "training.json").read_text())
        self.assertEqual(run["images_done"], 4)
        self.assertTrue(run["finished"])
        self.assertEqual(run["layers"], ["features.3", "features.0"])
        sha = hashlib.sha256(self.MODEL.read_bytes()).hexdigest()
        for layer, channels, per_image in (("features.3", 12, 20 * 28), ("features.0", 8, 40 * 56)):
            with self.subTest(layer=layer):
                folder = self.out / layer
                cfg = json.loads((folder / "cfg.json").read_text())
                self.assertEqual((cfg["d_in"], cfg["d_sae"], cfg["k"]), (channels, 4 * channels, 3))
                self.assertEqual(cfg["metadata"]["hook_name"], layer)
                self.assertEqual(cfg["metadata"]["model_sha256"], sha)
                log = (folder / "training_log.csv").read_text().splitlines()
                self.assertEqual(log[0], "step,vectors,loss,mse,aux_loss,fvu,l0,dead_fraction")
                # Every vector of the pass trained on, in whole batches of 128.
                self.assertEqual(len(log) - 1, 4 * per_image // 128)
                self.assertEqual(int(log[-1].split(",")[1]), (4 * per_image // 128) * 128)

    def test_evaluation_equals_the_eager_model_spliced_by_overcomplete(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        out = self.dir / "evaluation.json"
        result = cli("sae", "evaluate", self.MODEL, "--sae", self.out / "features.3", "--images", self.images,
                     "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        evaluation = json.loads(out.read_text())
        self.assertEqual(evaluation["layer"], "features.3")
        expected = oracle(self.model, self.model.features[3], self.x, self.out / "features.3", labels=self.labels)
        self.check_evaluation(evaluation, expected, "folder labels")
        manifest = json.loads((self.dir / "evaluation.manifest.json").read_text())
        self.assertEqual(manifest["command"], "torchscope-cli sae evaluate")

    def test_batchtopk_with_a_number_of_latents_evaluates_as_its_threshold_says(self):
        out = self.dir / "batchtopk"
        train = cli("sae", "train", self.MODEL, "--layer", "features.3", "--images", self.images, "--latents", 20,
                    "--architecture", "batchtopk", "--k", 2, "--batch", 64, "--seed", 5, "--batch-images", 2,
                    "--out", out)
        self.assertEqual(train.returncode, 0, train.stderr)
        cfg = json.loads((out / "features.3" / "cfg.json").read_text())
        self.assertEqual((cfg["architecture"], cfg["d_in"], cfg["d_sae"], cfg["k"]), ("batchtopk", 12, 20, 2))
        threshold = float(load_file(str(out / "features.3" / "sae_weights.safetensors"))["threshold"])
        self.assertGreater(threshold, 0)  # the running mean of the batches' smallest kept activation
        log = (out / "features.3" / "training_log.csv").read_text().splitlines()
        self.assertEqual(len(log) - 1, 4 * 20 * 28 // 64)  # batches of 64, not the default's
        result = cli("sae", "evaluate", self.MODEL, "--sae", out / "features.3", "--images", self.images,
                     "--out", self.dir / "batchtopk.json")
        self.assertEqual(result.returncode, 0, result.stderr)
        evaluation = json.loads((self.dir / "batchtopk.json").read_text())
        expected = oracle(self.model, self.model.features[3], self.x, out / "features.3", labels=self.labels)
        self.check_evaluation(evaluation, expected, "folder labels")
        self.assertNotEqual(evaluation["l0"], 2.0)  # a threshold, not k per vector

    def test_evaluation_of_the_first_images_in_small_batches(self):
        """--max-images, --batch-images and --layer away from their defaults: the evaluation is the oracle's
        on the folder's first three images (in its order), whatever the batches."""
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        out = self.dir / "evaluation3.json"
        result = cli("sae", "evaluate", self.MODEL, "--sae", self.out / "features.3", "--images", self.images,
                     "--max-images", 3, "--batch-images", 2, "--layer", "features.3", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        evaluation = json.loads(out.read_text())
        expected = oracle(self.model, self.model.features[3], self.x[:3], self.out / "features.3",
                          labels=self.labels[:3])
        self.check_evaluation(evaluation, expected, "folder labels", images=3)

    def test_a_resume_asked_otherwise_is_refused(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        result = cli("sae", "train", self.MODEL, "--layer", "features.3", "--layer", "features.0", "--images",
                     self.images, "--batch", 128, "--seed", 3, "--positions", "sample:8", "--resume", "--out",
                     self.out)
        self.assertEqual(result.returncode, 1)
        self.assertIn("training.json' was a run with positions", result.stderr)
        # Another size is another run too.
        result = cli("sae", "train", self.MODEL, "--layer", "features.3", "--layer", "features.0", "--images",
                     self.images, "--batch", 128, "--seed", 3, "--resume", "--out", self.out)
        self.assertEqual(result.returncode, 1)
        self.assertIn("training.json' was a run with sizes [\"x4\"], not [\"x16\"]", result.stderr)
        # Resuming a finished run trains nothing more.
        before = (self.out / "features.3" / "training_log.csv").read_text()
        again = cli("sae", "train", self.MODEL, "--layer", "features.3", "--layer", "features.0", "--images",
                    self.images, "--expansion", 4, "--batch", 128, "--seed", 3, "--resume", "--out", self.out)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("resumed after 4 images", again.stdout)
        self.assertEqual((self.out / "features.3" / "training_log.csv").read_text(), before)

    def test_the_cache_is_numpy_and_holds_the_layers_vectors_in_the_folders_order(self):
        cache, out = self.dir / "cache", self.dir / "epochs"
        train = cli("sae", "train", self.MODEL, "--layer", "features.3", "--layer", "features.0", "--images",
                    self.images, "--expansion", 4, "--k", 3, "--batch", 128, "--seed", 3, "--batch-images", 4,
                    "--matryoshka", "8,24", "--b-dec-init", "geometric-median", "--cache", cache, "--epochs", 3,
                    "--out", out)
        self.assertEqual(train.returncode, 0, train.stderr)
        state = json.loads((cache / "cache.json").read_text())
        self.assertTrue(state["complete"])
        self.assertEqual(sum(state["shard_images"]), 4)
        for layer, module in (("features.3", self.model.features[3]), ("features.0", self.model.features[0])):
            with self.subTest(layer=layer):
                shards = [np.load(cache / layer / f"vectors_{j:05d}.npy") for j in range(len(state["shard_images"]))]
                got = np.concatenate(shards)
                self.assertEqual(got.dtype, np.float32)
                seen = {}
                hook = module.register_forward_hook(lambda m, i, o: seen.__setitem__("a", o.detach()))
                with torch.no_grad():
                    self.model(self.x)
                hook.remove()
                a = seen["a"]  # [4, C, H, W], H != W: each position one C-vector, image by image, row by row
                expected = a.permute(0, 2, 3, 1).reshape(-1, a.shape[1]).numpy()
                self.assertEqual(got.shape, expected.shape)
                np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
                self.assertEqual(state["vectors"][state["of"]["layers"].index(layer)], expected.shape[0])
                # Three epochs of every vector, in whole batches of 128.
                log = (out / layer / "training_log.csv").read_text().splitlines()
                self.assertEqual(len(log) - 1, 3 * expected.shape[0] // 128)
        cfg = json.loads((out / "features.3" / "cfg.json").read_text())
        self.assertEqual(cfg["matryoshka_widths"], [8, 24])
        self.assertEqual(cfg["architecture"], "topk")  # its codes: a TopK SAE's
        # A second run with the same cache runs no model and trains the same SAE.
        again = cli("sae", "train", self.MODEL, "--layer", "features.3", "--layer", "features.0", "--images",
                    self.images, "--expansion", 4, "--k", 3, "--batch", 128, "--seed", 3, "--batch-images", 4,
                    "--matryoshka", "8,24", "--b-dec-init", "geometric-median", "--cache", cache, "--epochs", 3,
                    "--out", self.dir / "again")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("read the vectors from the cache", again.stdout)
        first = load_file(str(out / "features.3" / "sae_weights.safetensors"))
        second = load_file(str(self.dir / "again" / "features.3" / "sae_weights.safetensors"))
        for key in first:
            self.assertTrue(torch.equal(first[key], second[key]), key)
        # Another layer list for the same cache: said, and written anew.
        other = cli("sae", "train", self.MODEL, "--layer", "features.3", "--images", self.images, "--batch", 128,
                    "--cache", cache, "--out", self.dir / "other")
        self.assertEqual(other.returncode, 0, other.stderr)
        self.assertIn("held the vectors of another model, layers, folder, positions or seed: written anew",
                      other.stderr)
        self.assertEqual(json.loads((cache / "cache.json").read_text())["of"]["layers"], ["features.3"])

    def test_a_recording_over_the_folder_with_a_latent_ablated_equals_an_eager_hook(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        folder = self.out / "features.3"
        out = self.dir / "recorded.pt"
        result = cli("record", self.MODEL, "--input", self.images, "--grab", "classifier.2", "--edit",
                     f"features.3:sae:{folder}:ablate:0,1,2", "--reduce", "none", "--batch", 3, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        recorded = torch.load(out)
        got = recorded["classifier.2"]  # [images, 5], in the folder's order
        expected, _ = spliced_by_hook(self.model, self.model.features[3], self.x, folder, ("ablate", [0, 1, 2]))
        self.assertEqual(tuple(got.shape), tuple(expected.shape))
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)
        with torch.no_grad():
            clean = self.model(self.x)
        self.assertGreater(float((expected - clean).abs().max()), 1e-3, "the ablation changes nothing here")

    def test_bad_training_options_say_what_is_wrong(self):
        for options, message in (
                (("--epochs", 2), "2 epochs read the vectors again from a cache on disk: give a folder for it (--cache)"),
                (("--matryoshka", "8,x"), "--matryoshka '8,x': expected prefix widths such as 512,2048"),
                (("--matryoshka", "30,20"), "Matryoshka widths must rise"),
                (("--matryoshka", "48"), "stay below d_sae (48)"),
                (("--b-dec-init", "median"), "--b-dec-init: median not in {mean,geometric-median}")):
            with self.subTest(options=options):
                out = self.dir / "refused"
                result = cli("sae", "train", self.MODEL, "--layer", "features.3", "--images", self.images,
                             "--expansion", 4, "--batch", 128, *options, "--out", out)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn(message, result.stderr)
                self.assertFalse((out / "features.3" / "sae_weights.safetensors").exists())

    def run_edit(self, *edit_and_grabs):
        out = self.dir / "run.pt"
        result = cli("run", self.MODEL, *[a for p in self.paths for a in ("--input", p)], *edit_and_grabs,
                     "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return torch.load(out)

    def test_a_splice_that_changes_no_code_changes_nothing(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        clean = self.run_edit()["output"]
        kept = self.run_edit("--edit", f"features.3:sae:{self.out / 'features.3'}:scale:0,5,9:1")["output"]
        self.assertTrue(torch.equal(clean, kept), (clean - kept).abs().max())

    def test_latent_edits_equal_an_eager_hook_on_the_same_weights(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        folder = self.out / "features.3"
        # The latents that fire most on these images, so that every edit changes something.
        evaluation = self.dir / "frequency.json"
        self.assertEqual(cli("sae", "evaluate", self.MODEL, "--sae", folder, "--images", self.images, "--out",
                             evaluation).returncode, 0)
        frequency = json.loads(evaluation.read_text())["latent_frequency"]
        busiest = sorted(range(len(frequency)), key=lambda i: -frequency[i])[:2]
        clean = self.run_edit()["output"]
        for edit in (("ablate", busiest), ("scale", busiest, 3.0), ("steer", busiest[:1], 2.5)):
            with self.subTest(edit=edit[0]):
                text = f"features.3:sae:{folder}:{edit[0]}:{','.join(map(str, edit[1]))}"
                if len(edit) == 3:
                    text += f":{edit[2]}"
                got = self.run_edit("--edit", text)["output"]
                expected, _ = spliced_by_hook(self.model, self.model.features[3], self.x, folder, edit)
                self.assertGreater((expected - clean).abs().max(), 1e-3, "the edit should change the output")
                self.assertLess((got - expected).abs().max(), ABSOLUTE + RELATIVE * expected.abs().max())
        # Gradients see the splice: the first layer's gradient of class 1's score with the ablation in.
        text = f"features.3:sae:{folder}:ablate:{','.join(map(str, busiest))}"
        got = self.run_edit("--edit", text, "--grab", "features.0:grad", "--target", "1")["features.0:grad"]
        _, expected = spliced_by_hook(self.model, self.model.features[3], self.x, folder, ("ablate", busiest),
                                      target=1)
        self.assertLess((got - expected).abs().max(), ABSOLUTE + RELATIVE * expected.abs().max())

    def test_latent_pages_equal_codes_from_overcomplete_and_an_eager_ablation(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        folder = self.out / "features.3"
        out = self.dir / "latents.json"
        result = cli("sae", "latents", self.MODEL, "--sae", folder, "--images", self.images, "--top", 3,
                     "--latents", "0,7,21", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        pages = json.loads(out.read_text())
        self.assertEqual(pages["grid"], [20, 28])
        self.assertEqual(pages["images"], [str(p) for p in self.paths])
        # The oracle's codes: the eager layer's maps encoded by Overcomplete, [N, 20 * 28, d_sae].
        sae, b_dec = overcomplete_sae(folder)
        seen = {}
        hook = self.model.features[3].register_forward_hook(lambda m, i, o: seen.__setitem__("a", o.detach()))
        with torch.no_grad():
            self.model(self.x)
            hook.remove()
            a = seen["a"]
            codes = sae.encode(a.permute(0, 2, 3, 1).reshape(-1, 12))[1].reshape(4, 20 * 28, -1)
        edges = np.array(pages["histogram_edges"])
        np.testing.assert_allclose(np.log10(edges), np.linspace(-3, 3, 49), atol=1e-12)
        for latent in pages["latents"]:
            i = latent["latent"]
            c = codes[:, :, i]
            with self.subTest(latent=i):
                self.assertEqual(latent["fires"], int((c > 0).sum()))
                self.assertFigure("max_activation", latent["max_activation"], float(c.max()))
                active = c[c > 0].double().numpy()
                if len(active):
                    self.assertFigure("mean_active", latent["mean_active"], float(active.mean()))
                bins = np.clip(np.floor((np.log10(active) + 3) * 8), 0, 47).astype(int)
                self.assertEqual(latent["histogram"], np.bincount(bins, minlength=48).tolist())
                # The images with the largest peaks, largest first. The two astronaut crops overlap, so
                # their peaks can tie exactly: then either order is right, and each entry is held to its
                # own image's peak.
                best = c.max(1).values
                expected_values = sorted((float(v) for v in best if v > 0), reverse=True)[:3]
                self.assertEqual(len(latent["top"]), len(expected_values))
                self.assertEqual(len({t["image"] for t in latent["top"]}), len(latent["top"]))
                for t, value in zip(latent["top"], expected_values):
                    self.assertFigure("top value", t["value"], value)
                    self.assertFigure("its image's peak", t["value"], float(best[t["image"]]))
                    self.assertFigure("the value where it peaks", float(c[t["image"], t["row"] * 28 + t["column"]]),
                                      value)
                    np.testing.assert_allclose(np.array(t["map"]), c[t["image"]].reshape(20, 28).numpy(),
                                               rtol=RELATIVE, atol=ABSOLUTE)
        # Effects: the latent's part of the reconstruction removed on its top images, in the eager model.
        measured = [latent for latent in pages["latents"] if "effect" in latent]
        self.assertEqual(sorted(latent["latent"] for latent in measured), [0, 7, 21])
        self.check_effects(measured, folder, self.model, self.model.features[3], SETUP["labels"])

    def test_latent_pages_of_the_first_images_without_effects(self):
        """sae latents with --max-images, --batch-images, --layer and --effects 0 away from their defaults:
        the pages count the first two images alone (the oracle's codes of those), and no effect is measured."""
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        folder = self.out / "features.3"
        out = self.dir / "latents2.json"
        result = cli("sae", "latents", self.MODEL, "--sae", folder, "--images", self.images, "--top", 2,
                     "--max-images", 2, "--batch-images", 1, "--layer", "features.3", "--effects", 0, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        pages = json.loads(out.read_text())
        self.assertEqual(pages["images"], [str(p) for p in self.paths[:2]])
        sae, _ = overcomplete_sae(folder)
        seen = {}
        hook = self.model.features[3].register_forward_hook(lambda m, i, o: seen.__setitem__("a", o.detach()))
        with torch.no_grad():
            self.model(self.x[:2])
        hook.remove()
        codes = sae.encode(seen["a"].permute(0, 2, 3, 1).reshape(-1, 12))[1].reshape(2, 20 * 28, -1)
        self.assertEqual(len(pages["latents"]), codes.shape[2])
        for latent in pages["latents"]:
            c = codes[:, :, latent["latent"]]
            self.assertEqual(latent["fires"], int((c > 0).sum()), latent["latent"])
            self.assertNotIn("effect", latent)
            self.assertLessEqual(len(latent["top"]), 2)
            self.assertTrue(all(t["image"] < 2 for t in latent["top"]))

    def test_bad_input_says_what_is_wrong(self):
        empty = self.dir / "empty"
        empty.mkdir(exist_ok=True)
        result = cli("sae", "evaluate", self.MODEL, "--sae", empty, "--images", self.images, "--out",
                     self.dir / "x.json")
        self.assertEqual(result.returncode, 1)
        self.assertIn("is not a saved SAE: it has no cfg.json", result.stderr)
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        result = cli("sae", "evaluate", self.MODEL, "--sae", self.out / "features.3", "--layer", "features.0",
                     "--images", self.images, "--out", self.dir / "x.json")
        self.assertEqual(result.returncode, 1)
        self.assertIn("'features.0' gives vectors of 8 values", result.stderr)
        self.assertFalse((self.dir / "x.json").exists())
        result = cli("sae", "train", self.MODEL, "--layer", "features.3", "--images", self.images, "--positions",
                     "class", "--out", self.dir / "class")
        self.assertEqual(result.returncode, 1)
        self.assertIn("positions 'class' are a transformer's tokens", result.stderr)
        result = cli("run", self.MODEL, "--input", self.paths[0], "--edit",
                     f"features.3:sae:{self.out / 'features.3'}:ablate:48", "--out", self.dir / "x.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("latent 48 is out of range", result.stderr)
        result = cli("run", self.MODEL, "--input", self.paths[0], "--edit",
                     f"features.0:sae:{self.out / 'features.3'}:ablate:1", "--out", self.dir / "x.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("the SAE reads vectors of 12 values, but this output has 8 channels", result.stderr)


class TwoHeads(torch.nn.Module):
    """The colour CNN's features and classifier with a second head before it: (region [N, 3], classes
    [N, 5]), as a multi-task net returns them. The default scores are the first [N, C >= 2] element,
    the region's; --scores 1 picks the classes."""

    def __init__(self, cnn):
        super().__init__()
        self.features, self.classifier = cnn.features, cnn.classifier
        torch.manual_seed(5)
        self.region = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(12, 3))

    def forward(self, x):
        f = self.features(x)
        return self.region(f), self.classifier(f)


class Element(torch.nn.Module):
    """One element of a tuple model's output, for the oracle (whose hooks stay on the model's modules)."""

    def __init__(self, model, index):
        super().__init__()
        self.model, self.index = model, index

    def forward(self, x):
        return self.model(x)[self.index]


class SaeOnTwoHeads(SaeCase, unittest.TestCase):
    """sae evaluate and sae latents read the scores where --scores points (a .pt2 of a two-head model,
    its setup from --preprocess, its class names from --labels in an order of their own), not the
    default element; the default still takes the first [N, C >= 2] element."""
    # --labels in another order than color_cnn's: the folder's labels are their indices in this list.
    NAMES = ["dark", "light", "blue", "green", "red"]

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        cls.images = cls.dir / "labelled"
        for name, label in SaeOnColorCnn.LABELS.items():
            (cls.images / label).mkdir(parents=True)
            shutil.copy(FIXTURES / "color" / f"{name}.png", cls.images / label / f"{name}.png")
        cls.paths = sorted(cls.images.glob("*/*.png"))
        cls.x = model_inputs(SaeOnColorCnn.MODEL, "features.0", cls.paths)
        cls.model = TwoHeads(color_model(SaeOnColorCnn.MODEL)).eval()
        cls.file = cls.dir / "two_heads.pt2"
        program = torch.export.export(cls.model, (cls.x,), dynamic_shapes=({0: torch.export.Dim("batch", max=64)},))
        torch.export.save(program, cls.file)
        cls.setup = cls.dir / "setup.json"
        cls.setup.write_text(json.dumps({"preprocess": SETUP["preprocess"]}))
        cls.names = cls.dir / "names.txt"
        cls.names.write_text("\n".join(cls.NAMES) + "\n")
        cls.common = ["--images", cls.images, "--preprocess", cls.setup]
        cls.train = cli("sae", "train", cls.file, "--layer", "features.3", *cls.common, "--expansion", 2, "--k", 2,
                        "--batch", 128, "--seed", 1, "--out", cls.dir / "saes")
        cls.sae = cls.dir / "saes" / "features.3"

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def evaluate(self, name, *options):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        out = self.dir / f"{name}.json"
        result = cli("sae", "evaluate", self.file, "--sae", self.sae, *self.common, *options, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(out.read_text())

    def test_evaluation_takes_the_scores_element_given(self):
        evaluation = self.evaluate("classes", "--scores", 1, "--labels", self.names)
        labels = torch.tensor([self.NAMES.index(p.parent.name) for p in self.paths])
        expected = oracle(Element(self.model, 1), self.model.features[3], self.x, self.sae, labels=labels)
        self.check_evaluation(evaluation, expected, "folder labels")
        manifest = json.loads((self.dir / "classes.manifest.json").read_text())
        self.assertEqual(manifest["settings"]["scores"], "1")

    def test_evaluation_by_default_takes_the_first_class_scores(self):
        # The region head has 3 classes: the folder's labels (up to 4) do not fit, so the loss is
        # against the clean predictions.
        evaluation = self.evaluate("region", "--labels", self.names)
        expected = oracle(Element(self.model, 0), self.model.features[3], self.x, self.sae)
        self.check_evaluation(evaluation, expected, "clean predictions")

    def test_latent_effects_are_on_the_scores_element_given(self):
        self.assertEqual(self.train.returncode, 0, self.train.stderr)
        out = self.dir / "latents.json"
        result = cli("sae", "latents", self.file, "--sae", self.sae, *self.common, "--scores", 1, "--labels",
                     self.names, "--top", 4, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        pages = json.loads(out.read_text())
        measured = [latent for latent in pages["latents"] if "effect" in latent]
        self.assertTrue(measured, "no latent's effect was measured")
        self.check_effects(measured, self.sae, Element(self.model, 1), self.model.features[3], self.NAMES)


class IgnoresItsFirstLayer(torch.nn.Module):
    """Scores of about 1e-3 that its layer `conv` moves by a few float32 steps (1e-8 of a score):
    zero-ablating it costs a loss of about 1e-10, below any measurable cost."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 1)
        self.head = torch.nn.Linear(3, 5)

    def forward(self, x):
        a = self.conv(x)
        s = self.head(x.mean((2, 3)))
        # The layer nudges each class by its probability: ablated, the top class loses a hair.
        return 1e-3 * s + 1e-8 * a.abs().mean((1, 2, 3)).unsqueeze(1) * s.softmax(1)


class SaeOnALayerThatCostsNothing(unittest.TestCase):
    def test_no_share_of_a_cost_below_rounding_is_recovered(self):
        with tempfile.TemporaryDirectory() as folder:
            folder = pathlib.Path(folder)
            model = folder / "ignores.pt"
            torch.jit.save(torch.jit.script(IgnoresItsFirstLayer().eval()), str(model))
            images = folder / "images"
            images.mkdir()
            for name in IMAGES:
                shutil.copy(FIXTURES / "color" / f"{name}.png", images / f"{name}.png")
            train = cli("sae", "train", model, "--layer", "conv", "--images", images, "--preprocess", "none",
                        "--expansion", 2, "--k", 2, "--batch", 256, "--tokens", 4096, "--out", folder / "saes")
            self.assertEqual(train.returncode, 0, train.stderr)
            out = folder / "evaluation.json"
            result = cli("sae", "evaluate", model, "--sae", folder / "saes" / "conv", "--images", images,
                         "--preprocess", "none", "--out", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("zero-ablating 'conv' costs the model nothing measurable here", result.stderr)
            self.assertIn("loss recovered undefined", result.stdout)
            # A cost there is (the layer nudges the top class), but it is a float32 step's, not a cost.
            downstream = json.loads(out.read_text())["downstream"]
            self.assertGreater(downstream["loss_zero_ablated"], downstream["loss_clean"])
            self.assertIsNone(downstream["loss_recovered"])
            gap = downstream["loss_zero_ablated"] - downstream["loss_clean"]
            self.assertLess(abs(gap), 1e-9 * downstream["loss_clean"])
            self.assertGreaterEqual(downstream["kl_zero_ablated"], 0.0)
            self.assertGreaterEqual(downstream["kl_spliced"], 0.0)


class SaeOnRegisterVit(SaeCase, unittest.TestCase):
    MODEL = FIXTURES / "register_vit.pt"
    LAYER = "encoder.layers.1"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        cls.paths = [FIXTURES / "color" / f"{name}.png" for name in IMAGES]
        cls.images = cls.dir / "images"
        cls.images.mkdir()
        for path in cls.paths:
            shutil.copy(path, cls.images / path.name)
        cls.paths = sorted(cls.images.glob("*.png"))
        cls.x = model_inputs(cls.MODEL, "conv_proj", cls.paths)
        cls.model = RegisterVit().eval()
        cls.model.load_state_dict(torch.jit.load(str(cls.MODEL)).state_dict())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_positions(self, positions, tokens, batch, vectors):
        out = self.dir / positions
        train = cli("sae", "train", self.MODEL, "--layer", self.LAYER, "--images", self.images, "--positions",
                    positions, "--expansion", 2, "--k", 4, "--batch", batch, "--out", out)
        self.assertEqual(train.returncode, 0, train.stderr)
        folder = out / self.LAYER
        cfg = json.loads((folder / "cfg.json").read_text())
        self.assertEqual(cfg["metadata"]["positions"], positions)
        log = (folder / "training_log.csv").read_text().splitlines()
        self.assertEqual(int(log[-1].split(",")[1]), vectors // batch * batch)
        path = self.dir / f"{positions}.json"
        result = cli("sae", "evaluate", self.MODEL, "--sae", folder, "--images", self.images, "--out", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        evaluation = json.loads(path.read_text())
        self.assertEqual(evaluation["positions"], positions)
        expected = oracle(self.model, self.model.encoder.layers[1], self.x, folder, tokens=tokens)
        self.assertEqual(expected["vectors"], vectors)
        self.check_evaluation(evaluation, expected, "clean predictions")

    def test_a_run_from_the_cache_keeps_the_tokens_layout(self):
        cache = self.dir / "token_cache"
        for out in ("from_model", "from_cache"):
            train = cli("sae", "train", self.MODEL, "--layer", self.LAYER, "--images", self.images, "--positions",
                        "patches", "--expansion", 2, "--k", 4, "--batch", 35, "--cache", cache, "--out",
                        self.dir / out)
            self.assertEqual(train.returncode, 0, train.stderr)
        self.assertIn("read the vectors from the cache", train.stdout)
        cfg = json.loads((self.dir / "from_cache" / self.LAYER / "cfg.json").read_text())
        self.assertEqual(cfg["metadata"]["prefix_tokens"], 3)
        # The cache holds the patch tokens only: 35 a image, the eager model's.
        seen = {}
        hook = self.model.encoder.layers[1].register_forward_hook(lambda m, i, o: seen.__setitem__("a", o.detach()))
        with torch.no_grad():
            self.model(self.x)
        hook.remove()
        got = np.load(cache / self.LAYER / "vectors_00000.npy")
        np.testing.assert_allclose(got, seen["a"][:, 3:].reshape(-1, seen["a"].shape[2]).numpy(), rtol=1e-4,
                                   atol=1e-5)

    def test_patches_leave_the_class_and_register_tokens_alone(self):
        self.check_positions("patches", slice(3, None), 35, 4 * 35)
        folder = self.dir / "patches" / self.LAYER
        self.assertEqual(json.loads((folder / "cfg.json").read_text())["metadata"]["prefix_tokens"], 3)
        # Spliced back with two latents ablated: only the patch tokens change, as an eager hook has it.
        out = self.dir / "run.pt"
        result = cli("run", self.MODEL, *[a for p in self.paths for a in ("--input", p)], "--edit",
                     f"{self.LAYER}:sae:{folder}:ablate:0,1,2,3", "--grab", self.LAYER, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        expected, _ = spliced_by_hook(self.model, self.model.encoder.layers[1], self.x, folder,
                                      ("ablate", [0, 1, 2, 3]), tokens=slice(3, None))
        self.assertLess((got["output"] - expected).abs().max(), ABSOLUTE + RELATIVE * expected.abs().max())
        # Steered (a latent's direction added whether it fires or not): the class and register tokens at
        # the layer stay as they were, every patch token moves.
        clean_out = self.dir / "clean.pt"
        self.assertEqual(cli("run", self.MODEL, *[a for p in self.paths for a in ("--input", p)], "--grab",
                             self.LAYER, "--out", clean_out).returncode, 0)
        clean = torch.load(clean_out)[self.LAYER]
        result = cli("run", self.MODEL, *[a for p in self.paths for a in ("--input", p)], "--edit",
                     f"{self.LAYER}:sae:{folder}:steer:5:2.5", "--grab", self.LAYER, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        self.assertTrue(torch.equal(got[self.LAYER][:, :3], clean[:, :3]))
        self.assertGreater((got[self.LAYER][:, 3:] - clean[:, 3:]).abs().amin(), 0)
        expected, _ = spliced_by_hook(self.model, self.model.encoder.layers[1], self.x, folder, ("steer", [5], 2.5),
                                      tokens=slice(3, None))
        self.assertLess((got["output"] - expected).abs().max(), ABSOLUTE + RELATIVE * expected.abs().max())

    def test_the_class_token(self):
        self.check_positions("class", slice(0, 1), 2, 4)


if __name__ == "__main__":
    unittest.main()
