"""Network dissection through torchscope-cli (`concepts make`, `dissect`) against oracles that share no
code with it:

- IoU: NetDissect-Lite's procedure transcribed in NumPy on the eager model's activations (forward
  hooks): each unit's threshold np.quantile(values, 1 - 0.005) over the set, each map upsampled by
  PIL's bilinear resize (mode 'F', as NetDissect-Lite's imresize), thresholded, and its pixels
  counted against every concept's masks (read by PIL) over the set;
- INVERT: scikit-learn's roc_auc_score and SciPy's mannwhitneyu (alternative 'greater', method
  'asymptotic') of each unit's mean per image;
- a hand-set model (1 x 1 convolutions whose channels respond to red, green, blue and to red or
  blue) on the synthetic set, whose labels are known;
- the masks of `concepts make` against the colours of its own pixels.

Shapes: color_cnn.pt (3 x 40 x 56 images, features.3: 12 maps of 20 x 28, upsampled to 40 x 56),
register_vit.pt's tokens (a class and two register tokens before a 5 x 7 patch grid), an SAE's
latents and a probe's directions on features.3; batches of 4 images."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
from color_model import MEAN, STD, RegisterVit, color_model  # noqa: E402

CLI = os.environ["TORCHSCOPE_CLI"]
FIXTURES = pathlib.Path(os.environ["TORCHSCOPE_FIXTURES_DIR"])
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
TIMEOUT = 900  # the sanitized CLI is several times slower
QUANTILE = 0.005
CONCEPTS = ["red", "green", "blue", "yellow", "purple", "circle", "square", "triangle", "star", "stripes",
            "checker", "dots"]
# TorchScope's maps are float32 from the scripted model, the oracle's from the eager one: a pixel whose
# upsampled value lies within this of its unit's threshold may fall either side.
BAND = 1e-5

torch.set_num_threads(int(THREADS))


def cli(*args):
    return subprocess.run([CLI, *map(str, args), "--device", "cpu", "--threads", THREADS], capture_output=True,
                          text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def make(*args):
    """torchscope-cli concepts make (which opens no model)."""
    return subprocess.run([CLI, "concepts", "make", *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def read_set(root):
    """The set's images [N, H, W, 3] in 0..1 and masks [N, K, H, W] (bool), in TorchScope's order."""
    names = sorted(p.stem for p in (root / "images").glob("*.png"))
    images = np.stack([np.asarray(Image.open(root / "images" / f"{n}.png").convert("RGB"), np.float32) / 255
                       for n in names])
    masks = np.zeros((len(names), len(CONCEPTS)) + images.shape[1:3], bool)
    for k, concept in enumerate(CONCEPTS):
        for i, n in enumerate(names):
            path = root / "masks" / concept / f"{n}.png"
            if path.exists():
                masks[i, k] = np.asarray(Image.open(path)) > 0
    return names, images, masks


def hooked(model, module, x, batch=4):
    seen = []
    hook = module.register_forward_hook(lambda m, i, o: seen.append(o.detach().clone()))
    with torch.no_grad():
        for start in range(0, len(x), batch):
            model(x[start:start + batch])
    hook.remove()
    return torch.cat(seen)


def netdissect(acts, masks, tallied=None):
    """NetDissect-Lite's quantile and tally (feature_operation.py) on maps [N, U, h, w] and masks
    [N, K, H, W]: thresholds, and per unit and concept the intersection and the unit's pixels, each with
    the pixels within BAND of the threshold that may count either way. `tallied`: the images counted
    (all by default); the thresholds are the whole set's."""
    n, units = acts.shape[:2]
    height, width = masks.shape[2:]
    thresholds = np.array([np.quantile(acts[:, u].ravel(), 1 - QUANTILE) for u in range(units)])
    tallied = np.ones(n, bool) if tallied is None else tallied
    inter, unsure_inter = np.zeros((units, masks.shape[1])), np.zeros((units, masks.shape[1]))
    area, unsure_area = np.zeros(units), np.zeros(units)
    for i in np.flatnonzero(tallied):
        for u in range(units):
            t = thresholds[u]
            fmap = acts[i, u].astype(np.float32)
            if fmap.max() < t - BAND:
                continue
            up = np.asarray(Image.fromarray(fmap, mode="F").resize((width, height), Image.BILINEAR), np.float64)
            on, near = up > t, np.abs(up - t) <= BAND * max(1.0, abs(t))
            area[u] += on.sum()
            unsure_area[u] += near.sum()
            inter[u] += masks[i][:, on].sum(1)
            unsure_inter[u] += masks[i][:, near].sum(1)
    return thresholds, inter, unsure_inter, area, unsure_area


class DissectTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp())
        cls.set = cls.tmp / "concepts"
        result = make("--out", cls.set, "--images", 48, "--seed", 5, "--size", "40x56")
        assert result.returncode == 0, result.stderr
        cls.names, cls.images, cls.masks = read_set(cls.set)
        cls.model = color_model(FIXTURES / "color_cnn.pt")
        mean, std = torch.tensor(MEAN).view(1, 3, 1, 1), torch.tensor(STD).view(1, 3, 1, 1)
        cls.x = (torch.from_numpy(cls.images).permute(0, 3, 1, 2) - mean) / std

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def dissect(self, model, *args, out="d.json"):
        path = self.tmp / out
        result = cli("dissect", model, "--concepts", self.set, "--batch-images", 4, *args, "--out", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(path.read_text()) if out.endswith(".json") else path.read_text()

    def check_iou(self, layer, acts, masks, iou_threshold=0.04):
        """Every unit's IoU with every concept against the NumPy transcription."""
        thresholds, inter, unsure_inter, area, unsure_area = netdissect(acts, masks)
        concept_pixels = masks.sum((0, 2, 3))
        self.assertEqual(len(layer["units"]), acts.shape[1])
        for unit in layer["units"]:
            u = unit["unit"]
            self.assertTrue(np.isfinite(unit["threshold"]))
            np.testing.assert_allclose(unit["threshold"], thresholds[u], rtol=1e-5, atol=1e-6)
            self.assertEqual(len(unit["iou"]), int((concept_pixels > 0).sum()))
            scores = []
            for entry in unit["iou"]:
                k = CONCEPTS.index(entry["concept"])
                self.assertEqual(entry["concept_pixels"], concept_pixels[k])
                self.assertLessEqual(abs(entry["unit_pixels"] - area[u]), unsure_area[u], (u, entry))
                self.assertLessEqual(abs(entry["intersection"] - inter[u, k]), unsure_inter[u, k], (u, entry))
                union = entry["unit_pixels"] + entry["concept_pixels"] - entry["intersection"]
                self.assertAlmostEqual(entry["iou"], entry["intersection"] / union if union else 0.0, places=12)
                scores.append(entry["iou"])
            self.assertEqual(scores, sorted(scores, reverse=True))
            self.assertEqual(unit["interpretable_iou"], scores[0] > iou_threshold)
        return thresholds

    def check_invert(self, layer, pooled, labels):
        """Every unit's AUC and p against scikit-learn and SciPy; Bonferroni over units x concepts."""
        scored = [k for k in range(labels.shape[1]) if 0 < labels[:, k].sum() < len(labels)]
        tests = pooled.shape[1] * len(scored)
        for unit in layer["units"]:
            u = unit["unit"]
            self.assertEqual(len(unit["invert"]), len(scored))
            for entry in unit["invert"]:
                k = CONCEPTS.index(entry["concept"])
                auc = roc_auc_score(labels[:, k], pooled[:, u])
                p = mannwhitneyu(pooled[labels[:, k], u], pooled[~labels[:, k], u], alternative="greater",
                                 method="asymptotic").pvalue
                self.assertAlmostEqual(entry["auc"], auc, places=9, msg=(u, entry))
                np.testing.assert_allclose(entry["p_uncorrected"], p, rtol=1e-7, atol=1e-300)
                np.testing.assert_allclose(entry["p"], min(1.0, p * tests), rtol=1e-7, atol=1e-300)
            aucs = [e["auc"] for e in unit["invert"]]
            self.assertEqual(aucs, sorted(aucs, reverse=True))


class ConceptSetTest(DissectTestCase):
    def test_masks_are_the_pixels_of_their_concepts(self):
        colours = {"red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 70, 220), "yellow": (235, 210, 30),
                   "purple": (140, 40, 180)}
        pixels = (self.images * 255).round()
        for k, (name, rgb) in enumerate(colours.items()):
            near = (np.abs(pixels - np.array(rgb)) <= 18).all(-1)
            self.assertTrue((near == self.masks[:, k]).all(), name)
        # Every coloured pixel lies on a shape; every shape's pixel is its object's colour or dark grey.
        shapes = self.masks[:, 5:9].any(1)
        self.assertTrue((self.masks[:, :5].any(1) <= shapes).all())
        dark = (pixels == 40).all(-1)
        self.assertTrue((shapes <= (self.masks[:, :5].any(1) | dark)).all())
        # Textured pixels are dark or coloured; a solid shape has no dark pixel.
        self.assertTrue((dark <= self.masks[:, 9:].any(1)).all())
        self.assertGreater(self.masks[:, 9:].any((0, 2, 3)).sum(), 2)
        self.assertTrue((self.masks.any((2, 3)).sum(0) > 0).all(), "every concept is in some image")

    def test_the_same_seed_draws_the_same_set(self):
        again = self.tmp / "again"
        self.assertEqual(make("--out", again, "--images", 3, "--seed", 5, "--size", "40x56")
                         .returncode, 0)
        for path in (again / "images").glob("*.png"):
            self.assertEqual(path.read_bytes(), (self.set / "images" / path.name).read_bytes())
        other = self.tmp / "other"
        self.assertEqual(make("--out", other, "--images", 3, "--seed", 6, "--size", "40x56")
                         .returncode, 0)
        self.assertNotEqual((other / "images" / "00000.png").read_bytes(),
                            (self.set / "images" / "00000.png").read_bytes())
        refused = make("--out", again, "--images", 3)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("exists and is not an empty folder", refused.stderr)


class RedOrBlue(nn.Module):
    """The three colour channels and a fourth, red's plus blue's, each scaled to about 1 on its colour."""

    def forward(self, c):
        return torch.cat([c, c[:, :1] / 0.42 + c[:, 2:3] / 0.27], 1)


class HandSetModel(nn.Module):
    """1 x 1 convolutions on 0..1 RGB: channel 0 responds to red, 1 to green, 2 to blue (r - g - b - 0.2 and
    so on: none of the other colours, grey or the textures' dark grey reaches 0), 3 to red or blue."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.relu = nn.ReLU()
        self.units = RedOrBlue()
        with torch.no_grad():
            self.conv.weight.copy_(torch.tensor([[1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
                                   .view(3, 3, 1, 1))
            self.conv.bias.fill_(-0.2)

    def forward(self, x):
        return self.units(self.relu(self.conv(x)))


class HandSetModelTest(DissectTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.hand = cls.tmp / "hand.pt"
        torch.jit.save(torch.jit.script(HandSetModel().eval()), str(cls.hand),
                       _extra_files={"torchscope.json": json.dumps({"preprocess": {}})})

    def test_the_red_channel_is_red_by_iou_and_by_auc(self):
        result = self.dissect(self.hand, "--layer", "units", "--top", 12, "--top-images", 5)
        layer = result["layers"][0]
        # The transcription and scikit-learn / SciPy on maps with many ties (every pixel of no colour is 0).
        with torch.no_grad():
            acts = HandSetModel().eval()(torch.from_numpy(self.images).permute(0, 3, 1, 2)).numpy()
        self.check_iou(layer, acts, self.masks)
        self.check_invert(layer, acts.astype(np.float64).mean((2, 3)), self.masks.any((2, 3)))
        area = self.masks.sum((0, 2, 3))
        for unit, colour in ((0, "red"), (1, "green"), (2, "blue")):
            entry = layer["units"][unit]
            best = entry["iou"][0]
            self.assertEqual(best["concept"], colour)
            # The unit's region is the top 0.5 % of its values: it covers at most that share of the set,
            # so the IoU it allows is its pixels / the colour's. Its region lies on the colour.
            bound = best["unit_pixels"] / area[CONCEPTS.index(colour)]
            self.assertGreater(best["iou"], 0.98 * bound)
            # Shapes and textures overlap it only through the colour's own objects.
            self.assertGreater(best["iou"], 1.5 * entry["iou"][1]["iou"])
            self.assertEqual(entry["invert"][0]["concept"], colour)
            self.assertGreater(entry["invert"][0]["auc"], 0.99)
            self.assertLess(entry["invert"][0]["p"], 1e-6)
            others = [e for e in entry["invert"] if e["category"] != "color"]
            self.assertTrue(all(abs(e["auc"] - 0.5) < 0.3 for e in others), others)
        # Each unit's top images: those of the largest maximum, with the map of the unit on each
        # (rows of the grid's width: the 40 x 56 images themselves through 1 x 1 convolutions).
        peaks = acts.max((2, 3))
        for unit in layer["units"]:
            u, top = unit["unit"], unit["top_images"]
            self.assertEqual(len(top), 5)
            np.testing.assert_allclose([t["value"] for t in top], np.sort(peaks[:, u])[::-1][:5], rtol=1e-6)
            for t in top:
                self.assertEqual(pathlib.Path(t["path"]).stem, self.names[t["image"]])
                np.testing.assert_allclose(np.array(t["map"], np.float32), acts[t["image"], u], rtol=1e-5,
                                           atol=1e-6)
        self.assertEqual(layer["interpretable"]["iou"], 4)
        counts = {c["category"]: c["iou"] for c in layer["categories"]}
        self.assertEqual(sum(counts.values()), 4)
        self.assertGreaterEqual(counts["color"], 3)

    def test_the_formula_search_finds_a_planted_or(self):
        # A region as large as red and blue together (5 % of the pixels, more than they cover: the unit's
        # region is every pixel where it is above 0) for the unit of either.
        result = self.dissect(self.hand, "--layer", "units", "--formula-length", 3, "--quantile", 0.05)
        unit = result["layers"][0]["units"][3]
        self.assertIn(unit["formula"]["formula"], ("red OR blue", "blue OR red"))
        self.assertGreater(unit["formula"]["iou"], unit["iou"][0]["iou"] + 0.2)
        # Its counts are the pixels of the formula's concepts, from the masks.
        masks = self.masks[:, CONCEPTS.index("red")] | self.masks[:, CONCEPTS.index("blue")]
        self.assertEqual(unit["formula"]["formula_pixels"], masks.sum())
        self.assertAlmostEqual(unit["formula"]["iou"], unit["formula"]["intersection"] / (
            unit["formula"]["unit_pixels"] + masks.sum() - unit["formula"]["intersection"]), places=12)
        # The single colours' units keep their colour: a formula only where it does better.
        for colour in (0, 1, 2):
            formula = result["layers"][0]["units"][colour]["formula"]
            self.assertGreaterEqual(formula["iou"], result["layers"][0]["units"][colour]["iou"][0]["iou"])

    def test_csv_rows_are_the_json_s(self):
        table = self.dissect(self.hand, "--layer", "units", "--top", 2, out="d.csv").splitlines()
        self.assertEqual(table[0], "layer,unit,method,rank,concept,category,score,p,interpretable")
        result = self.dissect(self.hand, "--layer", "units", "--top", 2)
        rows = [r.split(",") for r in table[1:]]
        self.assertEqual(len(rows), 4 * (2 + 2))
        red = [r for r in rows if r[1] == "0" and r[2] == "iou"]
        self.assertEqual(red[0][4], "red")
        self.assertAlmostEqual(float(red[0][6]), result["layers"][0]["units"][0]["iou"][0]["iou"], places=8)
        # INVERT's rows: the AUC and the corrected p of the JSON, in its order.
        for unit in result["layers"][0]["units"]:
            invert = [r for r in rows if r[1] == str(unit["unit"]) and r[2] == "invert"]
            self.assertEqual([r[4] for r in invert], [e["concept"] for e in unit["invert"][:2]])
            for r, e in zip(invert, unit["invert"]):
                self.assertEqual(r[5], e["category"])
                self.assertAlmostEqual(float(r[6]), e["auc"], places=8)
                np.testing.assert_allclose(float(r[7]), e["p"], rtol=1e-8, atol=1e-300)


class OracleTest(DissectTestCase):
    def test_channels_of_a_cnn_equal_netdissect_and_invert(self):
        result = self.dissect(FIXTURES / "color_cnn.pt", "--layer", "features.3", "--top", 12)
        acts = hooked(self.model, self.model.features[3], self.x).numpy()
        self.assertEqual(result["layers"][0]["grid"], [20, 28])
        self.check_iou(result["layers"][0], acts, self.masks)
        labels = self.masks.any((2, 3))
        self.check_invert(result["layers"][0], acts.astype(np.float64).mean((2, 3)), labels)
        by_name = {c["name"]: c for c in result["concepts"]}
        self.assertEqual(sorted(by_name), sorted(CONCEPTS))
        self.assertEqual([by_name[c]["images"] for c in CONCEPTS], labels.sum(0).tolist())
        self.assertEqual([by_name[c]["pixels"] for c in CONCEPTS], self.masks.sum((0, 2, 3)).tolist())
        self.assertEqual({by_name[c]["category"] for c in CONCEPTS[:5]}, {"color"})

    def test_other_thresholds_and_the_first_images_of_the_set(self):
        """--iou-threshold, --auc-threshold, --alpha and --max-images away from their defaults, against the
        transcriptions on the images the run read (the set's first 20, in its order)."""
        n = 20
        result = self.dissect(FIXTURES / "color_cnn.pt", "--layer", "features.3", "--top", 12, "--iou-threshold",
                              0.12, "--auc-threshold", 0.75, "--alpha", 1e-3, "--max-images", n)
        acts = hooked(self.model, self.model.features[3], self.x[:n]).numpy()
        layer = result["layers"][0]
        self.check_iou(layer, acts, self.masks[:n], iou_threshold=0.12)
        labels = self.masks[:n].any((2, 3))
        self.check_invert(layer, acts.astype(np.float64).mean((2, 3)), labels)
        for unit in layer["units"]:
            best = unit["invert"][0]
            self.assertEqual(unit["interpretable_invert"], best["auc"] >= 0.75 and best["p"] < 1e-3, unit["unit"])
        self.assertEqual(layer["interpretable"]["iou"], sum(u["interpretable_iou"] for u in layer["units"]))
        # The manifest records every setting that shapes these numbers, as given and as defaulted.
        settings = json.loads((self.tmp / "d.manifest.json").read_text())["settings"]
        for key, value in {"layer": "features.3", "units": "channels", "method": "both", "quantile": "0.005",
                           "iou_threshold": "0.12", "auc_threshold": "0.75", "alpha": "0.001", "top": "12",
                           "max_images": "20", "batch_images": "4", "formula_length": "1", "pooling": "mean"}.items():
            self.assertEqual(settings.get(key), value, key)
        # The concepts' counts are of the first n images alone.
        by_name = {c["name"]: c for c in result["concepts"]}
        self.assertEqual([by_name[c]["images"] for c in CONCEPTS if c in by_name],
                         [int(labels[:, CONCEPTS.index(c)].sum()) for c in CONCEPTS if c in by_name])

    def test_the_model_runs_once_when_the_maps_fit_on_disk(self):
        # The second pass reads the first pass's maps from a temporary file when they fit --spill-mb (by
        # default half the temporary folder's free space), else it runs the model again: the same counts.
        acts = hooked(self.model, self.model.features[3], self.x).numpy()
        spilled = acts.size * 4  # float32 maps of every image: C x 20 x 28 each
        below, above = spilled // 2**20, -(-spilled // 2**20)
        self.assertLess(below, above)  # the set's maps are not a whole number of MiB
        layers, said = {}, {}
        for name, args in (("default", ()), ("fits", ("--spill-mb", above)), ("too small", ("--spill-mb", below)),
                           ("off", ("--spill-mb", 0))):
            path = self.tmp / "spill.json"
            run = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--concepts", self.set,
                      "--batch-images", 4, "--top", 12, *args, "--out", path)
            self.assertEqual(run.returncode, 0, run.stderr)
            layers[name], said[name] = json.loads(path.read_text())["layers"], run.stdout
        line = f"the second pass read {above} MiB of maps from a temporary file (the model ran once)"
        self.assertIn(line, said["default"])
        self.assertIn(line, said["fits"])
        self.assertNotIn("the second pass read", said["too small"])
        self.assertNotIn("the second pass read", said["off"])
        self.check_iou(layers["default"][0], acts, self.masks)
        for name in ("fits", "too small", "off"):
            self.assertEqual(layers[name], layers["default"], name)

    def test_masks_moved_to_other_images_label_no_unit(self):
        # color_cnn's random weights give colour units (a random mix of R, G and B detects colours; 7 of
        # features.1's 8 channels are interpretable on this set). Each image given the next image's masks,
        # none is: the labels come from the masks' place, not from the procedure.
        moved = self.tmp / "moved"
        shutil.copytree(self.set / "images", moved / "images")
        shutil.copy(self.set / "concepts.csv", moved)
        for concept in CONCEPTS:
            (moved / "masks" / concept).mkdir(parents=True)
            for i, name in enumerate(self.names):
                source = self.set / "masks" / concept / f"{self.names[(i + 1) % len(self.names)]}.png"
                if source.exists():
                    shutil.copy(source, moved / "masks" / concept / f"{name}.png")
        original = self.dissect(FIXTURES / "color_cnn.pt", "--layer", "features.1")
        self.assertGreaterEqual(original["layers"][0]["interpretable"]["iou"], 4)
        path = self.tmp / "moved.json"
        result = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.1", "--concepts", moved, "--out", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        layer = json.loads(path.read_text())["layers"][0]
        self.assertEqual(layer["interpretable"], {"iou": 0, "invert": 0})
        self.assertLess(max(u["iou"][0]["iou"] for u in layer["units"]), 0.04)

    def test_vit_tokens_are_channels_over_the_patch_grid(self):
        torch.manual_seed(0)
        vit = RegisterVit().eval()
        vit.load_state_dict(torch.jit.load(str(FIXTURES / "register_vit.pt")).state_dict())
        result = self.dissect(FIXTURES / "register_vit.pt", "--layer", "encoder.layers.1", "--top", 12)
        tokens = hooked(vit, vit.encoder.layers[1], self.x)
        acts = tokens[:, 3:].reshape(len(self.x), 5, 7, -1).permute(0, 3, 1, 2).numpy()
        layer = result["layers"][0]
        self.assertEqual(layer["grid"], [5, 7])
        self.check_iou(layer, acts, self.masks)
        self.check_invert(layer, acts.astype(np.float64).mean((2, 3)), self.masks.any((2, 3)))

    def test_sae_latents_and_probe_directions_are_units(self):
        from test_sae import overcomplete_sae  # Overcomplete's TopKSAE from the saved file
        sae = self.tmp / "sae"
        trained = cli("sae", "train", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--images",
                      self.set / "images", "--expansion", 2, "--k", 4, "--batch-images", 4, "--out", sae)
        self.assertEqual(trained.returncode, 0, trained.stderr)
        folder = next(p for p in sae.iterdir() if (p / "cfg.json").exists())
        result = self.dissect(FIXTURES / "color_cnn.pt", "--units", f"sae:{folder}", "--top", 12)
        layer = result["layers"][0]
        self.assertEqual((layer["layer"], layer["units_kind"]), ("features.3", "SAE latents"))
        coder, _ = overcomplete_sae(folder)
        a = hooked(self.model, self.model.features[3], self.x)
        with torch.no_grad():
            codes = coder.encode(a.permute(0, 2, 3, 1).reshape(-1, 12))[1]
        acts = codes.reshape(len(self.x), 20, 28, -1).permute(0, 3, 1, 2).numpy()
        self.check_iou(layer, acts, self.masks)
        self.check_invert(layer, acts.astype(np.float64).mean((2, 3)), self.masks.any((2, 3)))
        refused = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.0", "--units", f"sae:{folder}",
                      "--concepts", self.set, "--out", self.tmp / "x.json")
        self.assertEqual(refused.returncode, 1)
        self.assertIn("the layer gives vectors of 8 values, but the SAE", refused.stderr)

        # A linear probe of three classes on features.3 (average pooling): per position w.(x - m)/s + b.
        g = torch.Generator().manual_seed(3)
        probe = {"weight": torch.randn(3, 12, generator=g), "bias": torch.randn(3, generator=g),
                 "feature_mean": torch.rand(12, generator=g), "feature_std": 0.5 + torch.rand(12, generator=g),
                 "layer": "features.3", "pooling": "avg", "classes": ["a", "b", "c"]}
        torch.save(probe, self.tmp / "probe.pt")
        result = self.dissect(FIXTURES / "color_cnn.pt", "--units", f"probe:{self.tmp / 'probe.pt'}", "--top", 12)
        layer = result["layers"][0]
        self.assertEqual([u["name"] for u in layer["units"]], ["a", "b", "c"])
        z = (a - probe["feature_mean"].view(1, 12, 1, 1)) / probe["feature_std"].view(1, 12, 1, 1)
        maps = torch.einsum("oc,nchw->nohw", probe["weight"], z) + probe["bias"].view(1, 3, 1, 1)
        self.check_iou(layer, maps.numpy(), self.masks)
        pooled = maps.double().mean((2, 3)).numpy()
        np.testing.assert_allclose(pooled, (torch.nn.functional.linear(
            (a.mean((2, 3)) - probe["feature_mean"]) / probe["feature_std"], probe["weight"], probe["bias"])).numpy(),
            rtol=1e-4, atol=1e-5)  # the maps' mean is the probe's score
        self.check_invert(layer, pooled, self.masks.any((2, 3)))


class BrodenTest(DissectTestCase):
    def test_a_broden_layout_is_read_as_netdissect_reads_it(self):
        """The set rewritten in Broden's layout: colours and shapes as segmentations at half the image's
        size (label R + 256 G), textures as image-level labels; an image without a texture annotates no
        texture, so its unit pixels do not count in a texture's union."""
        broden = self.tmp / "broden"
        (broden / "images").mkdir(parents=True)
        colours, shapes, textures = CONCEPTS[:5], CONCEPTS[5:9], CONCEPTS[9:]
        numbers = {c: 300 + i for i, c in enumerate(CONCEPTS)}  # above 255: the green byte is used
        categories = {**{c: "color" for c in colours}, **{c: "object" for c in shapes},
                      **{c: "texture" for c in textures}}
        rows = ["number,name,category,frequency,coverage,syns", '0,-,-,0,0.0,""']
        rows += [f'{numbers[c]},{c},{categories[c]}(9),9,1.0,""' for c in CONCEPTS]
        (broden / "label.csv").write_text("\n".join(rows) + "\n")
        half = self.masks[:, :, ::2, ::2]
        height, width = half.shape[2:]
        index = ["image,split,ih,iw,sh,sw,color,object,texture"]
        for i, name in enumerate(self.names):
            shutil.copy(self.set / "images" / f"{name}.png", broden / "images" / f"{name}.png")
            cells = []
            for group, kind in ((colours, "color"), (shapes, "object")):
                label = np.zeros((height, width), np.int64)
                for c in group:
                    label[half[i, CONCEPTS.index(c)]] = numbers[c]
                rgb = np.stack([label % 256, label // 256, 0 * label], -1).astype(np.uint8)
                Image.fromarray(rgb).save(broden / "images" / f"{name}_{kind}.png")
                cells.append(f"{name}_{kind}.png")
            shown = [str(numbers[c]) for c in textures if self.masks[i, CONCEPTS.index(c)].any()]
            index.append(f"{name}.png,train,40,56,{height},{width},{cells[0]},{cells[1]},{';'.join(shown)}")
        (broden / "index.csv").write_text("\n".join(index) + "\n")

        path = self.tmp / "broden.json"
        result = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--concepts", broden,
                     "--top", 12, "--out", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        result = json.loads(path.read_text())
        self.assertEqual(result["layout"], "broden")
        self.assertEqual(result["categories"], ["color", "object", "texture"])
        acts = hooked(self.model, self.model.features[3], self.x).numpy()
        # NetDissect-Lite's tally at the segmentation's size: textures cover every pixel of an image
        # that has them (its scalar labels); a category counts the unit's pixels only where annotated.
        masks = half.copy()
        for c in textures:
            k = CONCEPTS.index(c)
            masks[:, k] = self.masks[:, k].any((1, 2))[:, None, None]
        annotated = np.ones((len(self.names), len(CONCEPTS)), bool)
        has_texture = self.masks[:, 9:].any((1, 2, 3))
        annotated[:, 9:] = has_texture[:, None]
        thresholds, inter, unsure_inter, area, unsure_area = netdissect(acts, masks)
        _, _, _, textured_area, unsure_textured = netdissect(acts, masks, tallied=has_texture)
        layer = result["layers"][0]
        for unit in layer["units"]:
            u = unit["unit"]
            np.testing.assert_allclose(unit["threshold"], thresholds[u], rtol=1e-5, atol=1e-6)
            for entry in unit["iou"]:
                k = CONCEPTS.index(entry["concept"])
                self.assertEqual(entry["concept_pixels"], masks[:, k].sum())
                unit_area, unsure = (textured_area[u], unsure_textured[u]) if k >= 9 else (area[u], unsure_area[u])
                self.assertLessEqual(abs(entry["unit_pixels"] - unit_area), unsure, (u, entry))
                self.assertLessEqual(abs(entry["intersection"] - inter[u, k]), unsure_inter[u, k], (u, entry))
        # INVERT's labels: a colour or shape with a pixel, a texture listed.
        self.check_invert(layer, acts.astype(np.float64).mean((2, 3)), masks.any((2, 3)))
        # Broden's segmentations cover the whole image: a setup that crops is refused.
        crop = self.tmp / "crop.json"
        crop.write_text(json.dumps({"resize": [40, 56], "crop": [32, 48], "mean": MEAN, "std": STD}))
        refused = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--concepts", broden,
                      "--preprocess", crop, "--out", path)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("without a crop", refused.stderr)


class Log(nn.Module):
    """NaN on images in 0..1."""

    def forward(self, x):
        return torch.log(x - 2.0)


class BadInputTest(DissectTestCase):
    def refused(self, *args):
        result = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", *args)
        self.assertEqual(result.returncode, 1, result.stderr)
        return result.stderr

    def test_bad_concept_sets_say_what_is_wrong(self):
        one = self.tmp / "one"
        (one / "red").mkdir(parents=True)
        shutil.copy(self.set / "images" / "00000.png", one / "red")
        self.assertIn("has one concept ('red')", self.refused("--concepts", one, "--out", self.tmp / "x.json"))
        shutil.copytree(one / "red", one / "blue")
        self.assertIn("use --method invert", self.refused("--concepts", one, "--method", "iou",
                                                         "--out", self.tmp / "x.json"))
        wrong = self.tmp / "wrong"
        shutil.copytree(self.set, wrong)
        Image.new("L", (20, 20), 255).save(wrong / "masks" / "red" / "00000.png")
        message = self.refused("--concepts", wrong, "--out", self.tmp / "x.json")
        self.assertIn("is 20 x 20 but its image", message)
        self.assertFalse((self.tmp / "x.json").exists(), "nothing half-written")

    def test_bad_units_and_outputs_say_what_is_wrong(self):
        # A model whose maps are NaN on the set (the log of a negative number).
        broken = self.tmp / "broken.pt"
        torch.jit.save(torch.jit.script(nn.Sequential(Log())), str(broken),
                       _extra_files={"torchscope.json": json.dumps({"preprocess": {}})})
        result = cli("dissect", broken, "--layer", "0", "--concepts", self.set, "--out", self.tmp / "x.json")
        self.assertEqual(result.returncode, 1)
        self.assertIn("are NaN or infinite on", result.stderr)
        self.assertIn("00000.png", result.stderr)
        self.assertFalse((self.tmp / "x.json").exists())
        # A probe of a ViT's tokens reads the tokens as its channels: its directions lie on no grid.
        probe = {"weight": torch.ones(1, 38), "bias": torch.zeros(1), "feature_mean": torch.zeros(38),
                 "feature_std": torch.ones(38), "layer": "encoder.layers.1", "pooling": "avg", "classes": ["a", "b"]}
        torch.save(probe, self.tmp / "token_probe.pt")
        result = cli("dissect", FIXTURES / "register_vit.pt", "--units", f"probe:{self.tmp / 'token_probe.pt'}",
                     "--concepts", self.set, "--out", self.tmp / "x.json")
        self.assertEqual(result.returncode, 1)
        self.assertIn("lie on no patch grid", result.stderr)
        # The request's own ranges and choices are refused while the command line is read (exit 2).
        for extra, message in ((("--quantile", "0"), "--quantile: expected a number between 0 and 1 (exclusive)"),
                               (("--alpha", "1"), "--alpha: expected a number between 0 and 1 (exclusive)"),
                               (("--formula-length", "4"), "--formula-length: Value 4 not in range 1 to 3"),
                               (("--method", "auc"), "--method: the dissection method 'auc' is not one of iou, invert, both"),
                               (("--out", self.tmp / "x.npz"), "dissect writes FILE.json, FILE.csv")):
            with self.subTest(extra=extra):
                args = ["dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--concepts", self.set, *extra]
                result = cli(*args, *(() if extra[0] == "--out" else ("--out", self.tmp / "x.json")))
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertFalse((self.tmp / "x.json").exists())
        # An --out in a folder that does not exist is refused before the run.
        result = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--concepts", self.set,
                     "--out", self.tmp / "missing" / "x.json")
        self.assertEqual(result.returncode, 2)
        self.assertIn("does not exist", result.stderr)
        # concepts make into an empty folder named with a trailing slash (as a shell completes it).
        empty = self.tmp / "empty"
        empty.mkdir()
        made = make("--out", f"{empty}/", "--images", 2, "--size", "40x56")
        self.assertEqual(made.returncode, 0, made.stderr)
        self.assertEqual(len(list((empty / "images").glob("*.png"))), 2)

    def test_folders_of_images_are_scored_by_invert(self):
        folders = self.tmp / "folders"
        labels = self.masks.any((2, 3))
        for k, concept in enumerate(CONCEPTS[:3]):
            (folders / concept).mkdir(parents=True)
            for i, name in enumerate(self.names):
                if labels[i, k]:
                    shutil.copy(self.set / "images" / f"{name}.png", folders / concept / f"{name}.png")
        path = self.tmp / "f.json"
        out = cli("dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--concepts", folders,
                  "--out", path)
        self.assertEqual(out.returncode, 0, out.stderr)
        folded = json.loads(path.read_text())
        self.assertIn("only invert is measured", " ".join(folded["warnings"]))
        shown = [i for i in range(len(self.names)) if labels[i, :3].any()]
        acts = hooked(self.model, self.model.features[3], self.x[shown]).numpy()
        self.check_invert_folders(folded["layers"][0], acts.astype(np.float64).mean((2, 3)), labels[shown][:, :3])

    def test_ctrl_c_keeps_the_images_ranked(self):
        # SIGINT (a terminal's Ctrl+C) while the CLI reports its first batch of the first pass (held
        # there by a full stderr pipe, test_cli.py's BlockedAtFirstReport): it stops after that batch
        # and writes INVERT over those 4 images, with no IoU (the thresholds need the whole set).
        from test_cli import BlockedAtFirstReport
        out = self.tmp / "part.json"
        run = BlockedAtFirstReport(["dissect", FIXTURES / "color_cnn.pt", "--layer", "features.3", "--concepts",
                                    self.set, "--batch-images", 4, "--top", 12, "--device", "cpu", "--threads",
                                    THREADS, "--out", out])
        run.wait()
        run.process.send_signal(signal.SIGINT)
        code, _, written = run.finish()
        self.assertEqual(code, 130, written)
        self.assertTrue(written.startswith("\rranking: 4 / 96"), f"blocked elsewhere: {written[:200]!r}")
        result = json.loads(out.read_text())
        self.assertTrue(result["cancelled"])
        self.assertEqual(result["images_read"], 4)
        self.assertIn("cancelled in the first pass after 4 images", " ".join(result["warnings"]))
        layer = result["layers"][0]
        self.assertTrue(all("iou" not in unit for unit in layer["units"]))
        acts = hooked(self.model, self.model.features[3], self.x[:4]).numpy()
        self.check_invert(layer, acts.astype(np.float64).mean((2, 3)), self.masks[:4].any((2, 3)))

    def check_invert_folders(self, layer, pooled, labels):
        for unit in layer["units"]:
            for entry in unit["invert"]:
                k = CONCEPTS.index(entry["concept"])
                self.assertAlmostEqual(entry["auc"], roc_auc_score(labels[:, k], pooled[:, unit["unit"]]), places=9)


if __name__ == "__main__":
    unittest.main()
