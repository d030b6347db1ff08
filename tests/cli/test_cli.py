"""torchscope-cli end to end: what it writes is read back by torch.load and compared with the
expectations the fixture script computed with forward hooks."""
import csv
import fcntl
import hashlib
import json
import math
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import torch
import torch.nn.functional as F

from comparisons import max_diff

CLI = os.environ["TORCHSCOPE_CLI"]
FIXTURES = pathlib.Path(os.environ["TORCHSCOPE_FIXTURES_DIR"])
HEADLESS = os.environ.get("TORCHSCOPE_IMAGING", "1") not in ("1", "ON", "TRUE", "true")  # built without OpenCV
ROOT = pathlib.Path(__file__).resolve().parents[2]
# The Fashion-MNIST CNN the probe fixtures were made from (the CLI's default model is the face demo).
FASHION = ROOT / "resources" / "demo" / "fashion_cnn.pt"
# The fixtures' thread count (tests/CMakeLists.txt): a CLI run with --threads THREADS and this
# process's own forward passes sum in the fixtures' order, so their values can be compared exactly.
THREADS = os.environ.get("OMP_NUM_THREADS", "2")
torch.set_num_threads(int(THREADS))
TIMEOUT = 600  # the sanitized CLI is several times slower

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))  # probe_reference: probes trained by PyTorch
from demo_hooks import MEAN, STD, demo_hooked, demo_model  # noqa: E402  (the eager demo model, forward hooks on it)
from color_model import NormAct, color_model  # noqa: E402  (the second shape: 3 x 40 x 56 colour images)


def cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)


def read_safetensors(path):
    """A safetensors file read by the official library (which checks the format as it reads):
    each tensor, and its dtype as the file names it under KEY/dtype."""
    from safetensors import safe_open
    arrays = {}
    with safe_open(str(path), framework="pt") as f:
        for key in f.keys():
            arrays[key] = f.get_tensor(key)
            arrays[key + "/dtype"] = f.get_slice(key).get_dtype()
    return arrays


def tolerance(key, expected, relative=1e-5):
    """Gradients are far below 1: compare them relative to their own scale, activations absolutely."""
    return relative * torch.as_tensor(expected).abs().max().item() if key.endswith(":grad") else relative


def first_batch_range(first):
    """The histogram range record takes from a layer's first batch when --range is not given
    (core/record/recorder.cpp, rangeOfFirstBatch): the batch's smallest and largest value widened
    by a tenth of their distance on each side (half a unit when they are equal), a smallest value
    of exactly 0 (a ReLU's) kept as the first edge. Python's floats are the same doubles as C++'s."""
    low, high = float(first.min()), float(first.max())
    margin = 0.1 * (high - low) if high > low else 0.5
    return (0.0 if low == 0.0 else low - margin, high + margin)


def numpy_statistics(values, low, high, bins, topk, ids=None):
    """What record's stats reduction must give for one layer's activations [N, C, ...] (channels
    are dim 1; [N, F] has F channels of one value), by NumPy: per channel the mean, the population
    variance and standard deviation (ddof=0: core/record/layer_statistics.h documents "population
    standard deviation"), min, max and the fraction of zeros; np.histogram of every value over
    [low, high] and the values outside it, below and above; per channel the top-k samples by
    their mean activation, ties to the earlier sample (a stable sort of the negated means keeps
    equal means in sample order), as `ids` (default: the row numbers) and their means."""
    v = values.double().numpy()
    rows = v.reshape(v.shape[0], v.shape[1], -1)
    channels = rows.transpose(1, 0, 2).reshape(v.shape[1], -1)
    per_sample = rows.mean(2)
    order = np.argsort(-per_sample, axis=0, kind="stable")[:topk]
    flat = channels.ravel()
    counts, _ = np.histogram(flat, bins=bins, range=(low, high))
    return {"mean": channels.mean(1), "var": channels.var(1, ddof=0), "std": channels.std(1, ddof=0),
            "min": channels.min(1), "max": channels.max(1), "zero_fraction": (channels == 0).mean(1),
            "histogram_range": np.array([low, high]), "histogram": counts,
            "histogram_outside": np.array([(flat < low).sum(), (flat > high).sum()]),
            "top_samples": order if ids is None else np.asarray(ids)[order],
            "top_values": np.take_along_axis(per_sample, order, 0)}


# Fields of a recording that NumPy must give exactly: values taken over (min, max), counts and
# their ratios, the top-k's samples and the histogram's range (the same doubles on both sides).
EXACT_FIELDS = ("min", "max", "zero_fraction", "histogram_range", "histogram", "histogram_outside", "top_samples")
# Float64 sums in another order: the CLI sums each sample's row, then merges rows and batches with
# Chan's formula; NumPy sums a whole channel pairwise. They part in the last bits: 1e-12 of the
# largest value is a thousand times what that gives (measured: 3e-16).
SUM_FIELDS = ("mean", "var", "std", "top_values")


def assert_recording_equals(test, got, key, want, samples):
    """Every field of key's stats recording (torch.load'ed) equals NumPy's (numpy_statistics)."""
    test.assertEqual(int(got[f"{key}:samples"]), samples, key)
    for field in EXACT_FIELDS:
        value = got[f"{key}:{field}"].numpy()
        test.assertEqual(value.shape, want[field].shape, f"{key}:{field}")
        test.assertTrue(np.array_equal(value, want[field]), f"{key}:{field}: {value} against NumPy's {want[field]}")
    for field in SUM_FIELDS:
        diff = max_diff(got[f"{key}:{field}"], torch.from_numpy(want[field]))
        test.assertLessEqual(diff, 1e-12 * np.abs(want[field]).max(), f"{key}:{field}")


class BlockedAtFirstReport:
    """A CLI process whose stderr is a pipe filled to the brim beforehand, so that its first write
    there (record's report of its first batch) blocks until this side reads the pipe: the moment
    the tests look at the process, or signal it, is an event they wait for, not one they catch."""

    def __init__(self, args):
        read_end, write_end = os.pipe()
        try:
            fcntl.fcntl(write_end, fcntl.F_SETFL, os.O_NONBLOCK)
            self.filled = 0
            for size in (4096, 1):  # whole pages, then byte by byte up to the brim
                try:
                    while True:
                        self.filled += os.write(write_end, b"x" * size)
                except BlockingIOError:
                    pass
            fcntl.fcntl(write_end, fcntl.F_SETFL, 0)
            self.process = subprocess.Popen([CLI, *map(str, args)], stdout=subprocess.PIPE, stderr=write_end)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self.pipe = os.fdopen(read_end, "rb")

    def wait(self):
        """Until the process is blocked in its write to the full pipe (the kernel names that wait
        pipe_write, anon_pipe_write since Linux 6.x); it ending first fails."""
        deadline = time.monotonic() + TIMEOUT
        while "pipe" not in pathlib.Path(f"/proc/{self.process.pid}/wchan").read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise AssertionError(f"the CLI never blocked in a write to stderr (exit {self.process.returncode})")
            time.sleep(0.01)

    def finish(self):
        """Reads the pipe, so the process goes on to its end: (exit code, stdout, what it wrote to stderr)."""
        try:
            written = self.pipe.read()[self.filled:].decode()  # to the end of the process's stderr
            stdout, _ = self.process.communicate(timeout=TIMEOUT)
        finally:
            self.close()
        return self.process.returncode, stdout.decode(), written

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.pipe.close()


class Helpers(unittest.TestCase):
    def test_max_diff_fails_on_nan_and_infinity(self):
        nan = float("nan")
        self.assertEqual(max_diff(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])), 0.5)
        # Python's max() over [0.1, nan] is 0.1: the old helper's hole.
        self.assertEqual(max([0.1, nan]), 0.1)
        for bad in ([1.0, nan], [float("inf"), 2.0]):
            with self.assertRaises(AssertionError):
                max_diff(torch.tensor(bad), torch.tensor([1.0, 2.0]))
            with self.assertRaises(AssertionError):
                max_diff(torch.tensor([1.0, 2.0]), torch.tensor(bad))

    def test_the_numpy_oracle_of_record(self):
        # Samples 1 and 2 tie: the earlier one ranks first. A ReLU's 0 stays the histogram's first edge.
        values = torch.tensor([[1.0, 0.0], [2.0, 0.0], [2.0, 3.0], [0.0, 1.0]])
        want = numpy_statistics(values, 0.0, 3.0, bins=4, topk=2, ids=[10, 11, 12, 13])
        self.assertEqual(want["top_samples"].tolist(), [[11, 12], [12, 13]])
        self.assertEqual(want["top_values"].tolist(), [[2.0, 3.0], [2.0, 1.0]])
        self.assertEqual(want["histogram"].tolist(), [3, 2, 2, 1])  # np.histogram: the top edge in the last bin
        self.assertEqual(want["var"].tolist(), [0.6875, 1.5])  # population variance
        self.assertEqual(first_batch_range(values), (0.0, 3.3))
        self.assertEqual(first_batch_range(torch.tensor([-1.0, 1.0])), (-1.2, 1.2))
        self.assertEqual(first_batch_range(torch.tensor([2.0, 2.0])), (1.5, 2.5))


class CliRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = pathlib.Path(self.tmp.name) / "out.pt"
        self.expected = torch.load(FIXTURES / "resnet18_expected.pt")

    def tearDown(self):
        self.tmp.cleanup()

    def run_ok(self, *args):
        result = cli(*args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return torch.load(self.out)

    def test_grabs_calls_inputs_gradients_with_the_documented_keys(self):
        got = self.run_ok("run", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt",
                          "--out", self.out, "--grab", "layer1.0.relu", "--grab", "layer2:in0",
                          "--grab", "layer3:grad", "--target", "3", "--device", "cpu")
        self.assertEqual(set(got), {"output", "layer1.0.relu", "layer1.0.relu#1", "layer2:in0", "layer3:grad"})
        for key in got:
            diff = max_diff(got[key], self.expected[key])
            print(f"{key}: max abs diff {diff}")
            self.assertLessEqual(diff, tolerance(key, self.expected[key]), key)

    def test_glob_and_type_selectors(self):
        got = self.run_ok("run", FIXTURES / "resnet18_traced.pt", "--input", FIXTURES / "resnet18_input.pt",
                          "--out", self.out, "--grab", "layer4.*", "--grab", "type:BatchNorm2d")
        self.assertIn("layer4.1.conv2", got)
        self.assertIn("bn1", got)
        self.assertIn("layer1.0.bn2", got)
        for key, value in got.items():
            self.assertLess(max_diff(value, self.expected[key]), 1e-5, key)
        # Exactly what the globs select: layer4's 2 blocks and their 13 submodules, and every
        # BatchNorm2d (20 in ResNet-18), the output besides.
        model = torch.jit.load(str(FIXTURES / "resnet18_traced.pt"))
        modules = dict(model.named_modules())
        want = {n for n in modules if n.startswith("layer4.")}
        want |= {n for n, m in modules.items() if m.original_name == "BatchNorm2d"}
        self.assertEqual(len([n for n in want if n.startswith("layer4.")]), 15)
        self.assertEqual(len([n for n, m in modules.items() if m.original_name == "BatchNorm2d"]), 20)
        self.assertEqual({k.split("#")[0] for k in got} - {"output"}, want)

    def test_safetensors_every_dtype_read_by_the_official_library(self):
        out = pathlib.Path(self.tmp.name) / "dtypes.safetensors"
        expected = torch.load(FIXTURES / "every_dtype_expected.pt")
        result = cli("run", FIXTURES / "every_dtype.pt", "--input", FIXTURES / "every_dtype_input.pt",
                     "--out", out, "--grab", "casts.*")
        self.assertEqual(result.returncode, 0, result.stderr)
        arrays = read_safetensors(out)
        written = {"casts.f64": "F64", "casts.f16": "F16", "casts.bf16": "F32", "casts.i64": "I64",
                   "casts.i32": "I32", "casts.i16": "I16", "casts.i8": "I8", "casts.u8": "U8", "casts.b": "BOOL",
                   "output": "F32"}
        for key, dtype in written.items():
            with self.subTest(key):
                self.assertEqual(arrays[key + "/dtype"], dtype)
                want = expected[key]
                got = arrays[key]
                self.assertEqual(tuple(got.shape), tuple(want.shape))
                # Every value exact: bfloat16 widens to float32 without rounding.
                self.assertTrue(torch.equal(got, want.float() if key == "casts.bf16" else want), key)

    def test_npz_by_numpy_and_safetensors_by_its_library(self):
        import numpy as np
        for suffix in (".npz", ".safetensors"):
            with self.subTest(suffix):
                out = pathlib.Path(self.tmp.name) / f"out{suffix}"
                result = cli("run", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt",
                             "--out", out, "--grab", "layer1.0.relu", "--grab", "layer3:grad", "--target", "3")
                self.assertEqual(result.returncode, 0, result.stderr)
                arrays = np.load(out) if suffix == ".npz" else read_safetensors(out)
                keys = {k for k in arrays.keys() if not k.endswith("/dtype")}
                self.assertEqual(keys, {"output", "layer1.0.relu", "layer1.0.relu#1", "layer3:grad"})
                for key in keys:
                    diff = max_diff(arrays[key], self.expected[key])
                    print(f"{suffix} {key}: max abs diff {diff}")
                    self.assertLessEqual(diff, tolerance(key, self.expected[key]), key)

    def test_truncate_returns_the_layer_output(self):
        got = self.run_ok("run", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt",
                          "--out", self.out, "--truncate", "layer2")
        self.assertLess(max_diff(got["output"], self.expected["layer2"]), 1e-5)

    def test_edits(self):
        add_file = pathlib.Path(self.tmp.name) / "add.pt"
        torch.save(self.expected["edit:add:layer1.add"], add_file)
        got = self.run_ok("run", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt",
                          "--out", self.out, "--edit", f"layer1:add:{add_file}")
        self.assertLess(max_diff(got["output"], self.expected["edit:add:layer1"]), 1e-5)
        got = self.run_ok("run", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt",
                          "--out", self.out, "--edit", "layer2:zero:0,5,7")
        self.assertLess(max_diff(got["output"], self.expected["edit:zero:layer2"]), 1e-5)

    def test_detection_model_with_a_list_input(self):
        # The [1, C, H, W] batch becomes Mask R-CNN's List[Tensor]. The fixture's hooks on the eager
        # model and the eager model's own detections, at the fixtures' thread count: bit for bit
        # (the same kernels summing in the same order).
        import torchvision
        got = self.run_ok("run", FIXTURES / "maskrcnn_scripted.pt", "--input", FIXTURES / "maskrcnn_input.pt",
                          "--out", self.out, "--grab", "backbone.body.layer3", "--grab", "backbone.body.layer4",
                          "--threads", THREADS)
        expected = torch.load(FIXTURES / "maskrcnn_expected.pt")
        self.assertEqual(set(got), {"output", "backbone.body.layer3", "backbone.body.layer4"})
        for key in ("backbone.body.layer3", "backbone.body.layer4"):
            self.assertEqual(max_diff(got[key], expected[key]), 0.0, key)
        # Scripted torchvision detectors return (losses, detections); the fixture has no detections,
        # so the eager model with the archive's weights gives them here.
        eager = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None).eval()
        eager.load_state_dict(torch.jit.load(str(FIXTURES / "maskrcnn_scripted.pt")).state_dict())
        with torch.no_grad():
            want = eager([torch.load(FIXTURES / "maskrcnn_input.pt")[0]])[0]
        losses, detections = got["output"]
        self.assertEqual(losses, {})
        self.assertEqual(len(detections), 1)
        self.assertEqual(set(detections[0]), {"boxes", "labels", "scores", "masks"})
        self.assertGreater(len(want["scores"]), 0, "the eager model detects nothing: the comparison would be empty")
        for key in ("boxes", "scores", "masks"):
            self.assertEqual(max_diff(detections[0][key], want[key]), 0.0, key)
        self.assertTrue(torch.equal(detections[0]["labels"], want["labels"]))

    def test_several_inputs(self):
        got = self.run_ok("run", FIXTURES / "two_inputs.pt", "--input", FIXTURES / "two_inputs_a.pt",
                          "--input", FIXTURES / "two_inputs_b.pt", "--out", self.out, "--grab", "left")
        expected = torch.load(FIXTURES / "two_inputs_expected.pt")
        self.assertLess(max_diff(got["output"], expected["output"]), 1e-6)
        self.assertLess(max_diff(got["left"], expected["left"]), 1e-6)

    @unittest.skipIf(HEADLESS, "built without OpenCV")
    def test_images_and_folders_with_the_models_own_preprocessing(self):
        # relu_twice.pt carries a torchscope.json: resize 10, crop 8, mean/std 0.5/0.25.
        got = self.run_ok("run", FIXTURES / "relu_twice.pt", "--input", FIXTURES / "images" / "rgb.png",
                          "--input", FIXTURES / "images" / "grey.png", "--out", self.out, "--grab", "conv1:in0")
        self.assertEqual(tuple(got["conv1:in0"].shape), (2, 3, 8, 8))
        import torchvision.transforms.functional as TF
        decoded = torch.load(FIXTURES / "images_expected.pt")
        # Both images whole; the grey one as three equal channels (PIL's convert("RGB")).
        expected = torch.stack([TF.normalize(TF.center_crop(TF.resize(decoded[f"{name}:decoded"].expand(3, -1, -1), 10,
                                                                      antialias=True), [8, 8]), [0.5] * 3, [0.25] * 3)
                                for name in ("rgb.png", "grey.png")])
        self.assertLess(max_diff(got["conv1:in0"], expected), 1e-5)

    @unittest.skipIf(HEADLESS, "built without OpenCV")
    def test_an_unreadable_image_in_a_folder_fails_cleanly(self):
        result = cli("run", FIXTURES / "relu_twice.pt", "--input", FIXTURES / "images", "--out", self.out)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("not_an_image.png", result.stderr)
        self.assertIn("text file", result.stderr)
        self.assertFalse(self.out.exists())


@unittest.skipIf(HEADLESS, "built without OpenCV")
class CliPyTorch2Models(unittest.TestCase):
    """ViT-B/16, Swin-T, ResNet-50 and a block calling scaled_dot_product_attention, scripted or
    traced by the environment's PyTorch 2.x: outputs, inputs and gradients of their layers through
    the CLI against the eager hooks of the fixture script."""

    def test_grabs_inputs_and_gradients_equal_eager_hooks(self):
        layers_of = json.loads((FIXTURES / "pt2_models.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            for name, layers in layers_of.items():
                with self.subTest(name):
                    out = pathlib.Path(tmp) / f"{name}.pt"
                    grabs = [g for layer in layers for g in ("--grab", layer, "--grab", f"{layer}:in0",
                                                             "--grab", f"{layer}:grad")]
                    result = cli("run", FIXTURES / f"pt2_{name}.pt", "--input", FIXTURES / f"pt2_{name}_input.pt",
                                 "--out", out, "--target", "3", "--device", "cpu", *grabs)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    got = torch.load(out)
                    expected = torch.load(FIXTURES / f"pt2_{name}_expected.pt")
                    want_keys = {"output"} | {f"{layer}{kind}" for layer in layers for kind in ("", ":in0", ":grad")}
                    self.assertEqual(set(got), want_keys)
                    for key in sorted(want_keys):
                        diff = max_diff(got[key], expected[key])
                        print(f"{name} {key}: max abs diff {diff}")
                        self.assertLessEqual(diff, tolerance(key, expected[key]), key)


class CliEachImage(unittest.TestCase):
    """run --each-image: the window's per-image run, against the fixture's forward hooks."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = pathlib.Path(self.tmp.name) / "each.pt"
        self.expected = torch.load(FIXTURES / "labelled_expected.pt")

    def tearDown(self):
        self.tmp.cleanup()

    def test_each_image_skips_what_it_cannot_read_and_matches_forward_hooks(self):
        folders = sorted((FIXTURES / "labelled").iterdir())  # ImageFolder's order, as in the fixture
        inputs = [folders[0], FIXTURES / "images" / "not_an_image.png", *folders[1:]]
        result = cli("run", FASHION, *[arg for f in inputs for arg in ("--input", f)], "--each-image",
                     "--grab", "features.1", "--grab", "classifier.2", "--out", self.out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("skipped", result.stderr)
        self.assertIn("not_an_image.png", result.stderr)
        got = torch.load(self.out)
        self.assertEqual(sorted(got), ["classifier.2", "features.1", "output"])
        self.assertLess(max_diff(got["features.1"], self.expected["all/features.1/none"]), 1e-5)
        self.assertLess(max_diff(got["classifier.2"], self.expected["all/classifier.2/none"]), 1e-5)
        # One prediction line per image that ran, its top class the hooks' argmax.
        labels = (FIXTURES / "fashion_labels.txt").read_text().split("\n")
        lines = [l for l in result.stdout.splitlines() if l.startswith("  ") and ".png:" in l]
        self.assertEqual(len(lines), 36)
        for line, logits in zip(lines, self.expected["all/classifier.2/none"]):
            self.assertIn(":  " + labels[int(logits.argmax())] + " ", line)

    def test_images_of_different_sizes_become_a_list_in_pt(self):
        images = [FIXTURES / "images" / "rgb.png", FIXTURES / "images" / "grey16.png"]
        args = ["run", FIXTURES / "relu_twice.pt", "--input", images[0], "--input", images[1], "--each-image",
                "--preprocess", "none", "--grab", "conv1:in0", "--grab", "relu"]
        result = cli(*args, "--out", self.out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(self.out)
        decoded = torch.load(FIXTURES / "images_expected.pt")
        self.assertEqual([tuple(t.shape) for t in got["conv1:in0"]], [(1, 3, 150, 200), (1, 3, 64, 48)])
        self.assertLess(max_diff(got["conv1:in0"][0][0], decoded["rgb.png:decoded"]), 1e-6)
        self.assertLess(max_diff(got["conv1:in0"][1][0], decoded["grey16.png:decoded"].expand(3, -1, -1)), 1e-6)
        self.assertEqual(sorted(got), ["conv1:in0", "output", "relu", "relu#1"])
        # NumPy's format has no lists: the keys are left out, and the warning says why.
        npz = pathlib.Path(self.tmp.name) / "each.npz"
        result = cli(*args, "--out", npz)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("its shape differs between images", result.stderr)
        import numpy as np
        self.assertEqual(np.load(npz).files, [])

    def test_a_dict_output_is_kept_per_image(self):
        # DeepLabV3 returns {"out": ...}: one dict per image in the .pt, the same as a batch run's.
        image = FIXTURES / "images" / "rgb.png"
        model = FIXTURES / "deeplabv3_scripted.pt"
        result = cli("run", model, "--input", image, "--input", image, "--each-image", "--out", self.out)
        self.assertEqual(result.returncode, 0, result.stderr)
        batch = pathlib.Path(self.tmp.name) / "batch.pt"
        self.assertEqual(cli("run", model, "--input", image, "--out", batch).returncode, 0)
        got, want = torch.load(self.out)["output"], torch.load(batch)["output"]["out"]
        self.assertEqual(len(got), 2)
        for each in got:
            self.assertEqual(each["out"].shape, want.shape)
            # A batch of one and a batch of two run the convolutions in different blockings: float32 apart.
            self.assertLess(max_diff(each["out"], want), 1e-4)

    def test_tensor_inputs_and_probes_are_refused(self):
        result = cli("run", FASHION, "--input", FIXTURES / "labelled_inputs.pt", "--each-image", "--out", self.out)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("is a tensor file", result.stderr)
        self.assertFalse(self.out.exists())


@unittest.skipIf(HEADLESS, "built without OpenCV")
class CliRecord(unittest.TestCase):
    """torchscope-cli record over the labelled folder, read back by torch.load, NumPy and csv, and
    compared with the statistics the fixture script computed with forward hooks."""

    DEMO = pathlib.Path(__file__).resolve().parents[2] / "resources" / "demo" / "fashion_cnn.pt"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.expected = torch.load(FIXTURES / "labelled_expected.pt")

    def tearDown(self):
        self.tmp.cleanup()

    def record(self, out, *extra):
        result = cli("record", self.DEMO, "--input", FIXTURES / "labelled", "--grab", "features.1",
                     "--grab", "classifier.2", "--out", out, "--batch", "5", *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_stats_to_a_folder_one_file_per_layer(self):
        out = pathlib.Path(self.tmp.name) / "stats"
        summary = self.record(out, "--condition", "correct")
        self.assertEqual(summary["labels_from"], "model labels")
        self.assertEqual(summary["images"], 36)
        self.assertEqual(summary["selected"], int(self.expected["correct/features.1:samples"]))
        self.assertEqual(sorted(p.name for p in out.iterdir()),
                         ["classifier.2.pt", "features.1.pt", "manifest.json", "statistics.csv", "summary.json"])
        layer = torch.load(out / "features.1.pt")
        for field in ("mean", "var"):
            want = self.expected[f"correct/features.1/stats:{field}"]
            rel = ((layer[f"features.1:{field}"] - want).abs().max() / want.abs().max()).item()
            print(f"features.1 {field}: max relative difference {rel}")
            self.assertLess(rel, 1e-5)
        # The images in sample order, as torchvision's ImageFolder lists them: top_samples name files.
        from torchvision.datasets import ImageFolder
        want = [os.path.realpath(p) for p, _ in ImageFolder(str(FIXTURES / "labelled")).samples]
        self.assertEqual([os.path.realpath(p) for p in summary["image_files"]], want)
        self.assertEqual(json.loads((out / "summary.json").read_text())["image_files"], summary["image_files"])
        # Whole against the fixture's hooks: the fixture decoded the PNGs with PIL and ran the 36
        # images as one batch, the CLI decodes with OpenCV and runs batches of 5; both round the
        # inputs and the convolutions' sums differently in the last bits (measured: 1.1e-7 of the
        # largest value at features.1, 1.7e-7 at classifier.2), hence 1e-5 relative.
        correct = torch.nonzero(self.expected["predicted"] == self.expected["truth"]).flatten()
        with open(out / "statistics.csv", newline="") as table:
            rows = list(csv.DictReader(table))
        self.assertEqual([(r["layer"], int(r["channel"])) for r in rows],
                         [(k, c) for k, n in (("features.1", 64), ("classifier.2", 10)) for c in range(n)])
        for key in ("features.1", "classifier.2"):
            recorded = torch.load(out / f"{key}.pt")
            values = self.expected[f"correct/{key}/none"]
            per_sample = values.double().reshape(values.shape[0], values.shape[1], -1).mean(2).numpy()
            # The default --topk 9, ties to the earlier image (a stable sort of the negated means).
            order = np.argsort(-per_sample, axis=0, kind="stable")[:9]
            top = np.take_along_axis(per_sample, order, 0)
            self.assertTrue(np.array_equal(recorded[f"{key}:top_samples"].numpy(), correct.numpy()[order]), key)
            self.assertLessEqual(max_diff(recorded[f"{key}:top_values"], top), 1e-5 * np.abs(top).max(), key)
            # The ranking is decided by more than that rounding: no two different means within ten
            # times it (equal ones, a ReLU's zeros, are equal on both sides and go to the earlier).
            gaps = np.abs(np.diff(np.sort(per_sample, axis=0)[::-1][:10], axis=0))
            self.assertGreater(gaps[gaps > 0].min(), 1e-6 * np.abs(top).max(), f"{key}: a near tie no comparison decides")
            # The CSV: every layer's every channel.
            mine = [r for r in rows if r["layer"] == key]
            stats = {f: self.expected[f"correct/{key}/stats:{f}"] for f in ("mean", "var", "min", "max", "zero_fraction")}
            stats["std"] = stats.pop("var").sqrt()  # population (the fixture's np.var, ddof=0)
            for field, want in stats.items():
                column = torch.tensor([float(r[field]) for r in mine], dtype=torch.float64)
                self.assertLessEqual(max_diff(column, want), 1e-5 * want.abs().max().item(), f"{key} {field}")
                self.assertTrue(all(int(r["samples"]) == len(correct) for r in mine))

    def test_mean_to_npz(self):
        import numpy as np
        out = pathlib.Path(self.tmp.name) / "mean.npz"
        self.record(out, "--reduce", "mean", "--condition", "true:0,9")
        arrays = np.load(out)
        want = self.expected["true:0,9/features.1/mean"].numpy()
        self.assertLess(max_diff(arrays["features.1"], want), 1e-5)
        self.assertEqual(int(arrays["features.1:samples"]), 24)

    def test_a_tensor_stream_with_labels(self):
        out = pathlib.Path(self.tmp.name) / "tensor.pt"
        result = cli("record", self.DEMO, "--input", FIXTURES / "labelled_inputs.pt", "--grab", "features.1",
                     "--condition", "wrong", "--out", out, "--batch", "4")
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        self.assertEqual(int(got["features.1:samples"]), int(self.expected["wrong/features.1:samples"]))
        # Beside a single file: the per-channel CSV and the summary (no image files for a tensor stream).
        summary = json.loads(out.with_suffix(".json").read_text())
        self.assertEqual(summary["image_files"], [])
        self.assertEqual(summary["samples"]["features.1"], int(got["features.1:samples"]))
        self.assertTrue(out.with_suffix(".csv").exists())
        want = self.expected["wrong/features.1/stats:mean"]
        self.assertLess(((got["features.1:mean"] - want).abs().max() / want.abs().max()).item(), 1e-5)

    def test_edits_apply_to_every_image(self):
        out = pathlib.Path(self.tmp.name) / "ablated.pt"
        summary = self.record(out, "--edit", "features.1:zero:3,5", "--reduce", "stats")
        self.assertEqual(summary["edits"], ["features.1:zero:3,5"])
        got = torch.load(out)
        for channel in (3, 5):
            self.assertEqual(float(got["features.1:max"][channel]), 0.0)
            self.assertEqual(float(got["features.1:min"][channel]), 0.0)
        # The other channels are the model's own (the fixture's forward hooks, no edit).
        want = self.expected["all/features.1/stats:mean"]
        keep = [c for c in range(want.numel()) if c not in (3, 5)]
        rel = ((got["features.1:mean"][keep] - want[keep]).abs().max() / want.abs().max()).item()
        self.assertLess(rel, 1e-5)
        # Downstream, the ablated model's logits: the eager model with the same channels zeroed by
        # a forward hook (1e-5 relative: the PNGs decoded and batched otherwise, as above).
        model = demo_model()
        model.features[1].register_forward_hook(lambda m, i, o: o.index_fill(1, torch.tensor([3, 5]), 0.0))
        with torch.no_grad():
            logits = model(torch.load(FIXTURES / "labelled_inputs.pt")["samples"]).double()
        for field, want in (("mean", logits.mean(0)), ("min", logits.amin(0)), ("max", logits.amax(0))):
            self.assertLessEqual(max_diff(got[f"classifier.2:{field}"], want), 1e-5 * want.abs().max().item(), field)
        unedited = self.expected["all/classifier.2/stats:mean"]
        self.assertGreater(max_diff(got["classifier.2:mean"], unedited), 1e-2, "the edit changed nothing downstream")

    def test_memory_cap_fails_cleanly(self):
        out = pathlib.Path(self.tmp.name) / "all.pt"
        result = cli("record", self.DEMO, "--input", FIXTURES / "labelled", "--grab", "features.0", "--grab",
                     "features.1", "--reduce", "none", "--memory-cap", "1", "--out", out)  # 36 images take 1.3 MiB
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("memory cap", result.stderr)
        self.assertFalse(out.exists())

    def threads_at_the_first_batch(self, decode_threads, out):
        """record over the labelled folder, one image per batch, with --decode-threads N: how many
        threads the process has when it reports its first batch (every decoding thread started,
        none done: 36 batches to share), and its summary."""
        run = BlockedAtFirstReport(["record", FASHION, "--input", FIXTURES / "labelled", "--grab", "features.1",
                                    "--reduce", "none", "--batch", "1", "--threads", "1",
                                    "--decode-threads", decode_threads, "--out", out])
        run.wait()
        threads = len(os.listdir(f"/proc/{run.process.pid}/task"))
        code, stdout, written = run.finish()
        self.assertEqual(code, 0, written)
        self.assertTrue(written.startswith("\r1 / 36 samples"), f"blocked elsewhere: {written[:200]!r}")
        return threads, json.loads(stdout)

    def test_decode_threads_decode_in_parallel_and_keep_the_folder_order(self):
        threads, kept = {}, {}
        for n in (1, 2, 5):
            out = pathlib.Path(self.tmp.name) / f"kept{n}.pt"
            threads[n], summary = self.threads_at_the_first_batch(n, out)
            self.assertEqual(summary["images"], 36)
            kept[n] = torch.load(out)["features.1"]
        print(f"threads at the first batch with --decode-threads 1, 2, 5: {threads[1]}, {threads[2]}, {threads[5]}")
        # Each decoding thread more is one thread more, beside the same others.
        self.assertEqual(threads[2] - threads[1], 1)
        self.assertEqual(threads[5] - threads[1], 4)
        # Whichever thread decoded a batch, the batches come in folder order: every image's values
        # in ImageFolder's order, as the fixture's hooks give them (1e-5 relative: PIL's decoding
        # and one batch of 36 there, OpenCV's and batches of 1 here, round in the last bits), and
        # the same values on any number of threads.
        want = self.expected["all/features.1/none"]
        for n, values in kept.items():
            self.assertLessEqual(max_diff(values, want), 1e-5 * want.abs().max().item(), n)
            self.assertTrue(torch.equal(values, kept[1]), n)


class CliRecordStatistics(unittest.TestCase):
    """record's stats reduction of a tensor stream (no image decoding: the headless build too)
    against NumPy on the activations of forward hooks on the eager demo model, run in the CLI's
    batches: the same float32 values, so NumPy's statistics are the oracle to the last bits."""

    LAYERS = ("features.1", "classifier.2")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.samples = torch.load(FIXTURES / "labelled_inputs.pt")["samples"]

    def tearDown(self):
        self.tmp.cleanup()

    def test_top_k_std_and_histogram_equal_numpy(self):
        # The 36 images twice, in batches of 6: each image's copy comes 36 samples later at the same
        # place in its batch, so the two have the same means to the bit, and every top-k ties.
        twice = torch.cat([self.samples, self.samples])
        data, out = self.dir / "twice.pt", self.dir / "stats.pt"
        torch.save(twice, data)
        result = cli("record", FASHION, "--input", data, *[a for k in self.LAYERS for a in ("--grab", k)],
                     "--batch", "6", "--topk", "12", "--bins", "23", "--threads", THREADS, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        hooked = demo_hooked(twice, self.LAYERS, batch=6)
        for key in self.LAYERS:
            with self.subTest(key):
                low, high = first_batch_range(hooked[key][:6])
                want = numpy_statistics(hooked[key], low, high, bins=23, topk=12)
                self.assertEqual(got[f"{key}:histogram"].numel(), 23)  # --bins
                self.assertEqual(tuple(got[f"{key}:top_samples"].shape), (12, hooked[key].shape[1]))  # --topk
                assert_recording_equals(self, got, key, want, samples=72)
                # The tie rule at work: where no two images tie (a channel where many are 0 ties
                # them in sample order), an image and its copy come in pairs, the earlier first.
                means = hooked[key][:36].double().reshape(36, hooked[key].shape[1], -1).mean(2)
                apart = [c for c in range(means.shape[1]) if len(set(means[:, c].tolist())) == 36]
                self.assertGreater(len(apart), means.shape[1] // 2, key)
                top = got[f"{key}:top_samples"][:, apart]
                self.assertTrue(torch.equal(top[1::2], top[0::2] + 36), f"{key}: {top.t()}")
                self.assertEqual(int(want["histogram"].sum() + want["histogram_outside"].sum()),
                                 hooked[key].numel())
        # The first batch's range leaves out some logits of later batches: the outside counts count.
        self.assertGreater(int(got["classifier.2:histogram_outside"].sum()), 0)

    def test_a_given_range_counts_as_numpy_histogram(self):
        # The fixture's NumPy histograms over ranges that cut values off at both ends, edges off
        # round numbers; one batch of the 36 images, as the fixture ran them: the same values.
        expected = torch.load(FIXTURES / "labelled_expected.pt")
        data = self.dir / "samples.pt"
        torch.save(self.samples, data)
        for key in self.LAYERS:
            with self.subTest(key):
                low, high = expected[f"histogram/{key}/range"].tolist()
                out = self.dir / f"{key}.pt"
                result = cli("record", FASHION, "--input", data, "--grab", key, "--batch", "36", "--range",
                             f"{low!r}:{high!r}", "--threads", THREADS, "--out", out)
                self.assertEqual(result.returncode, 0, result.stderr)
                got = torch.load(out)
                self.assertEqual(got[f"{key}:histogram_range"].tolist(), [low, high])
                self.assertTrue(torch.equal(got[f"{key}:histogram"].long(), expected[f"histogram/{key}/counts"]))
                self.assertTrue(torch.equal(got[f"{key}:histogram_outside"], expected[f"histogram/{key}/outside"]))
                self.assertGreater(int(expected[f"histogram/{key}/outside"].sum()), 0)

    def test_ctrl_c_keeps_the_batches_done(self):
        # One process, no job: SIGINT, as a terminal's Ctrl+C, while it reports its first batch
        # (held there by a full stderr pipe): it stops after that batch and writes it. Linux gives
        # a process's signal to its main thread when that one can take it (it sleeps in the write),
        # so the handler has run before the report returns: always after exactly one batch.
        many, out = self.dir / "many.pt", self.dir / "part.pt"
        rows = torch.rand(20000, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        torch.save(rows, many)
        run = BlockedAtFirstReport(["record", FASHION, "--input", many, *[a for k in self.LAYERS for a in ("--grab", k)],
                                    "--batch", "3", "--threads", THREADS, "--out", out])
        run.wait()
        run.process.send_signal(signal.SIGINT)
        code, stdout, written = run.finish()
        self.assertEqual(code, 0, written)
        self.assertTrue(written.startswith("\r3 / 20000 samples"), f"blocked elsewhere: {written[:200]!r}")
        summary = json.loads(stdout)
        self.assertTrue(summary["cancelled"])
        recorded = summary["images"]
        self.assertEqual(recorded, 3, "the batch it was reporting, and no other")
        self.assertEqual(json.loads(out.with_suffix(".json").read_text()), summary)
        # The file holds exactly the batches done: NumPy's statistics of those rows.
        got = torch.load(out)
        hooked = demo_hooked(rows[:recorded], self.LAYERS, batch=3)
        for key in self.LAYERS:
            want = numpy_statistics(hooked[key], *first_batch_range(hooked[key][:3]), bins=64, topk=min(9, recorded))
            assert_recording_equals(self, got, key, want, samples=recorded)
        print(f"Ctrl+C: {recorded} of 20000 rows recorded, equal to NumPy on them")


class CliErrors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = pathlib.Path(self.tmp.name) / "out.pt"

    def tearDown(self):
        self.tmp.cleanup()

    def fails(self, *args, says):
        result = cli(*args)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(says, result.stderr)
        self.assertFalse(self.out.exists(), "a failed run left an output file")
        self.assertEqual(list(pathlib.Path(self.tmp.name).iterdir()), [], "temporary files were left behind")
        return result

    def test_bad_model_files(self):
        for name, says in [("bad_empty.pt", "empty file"), ("bad_state_dict.pt", "state_dict"),
                           ("bad_lfs_pointer.pt", "Git LFS pointer"), ("bad_truncated.pt", "truncated"),
                           ("bad_text.pt", "text file"), ("bad_pickled_module.pt", "nn.Module pickled")]:
            with self.subTest(name):
                self.fails("run", FIXTURES / name, "--input", FIXTURES / "small_input.pt", "--out", self.out, says=says)

    def test_unknown_path_lists_closest(self):
        self.fails("run", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt",
                   "--out", self.out, "--grab", "layer1.0.conv3", says="closest paths: layer1.0.conv1")

    def test_model_error_during_run(self):
        self.fails("run", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt",
                   "--out", self.out, "--edit", "layer2:zero:999", says="channel 999 is out of range")

    def test_truncation_in_a_loop(self):
        self.fails("run", FIXTURES / "branchy.pt", "--input", FIXTURES / "small_input.pt", "--out", self.out,
                   "--truncate", "c", says="inside a loop")

    def test_usage_errors(self):
        result = cli("run", FIXTURES / "relu_twice.pt")
        self.assertEqual(result.returncode, 2)
        self.assertIn("run: --input is required", result.stderr)
        result = cli("frobnicate")
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown command 'frobnicate'", result.stderr)

    def test_numeric_options_are_range_checked(self):
        model, data = FIXTURES / "relu_twice.pt", FIXTURES / "small_input.pt"
        never = pathlib.Path(self.tmp.name) / "never_written"
        record = ("record", model, "--input", data, "--grab", "a", "--out", never)
        cases = [
            (record + ("--batch", "0"), "--batch: Value 0 not in range 1 to 65536"),
            (record + ("--range", "5:1"), "--range: LO must be below HI, got '5:1'"),
            (record + ("--range", "abc"), "--range: expected LO:HI (two numbers), got 'abc'"),
            (record + ("--range", "0:nan"), "--range: expected a finite number, got 'nan'"),
            (record + ("--bins", "-1"), "--bins: Value -1 not in range"),
            (record + ("--reduce", "median"), "--reduce: median not in {none,sum,mean,max,min,stats}"),
            (("run", model, "--input", data, "--out", self.out, "--threads", "-3"),
             "--threads: Value -3 not in range 0 to 4096"),
            (("run", model, "--input", data, "--out", self.out, "--target", "-2"), "--target: Value -2 not in range"),
            (("run", model, "--input", data, "--out", self.out, "--target-box", "5,5,2,9"),
             "--target-box: expected 0 <= X0 < X1 and 0 <= Y0 < Y1, got '5,5,2,9'"),
            (("run", model, "--input", data, "--out", self.out, "--device", "gpu"),
             "--device: expected auto, cpu, cuda or cuda:N, got 'gpu'"),
            (("probe", "train", model, "--layer", "a", "--data", data, "--out", self.out, "--validation", "1.5"),
             "--validation: expected a fraction between 0 and 1 (exclusive), got '1.5'"),
        ]
        for args, message in cases:
            with self.subTest(args=args[-2:]):
                result = cli(*args)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertNotIn("stod", result.stderr)
        self.assertEqual(list(pathlib.Path(self.tmp.name).iterdir()), [], "a refused command wrote something")

    def test_version(self):
        result = cli("--version")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"^torchscope-cli \d+\.\d+\.\d+ \(LibTorch \d+\.\d+\.\d+\)\n$")

    def test_help_per_command(self):
        result = cli("record", "--help")
        self.assertEqual(result.returncode, 0)
        self.assertIn("Usage: torchscope-cli record", result.stdout)
        self.assertIn("--batch", result.stdout)
        self.assertNotIn("--probe-only", result.stdout)  # run's option, not record's

    def test_output_folder_missing(self):
        result = cli("run", FIXTURES / "relu_twice.pt", "--input", FIXTURES / "small_input.pt",
                     "--out", "/nonexistent/out.pt")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("does not exist", result.stderr)


class CliBadInput(unittest.TestCase):
    """Input a new user gets wrong: each gets a message naming the file and what it is, never a
    silent substitute."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def run_on(self, image):
        return cli("run", FASHION, "--input", image, "--out", self.dir / "out.pt")

    @unittest.skipIf(HEADLESS, "built without OpenCV")
    def test_a_truncated_jpeg_or_png_is_refused(self):
        for name in ("rgb.jpg", "rgb.png"):
            with self.subTest(name):
                data = (FIXTURES / "images" / name).read_bytes()
                cut = self.dir / f"cut_{name}"
                cut.write_bytes(data[: len(data) * 2 // 3])
                result = self.run_on(cut)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(f"cannot read image '{cut}'", result.stderr)
                self.assertIn("cut short", result.stderr)
                self.assertFalse((self.dir / "out.pt").exists())

    @unittest.skipIf(HEADLESS, "built without OpenCV")
    def test_a_damaged_jpeg_is_refused(self):
        data = bytearray((FIXTURES / "images" / "rgb.jpg").read_bytes())
        start = data.index(b"\xff\xda")  # the scan: overwrite entropy-coded data in its middle
        middle = start + (len(data) - start) // 2
        data[middle:middle + 64] = b"\xff\xd0" * 32  # restart markers where none belong
        bad = self.dir / "damaged.jpg"
        bad.write_bytes(bytes(data))
        result = self.run_on(bad)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("damaged or cut short", result.stderr)

    @unittest.skipIf(HEADLESS, "built without OpenCV")
    def test_formats_it_cannot_read_are_named(self):
        from PIL import Image
        gif = self.dir / "anim.gif"
        Image.new("RGB", (8, 8), (200, 10, 10)).save(gif)
        files = {gif: "a GIF image, which TorchScope cannot read; convert it to PNG",
                 self.dir / "photo.heic": "a HEIC image, which TorchScope cannot read",
                 self.dir / "drawing.svg": "an SVG drawing (vector graphics)",
                 self.dir / "paper.pdf": "a PDF document, not an image"}
        (self.dir / "photo.heic").write_bytes(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + bytes(64))
        (self.dir / "drawing.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>')
        (self.dir / "paper.pdf").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n")
        for path, message in files.items():
            with self.subTest(path.name):
                result = self.run_on(path)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(path.name, result.stderr)
                self.assertIn(message, result.stderr)

    def test_a_gif_given_as_the_model_is_named(self):
        gif = self.dir / "model.pt"
        gif.write_bytes(b"GIF89a" + bytes(64))
        result = cli("inspect", gif)
        self.assertEqual(result.returncode, 1)
        self.assertIn("this is a GIF image, not a TorchScript archive", result.stderr)

    def test_run_takes_the_samples_of_a_record_file(self):
        saved = torch.load(FIXTURES / "labelled_inputs.pt")
        result = cli("run", FASHION, "--input", FIXTURES / "labelled_inputs.pt", "--out", self.dir / "out.pt",
                     "--grab", "features.1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("run takes its samples", result.stderr)
        got = torch.load(self.dir / "out.pt")
        self.assertEqual(got["output"].shape[0], saved["samples"].shape[0])
        with torch.no_grad():
            want = torch.jit.load(str(FASHION))(saved["samples"])
        self.assertLess(max_diff(got["output"], want), 1e-5)

    def test_a_dict_without_samples_says_what_run_takes(self):
        weird = self.dir / "weird.pt"
        torch.save({"images": torch.zeros(2, 1, 28, 28), "names": ["a", "b"]}, weird)
        result = cli("run", FASHION, "--input", weird, "--out", self.dir / "out.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("holds a dict (keys: images, names), not a tensor", result.stderr)
        self.assertIn("the model's forward takes Tensor", result.stderr)
        self.assertNotIn("GenericDict", result.stderr)

    def test_a_dict_of_one_entry_is_read(self):
        # Python pickles a dict of one entry with SETITEM, which LibTorch 1.13 could not read.
        single = self.dir / "single.pt"
        samples = torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(1))
        torch.save({"samples": samples}, single)
        result = cli("run", FASHION, "--input", single, "--out", self.dir / "out.pt")
        self.assertEqual(result.returncode, 0, result.stderr)
        with torch.no_grad():
            want = torch.jit.load(str(FASHION))(samples)
        self.assertLess(max_diff(torch.load(self.dir / "out.pt")["output"], want), 1e-5)

    def test_a_bad_samples_file_names_the_field(self):
        bad = self.dir / "bad.pt"
        torch.save({"samples": torch.zeros(2, 1, 28, 28), "labels": [1, 2]}, bad)
        result = cli("record", FASHION, "--input", bad, "--grab", "features.1", "--out", self.dir / "stats")
        self.assertEqual(result.returncode, 1)
        self.assertIn("\"labels\" must be a tensor of integer labels [N]", result.stderr)

    def test_record_of_a_tensor_stream(self):
        # Needs no OpenCV: the headless build records tensor files too.
        out = self.dir / "stats.pt"
        result = cli("record", FASHION, "--input", FIXTURES / "labelled_inputs.pt", "--grab", "features.1",
                     "--out", out, "--condition", "true:0,9", "--batch", "5")
        self.assertEqual(result.returncode, 0, result.stderr)
        saved = torch.load(FIXTURES / "labelled_inputs.pt")
        expected = torch.load(FIXTURES / "labelled_expected.pt")
        got = torch.load(out)
        self.assertEqual(json.loads(result.stdout)["selected"], int(((saved["labels"] == 0) | (saved["labels"] == 9)).sum()))
        want = expected["true:0,9/features.1/stats:mean"]
        self.assertLess(max_diff(got["features.1:mean"], want), 1e-5 * want.abs().max().item())


class CliCompare(unittest.TestCase):
    """compare: the matrix and tables against NumPy's CKA and differences on forward hooks
    (tests/fixtures/cka_numpy.py, computed by the fixture script)."""

    LAYERS = ["features.0", "features.1", "features.2", "classifier.2"]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.expected = torch.load(FIXTURES / "compare_expected.pt")
        self.samples = self.dir / "samples.pt"
        torch.save(torch.load(FIXTURES / "labelled_inputs.pt")["samples"], self.samples)

    def tearDown(self):
        self.tmp.cleanup()

    def layers(self):
        return [arg for layer in self.LAYERS for arg in ("--layer", layer)]

    @unittest.skipIf(HEADLESS, "reads image files")
    def test_cka_over_an_image_folder_equals_numpy(self):
        # The demo's own input setup decodes the folder into the fixture's samples.
        out = self.dir / "cka.pt"
        result = cli("compare", FASHION, FIXTURES / "compare_b.pt", "--input", FIXTURES / "labelled",
                     *self.layers(), "--batch", "12", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        saved = torch.load(out)
        self.assertEqual(saved["mode"], "cka")
        self.assertEqual(saved["layers_a"], self.LAYERS)
        self.assertEqual(saved["samples"], 36)
        self.assertLess(max_diff(saved["cka"], self.expected["cka_minibatch"]), 1e-5)
        self.assertIn("minibatch estimate over 36 samples in 3 batches", result.stdout)

    def test_checkpoints_table_csv_and_json(self):
        common = ["compare", FIXTURES / "compare_a.pt", FIXTURES / "compare_b.pt", "--mode", "checkpoints",
                  "--input", self.samples, *self.layers(), "--batch", "12"]
        result = cli(*common, "--out", self.dir / "ck.csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"features\.2 .*<- first below 0\.990")
        with open(self.dir / "ck.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r["layer"] for r in rows], self.LAYERS)
        for row in rows:
            for measure in ("cosine", "relative_l2", "max_abs_error", "max_relative_error"):
                expected = float(self.expected[f"checkpoints/{row['layer']}/{measure}"])
                self.assertAlmostEqual(float(row[measure]), expected, delta=1e-8 + 1e-8 * abs(expected))
        self.assertEqual([r["layer"] for r in rows if r["first_over"] == "yes"], ["features.2"])

        result = cli(*common, "--out", self.dir / "ck.json")
        self.assertEqual(result.returncode, 0, result.stderr)
        saved = json.loads((self.dir / "ck.json").read_text())
        self.assertEqual(saved["comparisons"][0]["first_over"], "features.2")
        cka = torch.tensor(saved["cka"], dtype=torch.float64)
        self.assertLess(max_diff(cka, self.expected["cka_minibatch"]), 1e-6)

    def test_precision_drift_against_float64(self):
        out = self.dir / "drift.pt"
        layers = json.loads((FIXTURES / "drift_layers.json").read_text())
        result = cli("compare", FIXTURES / "compare_a.pt", "--input", self.samples, "--precision", "float32",
                     *[arg for layer in layers for arg in ("--layer", layer)], "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("cpu float32 against cpu float64", result.stdout)
        saved = torch.load(out)
        drift = saved["comparisons"][0]
        self.assertEqual(drift["layers"], layers)
        for i, layer in enumerate(layers):
            expected = float(self.expected[f"drift/float32/{layer}/max_abs_error"])
            self.assertAlmostEqual(float(drift["max_abs_error"][i]), expected, delta=1e-6 * expected)

    def test_pooled_cka_of_channel_means_equals_numpy(self):
        out = self.dir / "pooled.json"
        result = cli("compare", FIXTURES / "compare_a.pt", FIXTURES / "compare_b.pt", "--input", self.samples,
                     *self.layers(), "--batch", "12", "--pooled", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("Linear CKA (channel means), minibatch estimate over 36 samples in 3 batches", result.stdout)
        saved = json.loads(out.read_text())
        self.assertEqual(saved["features"], "pooled")
        cka = torch.tensor(saved["cka"], dtype=torch.float64)
        # NumPy's CKA of each channel's spatial mean; far from the flattened activations' CKA.
        self.assertLess(max_diff(cka, self.expected["cka_minibatch_pooled"]), 1e-6)
        self.assertGreater(max_diff(cka, self.expected["cka_minibatch"]), 0.1)

    def test_layer_b_takes_model_bs_own_layers(self):
        out = self.dir / "ab.pt"
        # B's layers given out of order: they come in output order, as A's do.
        result = cli("compare", FIXTURES / "compare_a.pt", FIXTURES / "compare_b.pt", "--input", self.samples,
                     "--layer", "features.2", "--layer", "features.0", "--layer-b", "classifier.2",
                     "--layer-b", "features.1", "--batch", "12", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        saved = torch.load(out)
        self.assertEqual(saved["layers_a"], ["features.0", "features.2"])
        self.assertEqual(saved["layers_b"], ["features.1", "classifier.2"])
        rows = [self.LAYERS.index(layer) for layer in saved["layers_a"]]
        columns = [self.LAYERS.index(layer) for layer in saved["layers_b"]]
        want = self.expected["cka_minibatch"][rows][:, columns]
        self.assertLess(max_diff(saved["cka"], want), 1e-6)

    def test_threshold_moves_the_first_checkpoint_layer_apart(self):
        # Per layer CKA of the two checkpoints (NumPy's): the first layer below --threshold parts.
        ckas = self.expected["cka_minibatch"].diagonal().tolist()
        low, lower = sorted(ckas)[1], sorted(ckas)[0]  # the two lowest
        self.assertGreater(low - lower, 1e-3, "the fixture's checkpoints part too little to place a threshold")
        between, below_all = (low + lower) / 2, lower - 1e-3
        for threshold, first in ((between, next(i for i, c in enumerate(ckas) if c < between)), (below_all, None)):
            with self.subTest(threshold=threshold):
                out = self.dir / "ck.json"
                result = cli("compare", FIXTURES / "compare_a.pt", FIXTURES / "compare_b.pt", "--mode", "checkpoints",
                             "--input", self.samples, *self.layers(), "--batch", "12", "--threshold", repr(threshold),
                             "--out", out)
                self.assertEqual(result.returncode, 0, result.stderr)
                saved = json.loads(out.read_text())
                self.assertEqual(saved["threshold"], threshold)
                self.assertEqual(saved["comparisons"][0]["first_over"], None if first is None else self.LAYERS[first])
                if first is None:
                    self.assertIn(f"no layer below CKA {threshold:.3f}", result.stdout)
                else:
                    self.assertRegex(result.stdout, re.escape(self.LAYERS[first]) + r" .*<- first below")
        # At the default, 0.99, another layer parts first: the threshold moved it.
        self.assertNotEqual(next(i for i, c in enumerate(ckas) if c < 0.99), next(i for i, c in enumerate(ckas) if c < between))

    def test_threshold_moves_the_first_layer_of_precision_drift(self):
        # float32 against float64 (NumPy on the fixture's hooks): the first layer whose relative L2
        # error exceeds --threshold, placed between two layers' errors (a factor of two apart, far
        # beyond the 1e-6 the two sides' errors agree to). The errors are rounding themselves: the
        # CLI runs the 36 samples as one batch at the fixtures' thread count, as the fixture did
        # (in batches of 16 the classifier's float32 error comes out 3% apart).
        layers = json.loads((FIXTURES / "drift_layers.json").read_text())
        errors = [float(self.expected[f"drift/float32/{layer}/relative_l2"]) for layer in layers]
        ranked = sorted(errors)
        threshold = (ranked[1] * ranked[2]) ** 0.5
        self.assertGreater(ranked[2] / ranked[1], 1.5)
        first = next(i for i, e in enumerate(errors) if e > threshold)
        out = self.dir / "drift.pt"
        result = cli("compare", FIXTURES / "compare_a.pt", "--input", self.samples, "--precision", "float32",
                     *[arg for layer in layers for arg in ("--layer", layer)], "--threshold", repr(threshold),
                     "--batch", "36", "--threads", THREADS, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        saved = torch.load(out)
        self.assertEqual(saved["threshold"], threshold)
        drift = saved["comparisons"][0]
        self.assertEqual(drift["first_over"], first)
        self.assertRegex(result.stdout, re.escape(layers[first]) + r" .*<- first over")
        self.assertLess(max_diff(drift["relative_l2"], torch.tensor(errors)), 1e-6 * max(errors))
        # The default threshold, 1e-3, is far above every float32 error: no layer would part.
        self.assertLess(max(errors), 1e-3)

    def test_mistakes_are_named(self):
        no_b = cli("compare", FIXTURES / "compare_a.pt", "--mode", "checkpoints", "--input", self.samples,
                   "--layer", "features.1")
        self.assertEqual(no_b.returncode, 2)
        self.assertIn("needs MODEL_B", no_b.stderr)
        bad = cli("compare", FIXTURES / "compare_a.pt", "--input", self.samples, "--layer", "features.1",
                  "--precision", "float8")
        self.assertEqual(bad.returncode, 1)
        self.assertIn("unknown precision 'float8'", bad.stderr)
        out = cli("compare", FIXTURES / "compare_a.pt", FIXTURES / "compare_b.pt", "--input", self.samples,
                  "--layer", "features.1", "--out", self.dir / "x.txt")
        self.assertEqual(out.returncode, 2)
        self.assertIn("FILE.pt, FILE.json or FILE.csv", out.stderr)
        unknown = cli("compare", FIXTURES / "compare_a.pt", FIXTURES / "compare_b.pt", "--input", self.samples,
                      "--layer", "featurs.1")
        self.assertEqual(unknown.returncode, 1)
        self.assertIn("featurs.1", unknown.stderr)
        self.assertIn("features.1", unknown.stderr)  # the closest existing path


class CliInspect(unittest.TestCase):
    def test_without_a_model_it_opens_the_bundled_demo(self):
        result = cli("inspect")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("face_expression.pt", result.stdout)
        self.assertIn("features.dense0.conv0", result.stdout)

    def test_json_tree_matches_named_modules(self):
        result = cli("inspect", FIXTURES / "resnet18_scripted.pt", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        tree = json.loads(result.stdout)
        table = json.loads((FIXTURES / "resnet18_modules.json").read_text())
        self.assertEqual([m["path"] for m in tree["modules"]], [row["path"] for row in table])
        self.assertEqual([m["type"] for m in tree["modules"]], [row["type"] for row in table])
        self.assertEqual([m["total_parameters"] for m in tree["modules"]], [row["total_parameters"] for row in table])
        self.assertEqual(tree["forward"][0]["type"], "Tensor")

    def test_table_with_output_shapes(self):
        result = cli("inspect", FIXTURES / "resnet18_scripted.pt", "--input", FIXTURES / "resnet18_input.pt")
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(l for l in result.stdout.splitlines() if l.startswith("layer1 "))
        self.assertIn("Sequential", line)
        self.assertIn("147968", line)
        self.assertIn("[2, 64, 56, 56]", line)


class CliProbe(unittest.TestCase):
    """probe train / sweep; the exported probe run by Python on Python-computed activations."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        # A cache of our own: no test reads activations another one left behind.
        os.environ["XDG_CACHE_HOME"] = str(self.dir / "cache")
        # Headless builds read no image folders: the same images as one tensor file.
        self.data = FIXTURES / ("probe_inputs.pt" if HEADLESS else "probe")

    def tearDown(self):
        os.environ.pop("XDG_CACHE_HOME", None)
        self.tmp.cleanup()

    def test_train_prints_accuracies_and_python_runs_the_probe(self):
        probe, state = self.dir / "footwear.pt", self.dir / "footwear_state.pt"
        result = cli("probe", "train", FASHION, "--layer", "features.1", "--data", self.data, "--out", probe,
                     "--state-dict", state, "--seed", "3")
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(l for l in result.stdout.splitlines() if l.startswith("train accuracy"))
        validation = float(line.split("validation accuracy ")[1].split("%")[0]) / 100
        print(line)
        self.assertGreaterEqual(validation, 0.9)  # 30 held-out images, chance 0.5

        # Python: forward hooks on the eager model (same weights) give features.1; the exported
        # TorchScript probe runs on them and must give what TorchScope's own run gives.
        activations = torch.load(FIXTURES / "probe_activations.pt")["features.1"]
        python_scores = torch.jit.load(str(probe))(activations)
        inputs = self.dir / "inputs.pt"
        torch.save(torch.load(FIXTURES / "probe_inputs.pt")["samples"], inputs)
        out = self.dir / "scores.pt"
        result = cli("run", FASHION, "--input", inputs, "--probe", f"footwear={probe}", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        ours = torch.load(out)
        self.assertEqual(ours["probe:footwear"].shape, (120, 1))
        print(f"exported probe in Python vs. TorchScope: max abs diff {max_diff(python_scores, ours['probe:footwear'])}")
        self.assertLess(max_diff(python_scores, ours["probe:footwear"]), 1e-5)
        self.assertIn("output", ours)

        # The state dict: plain tensors that reproduce the same scores by hand.
        sd = torch.load(state)
        self.assertEqual(sd["layer"], "features.1")
        self.assertEqual(sd["classes"], ["footwear", "rest"])
        by_hand = (activations.mean((2, 3)) - sd["feature_mean"]) / sd["feature_std"] @ sd["weight"].T + sd["bias"]
        self.assertLess(max_diff(by_hand, python_scores), 1e-5)
        # Rows are footwear (class 0) then rest: the logit of "rest" must separate them.
        truth = torch.load(FIXTURES / "probe_inputs.pt")["labels"]
        self.assertGreaterEqual(((python_scores[:, 0] > 0).long() == truth).float().mean().item(), 0.9)

        # Probe only: the stump stops at features.1; the model's output is left out.
        result = cli("run", FASHION, "--input", inputs, "--probe", f"footwear={state}", "--probe-only", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(set(torch.load(out)), {"features.1", "probe:footwear"})

    def test_flatten_pooling_reads_every_position_of_the_maps(self):
        # --pool flatten: each sample's whole [64, 7, 7] map is its 3,136 features. One batch of the
        # 120 images at the fixtures' thread count gives the fixture's hook values to the bit, and
        # the seed gives the split tests/fixtures/probe_reference.py draws with PyTorch's randperm:
        # the standardisation must be the mean and population std of the flattened maps of those
        # training rows. (The learned weights are left to test_probe_oracle.py, on data made for
        # it: on these maps a change of 1e-7 in the features moves Adam's weights by 5e-5.)
        import probe_reference as reference
        probe, state = self.dir / "flat.pt", self.dir / "flat_state.pt"
        result = cli("probe", "train", FASHION, "--layer", "features.1", "--data", FIXTURES / "probe_inputs.pt",
                     "--pool", "flatten", "--batch", "120", "--threads", THREADS, "--cache", "none", "--seed", "3",
                     "--json", "--out", probe, "--state-dict", state)
        self.assertEqual(result.returncode, 0, result.stderr)
        report, saved = json.loads(result.stdout), torch.load(state)
        activations = torch.load(FIXTURES / "probe_activations.pt")["features.1"]
        labels = torch.load(FIXTURES / "probe_inputs.pt")["labels"]
        torch.manual_seed(3)
        train, validation = reference.stratified_split(labels)
        flat = activations.flatten(1)[train]
        self.assertEqual((report["pooling"], report["features"]), ("flatten", 64 * 7 * 7))
        self.assertEqual((saved["pooling"], list(saved["weight"].shape)), ("flatten", [1, 64 * 7 * 7]))
        # As the recipe computes them (float32 over the same rows): the same bits. And NumPy's in
        # float64, to float32's rounding of 90 rows' sums (measured: 5e-8 of the largest value).
        self.assertTrue(torch.equal(saved["feature_mean"], flat.mean(0)))
        self.assertTrue(torch.equal(saved["feature_std"], flat.std(0, unbiased=False).clamp_min(1e-6)))
        rows = flat.double().numpy()
        self.assertLessEqual(max_diff(saved["feature_mean"], rows.mean(0)), 1e-6 * np.abs(rows).max())
        want_std = np.maximum(rows.std(0, ddof=0), 1e-6)
        self.assertLessEqual(max_diff(saved["feature_std"], want_std), 1e-6 * want_std.max())
        self.assertEqual(sum(sum(row) for row in report["confusion"]), len(validation))
        # The exported probe flattens the raw maps itself: on the hooks' activations it gives the
        # state dict's scores by hand, and TorchScope's run with it gives the same.
        scores = torch.jit.load(str(probe))(activations)
        by_hand = (activations.flatten(1) - saved["feature_mean"]) / saved["feature_std"] @ saved["weight"].T + saved["bias"]
        self.assertLess(max_diff(scores, by_hand), 1e-5)
        inputs, out = self.dir / "inputs.pt", self.dir / "scores.pt"
        torch.save(torch.load(FIXTURES / "probe_inputs.pt")["samples"], inputs)
        result = cli("run", FASHION, "--input", inputs, "--probe", f"flat={probe}", "--threads", THREADS, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertLess(max_diff(torch.load(out)["probe:flat"], scores), 1e-5)

    def test_sweep_prints_one_line_per_layer_and_writes_csv(self):
        csv_path = self.dir / "sweep.csv"
        result = cli("probe", "sweep", FASHION, "--layer", "features.0", "--layer", "features.1", "--layer", "features.2",
                     "--data", self.data, "--csv", csv_path)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [l.split("\t") for l in result.stdout.splitlines()]
        self.assertEqual([l[0] for l in lines], ["features.0", "features.1", "features.2"])
        accuracies = [float(l[1]) for l in lines]
        self.assertTrue(all(0.5 < a <= 1.0 for a in accuracies), accuracies)
        self.assertIn("best layer:", result.stderr)
        import csv
        rows = list(csv.DictReader(csv_path.open()))
        for row, accuracy in zip(rows, accuracies, strict=True):
            self.assertAlmostEqual(float(row["validation_accuracy"]), accuracy, places=4)
        # The second sweep reads the cached activations.
        again = cli("probe", "sweep", FASHION, "--layer", "features.2", "--data", self.data)
        self.assertIn("activations of features.2 from the cache", again.stderr)
        self.assertEqual(float(again.stdout.split("\t")[1]), accuracies[2])

    def test_probe_errors_say_what_is_wrong(self):
        result = cli("probe", "train", FASHION, "--layer", "features.9", "--data", self.data, "--out", self.dir / "p.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("features.9", result.stderr)
        result = cli("probe", "train", FASHION, "--layer", "features.1", "--data", FIXTURES / "resnet18_input.pt",
                     "--out", self.dir / "p.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("not a {\"samples\": [N, ...], \"labels\": [N]} dict", result.stderr)
        result = cli("probe", "fit")
        self.assertEqual(result.returncode, 2)
        self.assertIn("probe train or probe sweep", result.stderr)
        result = cli("run", FASHION, "--input", FIXTURES / "resnet18_input.pt", "--probe", f"x={FIXTURES / 'bad_text.pt'}",
                     "--out", self.dir / "o.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("is not a probe: this is a text file", result.stderr)


def tiny_vit(folder):
    """A small vision transformer (torchvision's, random weights, 28 x 28 in 7-pixel patches, one block)
    scripted as FOLDER/vit.pt, with FOLDER/setup.json to bring the demo's photos to its size."""
    import torchvision
    torch.manual_seed(0)
    vit = torchvision.models.VisionTransformer(image_size=28, patch_size=7, num_layers=1, num_heads=2,
                                               hidden_dim=16, mlp_dim=32, num_classes=10).eval()
    torch.jit.save(torch.jit.script(vit), folder / "vit.pt")
    (folder / "setup.json").write_text(json.dumps({"preprocess": {"resize": 28, "crop": 28}}))


@unittest.skipIf(HEADLESS, "reads image files")
class CliMetricsOnATransformer(unittest.TestCase):
    """evaluate on a vision transformer: a method's maps computed after another method's metrics (runs
    without gradients) are the maps a fresh process computes, and so are their metrics. (The scoring
    runs used InferenceMode, and the engine's function kept what its first run folded as inference
    tensors: the next gradient through a ViT failed with "Inference tensors cannot be saved for
    backward", in the window after the maps already made.)"""

    IMAGES = [ROOT / "resources" / "demo" / "images" / f"{n}.png" for n in ("bag", "coat")]

    def test_maps_after_metrics_equal_a_fresh_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            tiny_vit(tmp)
            common = [tmp / "vit.pt", "--preprocess", tmp / "setup.json", *inputs(self.IMAGES), "--metric",
                      "deletion", "--metric", "insertion", "--threads", THREADS]
            layer = ["--layer", "encoder.layers.encoder_layer_0"]
            result = cli("evaluate", *common, "--method", "saliency", "--method", "grad_cam", *layer,
                         "--out", tmp / "both.json")
            self.assertEqual(result.returncode, 0, result.stderr)
            result = cli("evaluate", *common, "--method", "grad_cam", *layer, "--out", tmp / "alone.json")
            self.assertEqual(result.returncode, 0, result.stderr)
            both = json.loads((tmp / "both.json").read_text())["methods"]
            alone = json.loads((tmp / "alone.json").read_text())["methods"]
            self.assertEqual(sorted(both), ["grad_cam", "saliency"])
            for metric in ("deletion", "insertion"):
                self.assertEqual(both["grad_cam"][metric]["curves"], alone["grad_cam"][metric]["curves"], metric)
                self.assertEqual(len(both["grad_cam"][metric]["curves"]), 2)


@unittest.skipIf(HEADLESS, "reads image files")
class CliSeveralInputs(unittest.TestCase):
    """--input a b c d, as a shell expands --input *.png, in every command that takes inputs: the same
    result as --input a --input b ... (the files compared whole, times left out); a model written
    after the inputs is refused, saying to put it first, never taken for an input or left out."""

    IMAGES = [ROOT / "resources" / "demo" / "images" / f"{n}.png" for n in ("bag", "coat", "dress", "sneaker")]
    COMMANDS = {  # command: (arguments after MODEL, output file)
        "run": (["--grab", "features.0", "--grab", "features.1:grad", "--target", "2"], "out.pt"),
        "inspect": (["--json"], None),
        "attribute": (["--method", "saliency", "--method", "grad_cam", "--layer", "features.1"], "maps.npz"),
        "evaluate": (["--method", "saliency", "--metric", "deletion"], "metrics.json"),
        "sanity": (["--method", "saliency"], "sanity.json"),
        "gradcam": (["--layer", "features.1"], "cams.npz"),
        "record": (["--grab", "features.1"], "recorded.npz"),
        "compare": (["--mode", "cka", "--layer", "features.1"], "cka.json"),
    }
    SECOND_MODEL = {"compare": [FASHION]}  # positional, before --input

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def content(path):
        if path.suffix == ".npz":
            with np.load(path) as data:
                return {key: data[key].tolist() for key in data.files}
        if path.suffix == ".pt":
            return {key: value.tolist() for key, value in torch.load(path).items()}
        report = json.loads(path.read_text())
        report.pop("seconds", None)
        # Without --memory-mb the cap is a share of the memory free at that moment; the batch it gave (what
        # can move a number) is compared.
        report.pop("memory_mb", None)
        return report

    def test_every_command_takes_several_paths_after_one_input(self):
        for command, (args, out) in self.COMMANDS.items():
            with self.subTest(command=command):
                got = []
                for name, given in (("one", ["--input", *self.IMAGES]), ("each", inputs(self.IMAGES))):
                    extra = ["--out", self.dir / f"{name}_{out}"] if out else []
                    result = cli(command, FASHION, *self.SECOND_MODEL.get(command, []), *given, *args, *extra,
                                 "--threads", THREADS)
                    self.assertEqual(result.returncode, 0, f"{name}: {result.stderr}")
                    got.append(self.content(self.dir / f"{name}_{out}") if out else result.stdout)
                self.assertEqual(got[0], got[1])
                self.assertTrue(got[0])
        # attention, on a small vision transformer
        tiny_vit(self.dir)
        got = []
        for name, given in (("one", ["--input", *self.IMAGES]), ("each", inputs(self.IMAGES))):
            result = cli("attention", self.dir / "vit.pt", "--preprocess", self.dir / "setup.json", *given,
                         "--out", self.dir / f"{name}_attention.npz", "--threads", THREADS)
            self.assertEqual(result.returncode, 0, f"{name}: {result.stderr}")
            got.append(self.content(self.dir / f"{name}_attention.npz"))
        self.assertEqual(got[0], got[1])
        self.assertIn("several after one --input", cli("run", "--help").stdout)

    def test_a_model_after_the_inputs_is_refused(self):
        result = cli("run", "--input", *self.IMAGES, FASHION, "--grab", "features.0", "--out", self.dir / "out.pt")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(f"'{FASHION}' is a model file", result.stderr)
        self.assertIn("Put the model first: torchscope-cli run MODEL --input IMAGES", result.stderr)
        self.assertFalse((self.dir / "out.pt").exists())
        # compare's second model too, where it would have been taken for an image
        result = cli("compare", FASHION, "--input", *self.IMAGES, FASHION, "--mode", "cka", "--layer", "features.1",
                     "--out", self.dir / "cka.json")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("Put the model first: torchscope-cli compare MODEL", result.stderr)


@unittest.skipIf(HEADLESS, "reads image files")
class CliIntegratedGradientsReLU6(unittest.TestCase):
    """Integrated Gradients through ReLU6 (torchvision's MobileNetV2: an in-place hardtanh, whose gradient
    is zero where it clips) on two photos resized to 96 x 112, 32 Gauss-Legendre steps: equal to
    Captum's on the input TorchScope preprocessed, completeness included, with a quarter or more of the
    activations clipped at 0 or at 6 along the path. The 0.3 % difference a review saw against Captum
    on a photo the window had preprocessed does not appear when both are given the same input."""

    PHOTOS = [ROOT / "resources" / "face" / "photos" / f"{n}.png" for n in ("astronaut_head", "cameraman_face")]

    def test_integrated_gradients_equal_captum_through_relu6(self):
        import torchvision
        from captum.attr import IntegratedGradients
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            torch.manual_seed(3)
            model = torchvision.models.mobilenet_v2(num_classes=10)
            # Random weights with batch-norm statistics from the data, and wider pre-activations, so
            # that ReLU6 clips at both ends on real images.
            for module in model.modules():
                if isinstance(module, torch.nn.BatchNorm2d):
                    module.momentum = None
                    module.weight.data.fill_(3.0)
            model.train()
            with torch.no_grad():
                for _ in range(3):
                    model(torch.randn(8, 3, 96, 112))
            model.eval()
            torch.jit.save(torch.jit.script(model), tmp / "mobilenet_v2.pt")
            (tmp / "setup.json").write_text(json.dumps({"preprocess": {
                "resize": [96, 112], "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}))
            common = [tmp / "mobilenet_v2.pt", *inputs(self.PHOTOS), "--preprocess", tmp / "setup.json",
                      "--threads", THREADS]
            result = cli("run", *common, "--grab", "features.0:in0", "--out", tmp / "x.pt")
            self.assertEqual(result.returncode, 0, result.stderr)
            x = torch.load(tmp / "x.pt")["features.0:in0"]
            self.assertEqual(tuple(x.shape), (2, 3, 96, 112))
            result = cli("attribute", *common, "--method", "integrated_gradients", "--steps", "32", "--target", "3",
                         "--out", tmp / "ig.npz")
            self.assertEqual(result.returncode, 0, result.stderr)
            got = torch.from_numpy(np.load(tmp / "ig.npz")["integrated_gradients"])

        clipped, total = [0], [0]

        def count(module, args, output):
            clipped[0] += int(((output == 0) | (output == 6)).sum())
            total[0] += output.numel()
        hooks = [m.register_forward_hook(count) for m in model.modules() if isinstance(m, torch.nn.ReLU6)]
        with torch.no_grad():
            for alpha in (0.25, 0.5, 1.0):
                model(alpha * x)
        for hook in hooks:
            hook.remove()
        self.assertGreater(clipped[0] / total[0], 0.25)
        want = IntegratedGradients(model).attribute(x, baselines=torch.zeros_like(x), target=3, n_steps=32,
                                                    method="gausslegendre")
        with torch.no_grad():
            change = model(x)[:, 3] - model(torch.zeros_like(x))[:, 3]
        for i in range(len(x)):
            scale = float(want[i].abs().max())
            self.assertGreater(scale, 0.0)
            self.assertLessEqual(max_diff(got[i], want[i]), 1e-5 * scale, self.PHOTOS[i].name)
            # Completeness (the maps' sum over the score's change) as the review compared it: the same
            # to the rounding of a sum over 32,256 values.
            ours, theirs = float(got[i].sum() / change[i]), float(want[i].sum() / change[i])
            print(f"{self.PHOTOS[i].name}: completeness {ours:.6f} (Captum {theirs:.6f}), "
                  f"{100 * clipped[0] / total[0]:.0f} % of the ReLU6 outputs clipped")
            self.assertLessEqual(abs(float(got[i].sum() - want[i].sum())), 1e-5 * float(want[i].abs().sum()))


def traced_residual():
    """A residual stage whose block begins with a Dropout two levels down (a function, not a class at
    the top of this file: CMake makes a ctest entry of every such class)."""

    class Stage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = torch.nn.Sequential(
                torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Conv2d(4, 4, 3, padding=1)),
                torch.nn.BatchNorm2d(4))
            self.block[1].running_var.uniform_(0.5, 2.0)

        def forward(self, x):
            return x + self.block(x)

    class TracedResidual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 4, 3)
            self.stage = Stage()
            self.proj = torch.nn.Conv2d(4, 4, 1)
            self.head = torch.nn.Linear(4, 5)

        def forward(self, x):
            y = self.stage(self.stem(x))
            return self.head((y + self.proj(y)).mean((2, 3)))

    return TracedResidual()


class CliOwnModel(unittest.TestCase):
    """A researcher's own model: its setup, modules that never run, every output kind."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.out = self.dir / "out.pt"

    def tearDown(self):
        self.tmp.cleanup()

    def run_ok(self, *args):
        result = cli(*args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_inspect_with_input_skips_modules_that_never_run(self):
        result = self.run_ok("inspect", FIXTURES / "never_called.pt", "--input", FIXTURES / "never_called_input.pt")
        line = next(l for l in result.stdout.splitlines() if l.startswith("unused "))
        self.assertIn("never", line)
        self.assertIn("[2, 3]", next(l for l in result.stdout.splitlines() if l.startswith("head ")))
        self.assertIn("left-over or unused", result.stdout)
        tree = json.loads(self.run_ok("inspect", FIXTURES / "never_called.pt", "--json").stdout)
        called = json.loads((FIXTURES / "never_called_called.json").read_text())
        self.assertEqual([m["path"] for m in tree["modules"] if m["path"] and m["called"]], called)

    def test_a_glob_skips_them_and_a_path_is_refused(self):
        result = self.run_ok("run", FIXTURES / "never_called.pt", "--input", FIXTURES / "never_called_input.pt",
                             "--out", self.out, "--grab", "*")
        self.assertIn("skips 3 module(s) whose forward never runs", result.stderr)
        got = torch.load(self.out)
        expected = torch.load(FIXTURES / "never_called_expected.pt")
        for key in ("stem", "blocks.0", "blocks.1", "act", "head"):
            self.assertTrue(torch.equal(got[key], expected[key]) or max_diff(got[key], expected[key]) < 1e-6, key)
        result = cli("run", FIXTURES / "never_called.pt", "--input", FIXTURES / "never_called_input.pt",
                     "--out", self.out, "--grab", "proj")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("weights are used directly", result.stderr)

    def test_a_traced_pass_through_is_refused_never_written_as_none(self):
        # timm's BatchNormAct2d with act=nn.Identity (mobilevitv2's conv_proj.bn.act): a trace keeps
        # the Identity's call without its input or output. Eager hooks see a tensor there; the traced
        # model holds none, so a grab by path is refused saying why, a glob skips it with a note, and
        # the scripted model gives the value eager hooks see.
        torch.manual_seed(13)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), NormAct(), torch.nn.ReLU()).eval()
        x = torch.randn(2, 3, 9, 7)
        torch.save(x, self.dir / "x.pt")
        seen = {}
        hook = model[1].act.register_forward_hook(lambda m, i, o: seen.__setitem__("act", o.detach()))
        with torch.no_grad():
            model(x)
        hook.remove()  # torch.jit.script would compile it
        torch.jit.save(torch.jit.trace(model, x), self.dir / "traced.pt")
        torch.jit.save(torch.jit.script(model), self.dir / "scripted.pt")
        refused = cli("run", self.dir / "traced.pt", "--input", self.dir / "x.pt", "--grab", "1.act", "--out", self.out)
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("passes its input through", refused.stderr)
        self.assertIn("its parent '1'", refused.stderr)
        self.assertFalse(self.out.exists())
        skipped = self.run_ok("run", self.dir / "traced.pt", "--input", self.dir / "x.pt", "--grab", "1.*",
                              "--out", self.out)
        self.assertIn("skips 2 module(s) whose forward never runs: 1.drop, 1.act", skipped.stderr)
        got = torch.load(self.out)
        self.assertEqual(sorted(got), ["1.bn", "output"])
        self.assertLessEqual(max_diff(got["1.bn"], seen["act"]), 1e-6)
        self.run_ok("run", self.dir / "scripted.pt", "--input", self.dir / "x.pt", "--grab", "1.act", "--out", self.out)
        self.assertLessEqual(max_diff(torch.load(self.out)["1.act"], seen["act"]), 1e-6)
        tree = json.loads(self.run_ok("inspect", self.dir / "traced.pt", "--json").stdout)
        act = next(m for m in tree["modules"] if m["path"] == "1.act")
        self.assertFalse(act["called"])

    def test_a_traced_block_that_begins_with_a_dropout_returns_its_result(self):
        # An eval-mode Dropout returns its input itself, so a trace credits the residual's read of a
        # block's input to the dropout inside it and records the block (and the block around it)
        # returning a tuple of its result and that input (timm's ConvNormAct; EfficientViT's qkv).
        # Eager hooks see the result alone, and so does TorchScope, its gradient included.
        torch.manual_seed(14)
        model = traced_residual().eval()
        x = torch.randn(2, 3, 9, 7)
        torch.save(x, self.dir / "x.pt")
        hooks = {}
        handles = [m.register_forward_hook(lambda m, i, o, n=n: hooks.__setitem__(n, o))
                   for n, m in model.named_modules() if n]
        output = model(x)
        for name in ("stage.block", "stage.block.0"):
            hooks[name].retain_grad()
        output[:, 1].sum().backward()
        for handle in handles:
            handle.remove()
        torch.jit.save(torch.jit.trace(model, x), self.dir / "traced.pt")
        self.run_ok("run", self.dir / "traced.pt", "--input", self.dir / "x.pt", "--preprocess", "none",
                    "--grab", "*", "--grab", "stage.block:grad", "--grab", "stage.block.0:grad", "--target", "1",
                    "--out", self.out)
        got = torch.load(self.out)
        for name, want in hooks.items():
            with self.subTest(module=name):
                self.assertIsInstance(got[name], torch.Tensor)
                self.assertLessEqual(max_diff(got[name], want.detach()), 1e-6)
        for name in ("stage.block", "stage.block.0"):
            self.assertLessEqual(max_diff(got[f"{name}:grad"], hooks[name].grad), 1e-6, name)

    def test_frozen_and_newer_models_are_named(self):
        result = self.run_ok("inspect", FIXTURES / "frozen_relu_twice.pt")
        self.assertIn("frozen with torch.jit.freeze", result.stdout)
        result = cli("run", FIXTURES / "frozen_relu_twice.pt", "--input", FIXTURES / "small_input.pt",
                     "--out", self.out, "--grab", "conv1")
        self.assertIn("frozen with torch.jit.freeze", result.stderr)
        result = cli("inspect", FIXTURES / "newer_version.pt")
        self.assertIn("file format version 99", result.stderr)
        self.assertIn("CMAKE_PREFIX_PATH", result.stderr)

    def test_damaged_debug_records_are_left_out_never_fatal(self):
        # LibTorch reads a model's code/*.debug_pkl (where its code came from in Python) only when a
        # message quotes the code, inside a what() that may not throw: a damaged one ended the
        # process (found by fuzz_model_load in CI). TorchScope loads without them: the model opens
        # and runs as before, and a model whose code does not compile as well is refused with its
        # message.
        import zipfile
        source = FIXTURES / "fashion_plain.pt"

        def damaged(name):
            path = self.dir / name
            with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w") as copy:
                for info in original.infolist():
                    data = original.read(info.filename)
                    if info.filename.endswith(".debug_pkl"):
                        data = data[:2] + b"not a pickle"
                    copy.writestr(info, data)
            return path

        model = damaged("debug.pt")
        self.run_ok("inspect", model)
        x = torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(4))
        torch.save(x, self.dir / "x.pt")
        self.run_ok("run", model, "--input", self.dir / "x.pt", "--out", self.out, "--threads", THREADS)
        with torch.no_grad():
            want = torch.jit.load(str(source))(x)
        self.assertTrue(torch.equal(torch.load(self.out)["output"], want))

        # The archive the fuzzer found: damaged debug records and code that does not compile.
        found = ROOT / "tests" / "fuzz" / "corpus" / "fuzz_model_load" / "eefad11aa408331fc2a4965347fd4e29c4572092"
        result = cli("inspect", found)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("aten::relux_", result.stderr)
        self.assertNotIn("terminate", result.stderr)

    def test_models_saved_by_pytorch_1_13_still_open(self):
        # The committed demo models were saved by PyTorch 1.13 (archive format 3 and 4; 2.x writes
        # 10 and a .data/serialization_id): run by the CLI they equal the environment's torch.jit.load.
        import zipfile
        x = torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(2))
        face = FASHION.parents[1] / "face" / "face_expression.pt"
        y = torch.rand(2, 3, 112, 112, generator=torch.Generator().manual_seed(3)) * 255
        for model, samples, version in ((FASHION, x, b"3"), (face, y, b"4")):
            with self.subTest(model.name):
                with zipfile.ZipFile(model) as archive:
                    names = archive.namelist()
                    self.assertEqual(archive.read(next(n for n in names if n.endswith("/version"))).strip(), version)
                    self.assertFalse(any(n.endswith("serialization_id") for n in names))
                torch.save(samples, self.dir / "x.pt")
                result = self.run_ok("run", model, "--input", self.dir / "x.pt", "--out", self.out)
                with torch.no_grad():
                    want = torch.jit.load(str(model))(samples)
                self.assertLess(max_diff(torch.load(self.out)["output"], want), 1e-5)

    def test_setup_reads_the_model_and_saves_into_a_copy(self):
        result = self.run_ok("setup", FIXTURES / "fashion_plain.pt")
        self.assertIn("none stored", result.stdout)
        self.assertIn("takes 1 channel(s): grey images", result.stdout)
        self.assertIn("gives 10 outputs", result.stdout)
        setup = self.dir / "setup.json"
        setup.write_text(json.dumps({"preprocess": {"grayscale": True, "resize": 28, "crop": 28,
                                                    "mean": [0.286], "std": [0.353]}}))
        copy = self.dir / "fashion_setup.pt"
        self.run_ok("setup", FIXTURES / "fashion_plain.pt", "--preprocess", setup,
                    "--labels", FIXTURES / "fashion_labels.txt", "--out", copy)
        files = {"torchscope.json": ""}
        torch.jit.load(str(copy), _extra_files=files)
        card = json.loads(files["torchscope.json"])
        self.assertEqual(card["labels"][9], "Ankle boot")
        self.assertEqual(card["preprocess"]["crop"], [28, 28])
        # Same weights, so the same output as the original on the same tensor.
        x = torch.randn(2, 1, 28, 28)
        with torch.no_grad():
            self.assertTrue(torch.equal(torch.jit.load(str(copy))(x), torch.jit.load(str(FIXTURES / "fashion_plain.pt"))(x)))

    @unittest.skipIf(HEADLESS, "built without OpenCV")
    def test_a_wrong_input_points_at_the_setup_and_the_right_one_predicts(self):
        images = pathlib.Path(__file__).resolve().parents[2] / "resources" / "demo" / "images"
        result = cli("run", FIXTURES / "fashion_plain.pt", "--input", images / "ankle_boot.png", "--out", self.out)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("[1, 3, 224, 224]", result.stderr)
        self.assertIn("--preprocess", result.stderr)
        self.assertFalse(self.out.exists())
        setup = self.dir / "setup.json"
        setup.write_text(json.dumps({"preprocess": {"grayscale": True, "resize": 28, "crop": 28,
                                                    "mean": [0.286], "std": [0.353]}}))
        result = self.run_ok("run", FIXTURES / "fashion_plain.pt", "--input", images / "ankle_boot.png",
                             "--input", images / "bag.png", "--preprocess", setup,
                             "--labels", FIXTURES / "fashion_labels.txt", "--out", self.out)
        self.assertIn("ankle_boot.png:  Ankle boot", result.stdout)
        self.assertIn("bag.png:  Bag", result.stdout)

    def test_namedtuple_scores_with_labels_and_a_wrong_element(self):
        labels = self.dir / "labels.json"
        labels.write_text(json.dumps([f"synset {i}" for i in range(1000)]))
        result = self.run_ok("run", FIXTURES / "googlenet_scripted.pt", "--input", FIXTURES / "googlenet_input.pt",
                             "--out", self.out, "--labels", labels, "--grab", "inception5b:grad", "--target", "3",
                             "--threads", THREADS)
        self.assertIn("top-3 predictions (output element 'logits')", result.stdout)
        self.assertIn("synset ", result.stdout)
        self.assertIn("gradients are of class 3 (synset 3)", result.stdout)
        expected = torch.load(FIXTURES / "googlenet_expected.pt")
        got = torch.load(self.out)
        # The fixtures' thread count: the same sums in the same order as make_fixtures.py's, so equal
        # (another count moves the gradient by some 1e-7 of its range).
        self.assertTrue(torch.equal(got["inception5b:grad"], expected["inception5b:grad"]),
                        max_diff(got["inception5b:grad"], expected["inception5b:grad"]))
        self.assertTrue(torch.equal(got["output"][0], expected["output"]), max_diff(got["output"][0], expected["output"]))
        self.out.unlink()
        result = cli("run", FIXTURES / "googlenet_scripted.pt", "--input", FIXTURES / "googlenet_input.pt",
                     "--out", self.out, "--scores", "probabilities")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("elements: logits, aux_logits2, aux_logits1", result.stderr)
        self.assertFalse(self.out.exists())

    def test_an_age_and_gender_net_shows_gender_as_classes_and_age_as_a_value(self):
        """(age [N, 1], gender logits [N, 2]), as an age/gender face net returns them: the default scores
        are the gender's (the first element with two or more classes), the age is printed beside them;
        the [N, 1] age used to be taken as one class at 100 % for every face."""
        nn = torch.nn

        class AgeGender(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
                self.age = nn.Linear(4, 1)
                self.gender = nn.Linear(4, 2)

            def forward(self, x):
                h = self.body(x)
                return self.age(h) * 10 + 40, self.gender(h)

        torch.manual_seed(3)
        model = AgeGender().eval()
        x = torch.randn(3, 3, 20, 28)
        torch.save(x, self.dir / "x.pt")
        with torch.no_grad():
            age, gender = model(x)
        labels = self.dir / "labels.json"
        labels.write_text(json.dumps(["female", "male"]))
        scripted = self.dir / "age_gender.pt"
        torch.jit.save(torch.jit.script(model), scripted)
        exported = self.dir / "age_gender.pt2"
        torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},)),
                          exported)
        for path in (scripted, exported):
            with self.subTest(model=path.name):
                result = self.run_ok("run", path, "--input", self.dir / "x.pt", "--labels", labels, "--out",
                                     self.out, "--threads", THREADS)
                self.assertIn("(output element '[1]')", result.stdout)
                lines = [line for line in result.stdout.splitlines() if line.startswith("  sample ")]
                self.assertEqual(len(lines), 3, result.stdout)
                probabilities = gender.softmax(1)
                for i, line in enumerate(lines):
                    best = int(gender[i].argmax())
                    self.assertIn(f"{['female', 'male'][best]} {100 * float(probabilities[i, best]):.1f}%", line)
                    self.assertIn(f"[0] {float(age[i, 0]):.4g}", line)
                    self.assertNotIn("100.0%", line)

    def test_segmentation_over_a_box_and_detections(self):
        result = self.run_ok("run", FIXTURES / "deeplabv3_scripted.pt", "--input", FIXTURES / "deeplabv3_input.pt",
                             "--out", self.out, "--grab", "backbone.16:grad", "--target", "3",
                             "--target-box", "40,60,200,180", "--threads", THREADS)
        self.assertIn("segmentation: classes by share of the pixels (output element 'out')", result.stdout)
        self.assertIn("summed over the region 40,60-200,180", result.stdout)
        expected = torch.load(FIXTURES / "deeplabv3_expected.pt")["region/backbone.16:grad"]
        got = torch.load(self.out)["backbone.16:grad"]
        self.assertTrue(torch.equal(got, expected), max_diff(got, expected))  # the fixtures' threads: equal
        result = self.run_ok("run", FIXTURES / "fasterrcnn_scripted.pt", "--input", FIXTURES / "fasterrcnn_input.pt",
                             "--out", self.out, "--threads", THREADS)
        self.assertIn("detections (label, score, box x0,y0,x1,y1) (output element '[1]')", result.stdout)
        expected = torch.load(FIXTURES / "fasterrcnn_expected.pt")
        self.assertIn(f"{expected['scores'][0].item():.3f}", result.stdout)
        # Every detection the eager model gave, in its order: boxes, scores and labels whole, bit
        # for bit at the fixtures' thread count (many scores tie, so any rounding would reorder them).
        losses, detections = torch.load(self.out)["output"]
        self.assertEqual(losses, {})
        self.assertEqual(len(detections), 1)
        self.assertEqual(len(expected["scores"]), 100)
        for key in ("boxes", "scores"):
            self.assertEqual(max_diff(detections[0][key], expected[key]), 0.0, key)
        self.assertTrue(torch.equal(detections[0]["labels"], expected["labels"]))


# An operator no library that TorchScope loads by itself registers: (x + shift)^2.
SHIFTED_SQUARE = r"""
#include <ATen/ATen.h>
#include <torch/library.h>

at::Tensor shifted_square(const at::Tensor& x, double shift)
{
    return (x + shift) * (x + shift);
}

TORCH_LIBRARY(torchscope_test, m)
{
    m.def("shifted_square(Tensor x, float shift) -> Tensor", &shifted_square);
}
"""


class CliOperatorLibrary(unittest.TestCase):
    """--ops-library: a model that calls an operator of a custom library, compiled here by
    torch.utils.cpp_extension against this environment's LibTorch (the one the CLI links)."""

    @classmethod
    def setUpClass(cls):
        from torch.utils import cpp_extension
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        source = cls.dir / "shifted_square.cpp"
        source.write_text(SHIFTED_SQUARE)
        # Loads it here too (torch.ops.load_library), so that the model can be scripted.
        cls.library = cpp_extension.load(name="torchscope_test_ops", sources=[str(source)],
                                         build_directory=str(cls.dir), is_python_module=False)

        class Shifted(torch.nn.Module):
            def forward(self, x):
                return torch.ops.torchscope_test.shifted_square(x, 1.5)

        cls.model = cls.dir / "shifted.pt"
        torch.jit.save(torch.jit.script(Shifted()), str(cls.model))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_library_gives_the_model_its_operator(self):
        x = torch.randn(3, 7, generator=torch.Generator().manual_seed(4))
        inputs, out = self.dir / "x.pt", self.dir / "out.pt"
        torch.save(x, inputs)
        # Without the library the model does not load, and the message says what to pass.
        result = cli("run", self.model, "--input", inputs, "--out", out)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("torchscope_test::shifted_square", result.stderr)
        self.assertIn("--ops-library", result.stderr)
        self.assertFalse(out.exists())
        result = cli("run", self.model, "--input", inputs, "--ops-library", self.library, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        # NumPy's float32 (x + 1.5) * (x + 1.5): the same two roundings as the operator's.
        shifted = x.numpy() + np.float32(1.5)
        self.assertEqual(max_diff(torch.load(out)["output"], shifted * shifted), 0.0)


@unittest.skipIf(HEADLESS, "built without OpenCV")
class CliFaceExpression(unittest.TestCase):
    """The bundled face-expression network against the original face-api.js in TF.js: the
    probabilities TF.js gave for the bundled photos (tests/data/face_expression_tfjs.json, written by
    scripts/convert_face_expression.py) must come out of TorchScope's own image path."""

    def test_probabilities_equal_the_tfjs_original(self):
        root = pathlib.Path(__file__).resolve().parents[2]
        expected = json.loads((root / "tests" / "data" / "face_expression_tfjs.json").read_text())
        photos = sorted((root / "resources" / "face" / "photos").glob("*.png"))
        self.assertEqual(sorted(p.stem for p in photos), sorted(expected["photos"]))
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "out.pt"
            result = cli("run", root / "resources" / "face" / "face_expression.pt",
                         *[arg for p in photos for arg in ("--input", p)], "--out", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("happy", result.stdout)  # labels from the model's own torchscope.json
            probabilities = torch.softmax(torch.load(out)["output"].double(), 1)
        for i, photo in enumerate(photos):
            tfjs = torch.tensor(expected["photos"][photo.stem]["probabilities"], dtype=torch.float64)
            diff = (probabilities[i] - tfjs).abs().max().item()
            print(f"{photo.stem}: max |probability - TF.js| {diff:.2e}")
            self.assertLessEqual(diff, 1e-5, photo.stem)  # NaN fails too
            self.assertEqual(int(probabilities[i].argmax()), int(tfjs.argmax()), photo.stem)


def inputs(paths):
    """--input PATH for each path."""
    return [arg for path in paths for arg in ("--input", path)]


def fashion_image(path):
    """A probe fixture image as the demo model saw it in TorchScope ([1, 1, 28, 28]; its preprocessing
    has tests of its own)."""
    return model_image(FASHION, path, "features.0")


def eager_grad_cam(x, layer, target=None):
    """Grad-CAM and saliency of one image [1, 1, 28, 28] by a forward hook and autograd on the eager
    demo model: the layer's output and the score's gradient, channel weights the gradient's mean over
    positions, ReLU of the weighted sum, bilinear (align_corners=False) to the input's size."""
    import torch.nn.functional as F
    model, grabbed = demo_model(), {}
    handle = dict(model.named_modules())[layer].register_forward_hook(lambda m, i, o: grabbed.__setitem__("a", o))
    xi = x.clone().requires_grad_(True)
    out = model(xi)
    handle.remove()
    t = int(out.argmax(1)) if target is None else target
    grad_a, grad_x = torch.autograd.grad(out[0, t], [grabbed["a"], xi])
    cam = torch.relu((grad_a.mean((2, 3), keepdim=True) * grabbed["a"]).sum(1, keepdim=True)).detach()
    return {"gradcam_layer": cam[0, 0], "gradcam": F.interpolate(cam, size=x.shape[2:], mode="bilinear",
            align_corners=False)[0, 0], "saliency": grad_x.abs().amax(1)[0], "target": t}


def eager_scores(x, edit=None):
    """The demo model's class scores for x, with `edit` = (layer, function of its output) applied by a
    forward hook (nethook's edit_output), and what each layer of `keep` gave."""
    model = demo_model()
    handle = None
    if edit:
        handle = dict(model.named_modules())[edit[0]].register_forward_hook(lambda m, i, o: edit[1](o))
    with torch.no_grad():
        out = model(x)
    if handle:
        handle.remove()
    return out[0]


@unittest.skipIf(HEADLESS, "reads image files")
class CliGradCam(unittest.TestCase):
    """gradcam: the maps it writes against autograd and a forward hook on the eager demo model."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.images = [FIXTURES / "probe" / "footwear" / "00.png", FIXTURES / "probe" / "rest" / "00.png",
                       FIXTURES / "probe" / "rest" / "07.png"]

    def tearDown(self):
        self.tmp.cleanup()

    def gradcam(self, *args):
        inputs = [a for image in self.images for a in ("--input", image)]
        return cli("gradcam", FASHION, *inputs, "--threads", THREADS, *args)

    def test_each_image_explained_for_its_own_class_equals_autograd(self):
        out = self.dir / "cam.pt"
        result = self.gradcam("--layer", "features.2", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        self.assertEqual(got["gradcam"].shape, (3, 28, 28))
        want = [eager_grad_cam(fashion_image(image), "features.2") for image in self.images]
        self.assertEqual(got["target"].tolist(), [w["target"] for w in want])
        self.assertGreater(len(set(got["target"].tolist())), 1, "the images must not all be of one class")
        for key in ("gradcam", "gradcam_layer", "saliency"):
            expected = torch.stack([w[key] for w in want])
            self.assertGreater(expected.abs().max().item(), 0, key)
            self.assertLessEqual(max_diff(got[key], expected), 1e-5 * expected.abs().max().item(), key)
        for image, w in zip(self.images, want):
            self.assertIn(f"{image}: class {w['target']}", result.stdout)

    def test_a_given_class_to_safetensors(self):
        out = self.dir / "cam.safetensors"
        result = self.gradcam("--layer", "features.1", "--target", "9", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = read_safetensors(out)
        self.assertEqual(got["target"].tolist(), [9, 9, 9])
        expected = torch.stack([eager_grad_cam(fashion_image(image), "features.1", 9)["gradcam"]
                                for image in self.images])
        self.assertLessEqual(max_diff(got["gradcam"], expected), 1e-5 * expected.abs().max().item())

    def test_a_layer_without_maps_and_an_unknown_layer_are_named(self):
        result = self.gradcam("--layer", "classifier.2", "--out", self.dir / "x.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("'classifier.2' gives [1, 10]", result.stderr)
        result = self.gradcam("--layer", "features.9", "--out", self.dir / "x.pt")
        self.assertEqual(result.returncode, 1)
        self.assertIn("features.9", result.stderr)
        self.assertFalse((self.dir / "x.pt").exists())


@unittest.skipIf(HEADLESS, "reads image files")
class CliPatch(unittest.TestCase):
    """patch: patching, ablation and input differences against forward hooks on the eager demo model."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.a = FIXTURES / "probe" / "rest" / "00.png"
        self.b = FIXTURES / "probe" / "footwear" / "00.png"
        self.xa, self.xb = fashion_image(self.a), fashion_image(self.b)

    def tearDown(self):
        self.tmp.cleanup()

    def patch(self, *args):
        return cli("patch", FASHION, "--a", self.a, "--threads", THREADS, *args)

    def test_bs_activation_in_as_run_equals_a_hooked_edit(self):
        out = self.dir / "patched.pt"
        result = self.patch("--b", self.b, "--layer", "features.1", "--compare", "features.2", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        from_b = demo_hooked(self.xb, ["features.1"], batch=1)["features.1"]
        want = {"a": eager_scores(self.xa), "b": eager_scores(self.xb),
                "patched": eager_scores(self.xa, ("features.1", lambda o: from_b))}
        for column, scores in want.items():
            self.assertEqual(max_diff(got[f"{column}/scores"], scores), 0.0, column)
        self.assertGreater(max_diff(want["patched"], want["a"]), 0.0, "the patch must change the scores")
        # The later layer's maps: A's, B's, and those of A with B's features.1.
        hooked = demo_hooked(torch.cat([self.xa, self.xb]), ["features.2"], batch=1)["features.2"]
        self.assertEqual(max_diff(got["a/features.2"], hooked[0]), 0.0)
        self.assertEqual(max_diff(got["b/features.2"], hooked[1]), 0.0)
        self.assertIn("A with B's features.1:", result.stdout)

    def test_ablated_channels_equal_a_hook_that_zeroes_them(self):
        out = self.dir / "ablated.npz"
        result = self.patch("--mode", "ablate", "--layer", "features.2", "--channels", "0,5,17", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = np.load(out)

        def zero(o):
            o = o.clone()
            o[:, [0, 5, 17]] = 0
            return o
        self.assertEqual(max_diff(torch.from_numpy(got["ablated/scores"]), eager_scores(self.xa, ("features.2", zero))), 0.0)
        self.assertEqual(max_diff(torch.from_numpy(got["a/scores"]), eager_scores(self.xa)), 0.0)

    def test_tree_edits_hold_in_every_run(self):
        out = self.dir / "edited.pt"
        result = self.patch("--mode", "ablate", "--layer", "features.2", "--channels", "1", "--edit",
                            "features.1:scale:0,1,2:3", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)

        def scale(o):
            o = o.clone()
            o[:, [0, 1, 2]] *= 3
            return o
        self.assertEqual(max_diff(torch.load(out)["a/scores"], eager_scores(self.xa, ("features.1", scale))), 0.0)

    def test_difference_ranks_channels_by_mean_absolute_difference(self):
        out = self.dir / "difference.pt"
        result = self.patch("--mode", "difference", "--b", self.b, "--layer", "features.2", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        hooked = demo_hooked(torch.cat([self.xa, self.xb]), ["features.2"], batch=1)["features.2"]
        self.assertEqual(max_diff(got["a"], hooked[0]), 0.0)
        self.assertEqual(max_diff(got["b"], hooked[1]), 0.0)
        self.assertEqual(max_diff(got["difference"], hooked[0] - hooked[1]), 0.0)
        means = (hooked[0] - hooked[1]).abs().mean((1, 2)).double().numpy()
        self.assertEqual(got["ranked_channels"].tolist(), np.argsort(-means, kind="stable").tolist())

    def test_what_is_missing_is_named(self):
        result = self.patch("--layer", "features.1")
        self.assertEqual(result.returncode, 2)
        self.assertIn("needs --b IMAGE", result.stderr)
        result = self.patch("--mode", "ablate", "--layer", "features.1")
        self.assertEqual(result.returncode, 2)
        self.assertIn("needs --channels", result.stderr)
        result = self.patch("--mode", "ablate", "--layer", "features.1", "--channels", "999")
        self.assertEqual(result.returncode, 1)
        self.assertIn("channel 999 does not exist", result.stderr)


def eager_fashion_channel_means(x, layer):
    """Channel means at `layer` of the demo model in eager PyTorch (a forward hook), for [N, 1, 28, 28]
    images in [0, 1]."""
    from demo_hooks import MEAN, STD
    return demo_hooked((x - MEAN) / STD, [layer], batch=len(x))[layer].mean((2, 3))


@unittest.skipIf(HEADLESS, "reads image files")
class CliCompareMaps(unittest.TestCase):
    """compare --maps: one image through a layer of each run (what the window's Compare tab shows for
    a clicked cell), against forward hooks on the eager demo model."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.image = FIXTURES / "probe" / "footwear" / "00.png"
        self.x = fashion_image(self.image)

    def tearDown(self):
        self.tmp.cleanup()

    def maps(self, *args):
        return cli("compare", FASHION, "--input", self.image, "--maps", "--threads", THREADS, *args)

    def test_a_layer_of_a_and_another_of_b_equal_forward_hooks(self):
        out = self.dir / "maps.pt"
        result = self.maps(FASHION, "--layer", "features.1", "--layer-b", "features.2", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        hooked = demo_hooked(self.x, ["features.1", "features.2"], batch=1)
        self.assertEqual(got["a"].shape, hooked["features.1"][0].shape)
        self.assertEqual(max_diff(got["a"], hooked["features.1"][0]), 0.0)
        self.assertEqual(max_diff(got["b"], hooked["features.2"][0]), 0.0)

    def test_precision_gives_float64_and_the_lower_precision(self):
        out = self.dir / "drift.safetensors"
        result = self.maps("--layer", "features.2", "--precision", "float32", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = read_safetensors(out)
        float32 = demo_hooked(self.x, ["features.2"], batch=1)["features.2"][0]
        self.assertEqual(max_diff(got["b"], float32), 0.0)
        model, grabbed = demo_model().double(), []
        hook = dict(model.named_modules())["features.2"].register_forward_hook(lambda m, i, o: grabbed.append(o))
        with torch.no_grad():
            model(self.x.double())
        hook.remove()
        # A is the float64 run, given as float32: equal to float64 hooks rounded to float32.
        self.assertLess(max_diff(got["a"], grabbed[0][0].float()), 1e-6)
        self.assertGreater(max_diff(got["a"], float32), 0.0, "float64 and float32 runs must differ somewhere")

    def test_mistakes_are_named(self):
        two = cli("compare", FASHION, FASHION, "--input", self.image, "--input", self.image, "--maps",
                  "--layer", "features.1", "--out", self.dir / "m.pt")
        self.assertEqual(two.returncode, 2)
        self.assertIn("one image as --input", two.stderr)
        json_out = self.maps(FASHION, "--layer", "features.1", "--out", self.dir / "m.json")
        self.assertEqual(json_out.returncode, 2)
        self.assertIn("FILE.pt, FILE.npz or FILE.safetensors", json_out.stderr)
        unknown = self.maps(FASHION, "--layer", "featurs.1", "--out", self.dir / "m.pt")
        self.assertEqual(unknown.returncode, 1)
        self.assertIn("features.1", unknown.stderr)
        self.assertFalse((self.dir / "m.pt").exists())


@unittest.skipIf(HEADLESS, "reads image files")
class CliManifest(unittest.TestCase):
    """Every tensor export has NAME.manifest.json beside it (and .safetensors in its metadata): the
    versions, the model and images by SHA-256 (hashlib's), each key's module, kind and call, the edits
    and truncation, the targets."""

    IMAGES = [ROOT / "resources" / "demo" / "images" / name for name in ("bag.png", "coat.png")]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def sha(path):
        return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()

    def manifest(self, name):
        return json.loads((self.dir / name).read_text())

    def check_common(self, m, command, model=FASHION):
        self.assertEqual(m["format"], "torchscope-manifest/1")
        self.assertEqual(m["command"], command)
        version = re.match(r"torchscope-cli (\S+) \(LibTorch (\S+)\)", cli("--version").stdout)
        self.assertEqual((m["torchscope"], m["libtorch"]), version.groups())
        self.assertEqual(m["libtorch"], torch.__version__.split("+")[0])
        self.assertEqual(m["model"]["sha256"], self.sha(model))
        self.assertEqual(m["model"]["bytes"], model.stat().st_size)
        self.assertEqual(m["device"], "cpu")
        self.assertRegex(m["created"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        for image in m["images"]:
            self.assertEqual(image["sha256"], self.sha(image["path"]))

    def test_run_describes_its_keys_images_edits_and_targets(self):
        out = self.dir / "acts.safetensors"
        result = cli("run", FASHION, *inputs(self.IMAGES), "--grab", "features.1", "--grab", "features.0:in0",
                     "--grab", "features.2:grad", "--target", "-1", "--edit", "features.1:zero:0,3", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = self.manifest("acts.manifest.json")
        self.check_common(m, "torchscope-cli run")
        self.assertEqual([i["path"] for i in m["images"]], [str(p) for p in self.IMAGES])
        from safetensors import safe_open
        with safe_open(str(out), framework="pt") as f:
            written = sorted(f.keys())
            inside = json.loads(f.metadata()["torchscope_manifest"])
        self.assertEqual(inside, m)
        kinds = {k["key"]: (k["module"], k["kind"], k["call"]) for k in m["keys"]}
        self.assertEqual(sorted(kinds), written)
        self.assertEqual(kinds["features.1"], ("features.1", "output", 0))
        self.assertEqual(kinds["features.0:in0"], ("features.0", "input", 0))
        self.assertEqual(kinds["features.2:grad"], ("features.2", "gradient", 0))
        self.assertEqual(kinds["output"], ("", "model output", 0))
        self.assertEqual(m["edits"], ["features.1:zero:0,3"])
        self.assertEqual(len(m["targets"]), 1)
        self.assertIn(m["targets"][0], result.stdout)  # "gradients are of class N"
        # The demo's stored setup (scripts/train_demo_model.py): grey 28 x 28, its mean and std.
        self.assertEqual(m["preprocessing"]["grayscale"], True)
        self.assertAlmostEqual(m["preprocessing"]["mean"][0], MEAN, places=6)
        self.assertAlmostEqual(m["preprocessing"]["std"][0], STD, places=6)

    def test_each_image_names_each_images_own_gradient_class(self):
        out = self.dir / "each.pt"
        images = sorted((ROOT / "resources" / "demo" / "images").glob("*.png"))[:4]
        result = cli("run", FASHION, "--each-image", *inputs(images), "--grab", "features.2:grad",
                     "--target", "-1", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = self.manifest("each.manifest.json")
        self.check_common(m, "torchscope-cli run")
        self.assertEqual([i["path"] for i in m["images"]], [str(p) for p in images])
        self.assertEqual([i["size"] for i in m["images"]], [[28, 28]] * 4)
        # Each image's own predicted class, as the eager model predicts it.
        model = demo_model()
        with torch.no_grad():
            predicted = [int(model(fashion_image(p)).argmax()) for p in images]
        self.assertEqual([int(re.search(r"class (\d+)", t).group(1)) for t in m["targets"]], predicted)
        self.assertGreater(len(set(predicted)), 1, "the test images must be of different classes")
        self.assertIn("gradients are of each image's own target:", result.stdout)
        for image, target in zip(images, m["targets"]):
            self.assertIn(f"{image}: {target}", result.stdout)
        self.assertNotIn("the first image's", result.stdout)

    def test_record_to_a_folder_gives_each_statistic_its_capture(self):
        out = self.dir / "rec"
        result = cli("record", FASHION, "--input", FIXTURES / "labelled", "--grab", "features.1", "--grab",
                     "features.2:grad", "--target", "3", "--reduce", "mean", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = json.loads((out / "manifest.json").read_text())
        self.check_common(m, "torchscope-cli record")
        summary = json.loads((out / "summary.json").read_text())
        self.assertEqual([i["path"] for i in m["images"]], summary["image_files"])
        keys = {k["key"]: k for k in m["keys"]}
        self.assertEqual(sorted(keys), sorted(k for f in out.glob("*.pt") for k in torch.load(f)))
        self.assertEqual((keys["features.1"]["module"], keys["features.1"]["statistic"]), ("features.1", "mean"))
        self.assertEqual(keys["features.1:samples"]["statistic"], "samples")
        self.assertEqual((keys["features.2:grad"]["kind"], keys["features.2:grad"]["module"]), ("gradient", "features.2"))
        self.assertEqual(m["settings"]["reduce"], "mean")

    def test_the_colour_shape_keeps_its_channels_and_height_before_width(self):
        # The second shape (3 x 40 x 56, a mean and std per channel): a channel's statistics dropped
        # or a height and a width swapped show here, as they cannot in the grey 28 x 28 demo.
        from PIL import Image
        from color_model import SETUP
        out = self.dir / "maps.npz"
        result = cli("attribute", ColorSubject.MODEL, *inputs(ColorSubject.IMAGES), "--layer", ColorSubject.LAYER,
                     "--method", "grad_cam", "--target", "-1", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = self.manifest("maps.manifest.json")
        self.check_common(m, "torchscope-cli attribute", ColorSubject.MODEL)
        self.assertEqual([i["path"] for i in m["images"]], [str(p) for p in ColorSubject.IMAGES])
        stored = SETUP["preprocess"]
        self.assertEqual(m["preprocessing"]["resize"], stored["resize"])  # [height, width]: [40, 56]
        self.assertFalse(m["preprocessing"]["grayscale"])
        for key in ("mean", "std"):
            self.assertEqual(len(m["preprocessing"][key]), 3, key)
            for got, want in zip(m["preprocessing"][key], stored[key]):
                self.assertAlmostEqual(got, want, places=6, msg=key)
        self.assertEqual(len(m["targets"]), len(ColorSubject.IMAGES))
        self.assertEqual(np.load(out)["grad_cam:input"].shape[-2:], tuple(stored["resize"]))

        out = self.dir / "each.pt"
        result = cli("run", ColorSubject.MODEL, "--each-image", *inputs(ColorSubject.IMAGES), "--grab",
                     ColorSubject.LAYER, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = self.manifest("each.manifest.json")
        self.check_common(m, "torchscope-cli run", ColorSubject.MODEL)
        self.assertEqual([i["size"] for i in m["images"]], [list(Image.open(p).size) for p in ColorSubject.IMAGES])
        self.assertEqual(m["images"][0]["size"], [56, 40])  # [width, height], as the file has it

    def test_gradcam_and_compare_write_theirs(self):
        out = self.dir / "cam.npz"
        result = cli("gradcam", FASHION, *inputs(self.IMAGES), "--layer", "features.2", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = self.manifest("cam.manifest.json")
        self.check_common(m, "torchscope-cli gradcam")
        self.assertEqual(sorted(k["key"] for k in m["keys"]), sorted(np.load(out).files))
        self.assertEqual({k["key"]: k["module"] for k in m["keys"]}["gradcam"], "features.2")
        self.assertEqual(len(m["targets"]), 2)

        out = self.dir / "cka.json"
        result = cli("compare", FASHION, FASHION, *inputs(self.IMAGES + self.IMAGES),
                     "--layer", "features.1", "--batch", "4", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        m = self.manifest("cka.manifest.json")
        self.check_common(m, "torchscope-cli compare")
        self.assertEqual(m["model_b"]["sha256"], self.sha(FASHION))
        self.assertEqual(m["settings"]["mode"], "cka")
        self.assertEqual(len(m["images"]), 4)


def model_image(model, path, first):
    """An image as `model` saw it in TorchScope ([1, C, H, W]): the input of its first layer
    `first`, grabbed by `run`, so that an eager oracle starts from the very same values."""
    with tempfile.TemporaryDirectory() as folder:
        out = pathlib.Path(folder) / "input.pt"
        result = cli("run", model, "--input", path, "--grab", f"{first}:in0", "--out", out)
        assert result.returncode == 0, result.stderr
        return torch.load(out)[f"{first}:in0"]


def peer_score_cam(model, module, x, targets):
    """pytorch-grad-cam's Score-CAM map of `module` (a layer inside `model`) for each image's target,
    before it rescales and resizes: ReLU of get_cam_image, [N, 1, h, w]."""
    from pytorch_grad_cam import ScoreCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
    seen = {}
    hook = module.register_forward_hook(lambda m, inputs, output: seen.__setitem__("a", output.detach()))
    with torch.no_grad():
        model(x)
    hook.remove()
    raw = ScoreCAM(model=model, target_layers=[module]).get_cam_image(
        x, module, [ClassifierOutputTarget(int(t)) for t in targets], seen["a"].numpy(), None, False)
    return torch.from_numpy(np.maximum(raw, 0)).unsqueeze(1)


class FashionSubject:
    """The demo's shape: the Fashion-MNIST CNN on 1 x 28 x 28 grey images. MODEL, its IMAGES, a
    LAYER with maps for the layer methods, its FIRST layer and the eager model (eager())."""

    MODEL = FASHION
    IMAGES = [FIXTURES / "probe" / folder / name for folder in ("footwear", "rest") for name in ("00.png", "01.png")]
    LAYER = "features.1"
    FIRST = "features.0"

    @classmethod
    def eager(cls):
        return demo_model()


class ColorSubject:
    """The second shape (tests/fixtures/color_model.py): a CNN of 3 x 40 x 56 colour images with a
    mean and std per channel, a 3 x 5 kernel and 2 x 3 pooling, where a channel or a height/width
    mix-up gives another number."""

    MODEL = FIXTURES / "color_cnn.pt"
    IMAGES = [FIXTURES / "color" / f"{name}.png" for name in ("astronaut_a", "disc", "stripes", "astronaut_b")]
    LAYER = "features.3"
    FIRST = "features.0"

    @classmethod
    def eager(cls):
        return color_model(cls.MODEL)


def blur_kernel(x, sigma=None):
    """The blur baseline's and fill's default: sigma a tenth of the shorter side, torchvision's
    kernel of 2 * ceil(3 sigma) + 1."""
    sigma = min(x.shape[2:]) / 10 if sigma is None else sigma
    return 2 * math.ceil(3 * sigma) + 1, sigma


class ImagesCase:
    """For the attribution classes, with a subject (FashionSubject, or ColorSubject mixed in first):
    IMAGES as the subject's model saw them (x), the eager model with its predictions, and a
    temporary folder per test (dir). A class that mixes in ColorSubject first runs the same tests
    on the second shape."""

    @classmethod
    def image(cls, path):
        return model_image(cls.MODEL, path, cls.FIRST)

    @classmethod
    def setUpClass(cls):
        cls.x = torch.cat([cls.image(path) for path in cls.IMAGES])
        cls.model = cls.eager()
        with torch.no_grad():
            cls.predicted = cls.model(cls.x).argmax(1)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()


@unittest.skipIf(HEADLESS, "reads image files")
class CliAttribute(ImagesCase, FashionSubject, unittest.TestCase):
    """attribute: saliency, Input x Gradient and Integrated Gradients (every integration rule) against
    Captum's own classes on the eager demo model with the same weights and input."""

    def attribute(self, *args, name="maps.npz"):
        out = self.dir / name
        result = cli("attribute", self.MODEL, *inputs(self.IMAGES), "--threads", THREADS, *args, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return {key: torch.from_numpy(value) for key, value in np.load(out).items()}

    def assertClose(self, got, want, relative=1e-5):
        self.assertEqual(got.shape, want.shape)
        self.assertLessEqual(max_diff(got, want), relative * float(want.abs().max()) + 1e-8)

    def test_saliency_and_input_x_gradient_equal_captum(self):
        from captum.attr import InputXGradient, Saliency
        got = self.attribute("--method", "saliency", "--method", "input_x_gradient")
        self.assertTrue(torch.equal(got["targets"], self.predicted))
        x = self.x.clone().requires_grad_()
        self.assertClose(got["saliency"], Saliency(self.model).attribute(x, target=self.predicted, abs=True))
        self.assertClose(got["input_x_gradient"], InputXGradient(self.model).attribute(x, target=self.predicted))

    def test_integrated_gradients_equal_captum_for_every_rule(self):
        from captum.attr import IntegratedGradients
        target = 3  # one class for all: --target
        for rule in ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"):
            with self.subTest(rule=rule):
                got = self.attribute("--method", "integrated_gradients", "--steps", "12", "--rule", rule,
                                     "--target", str(target), name=f"{rule}.npz")
                want, delta = IntegratedGradients(self.model).attribute(
                    self.x, baselines=torch.zeros_like(self.x), target=target, n_steps=12, method=rule,
                    return_convergence_delta=True)
                self.assertClose(got["integrated_gradients"], want)
                self.assertLessEqual(max_diff(got["integrated_gradients:delta"], delta.double()),
                                     1e-4 * float(delta.abs().max()) + 1e-5)
        # The rules differ: the test would pass no wrong rule by accident.
        left = self.attribute("--method", "integrated_gradients", "--steps", "12", "--rule", "riemann_left",
                              "--target", str(target), name="left.npz")["integrated_gradients"]
        right = self.attribute("--method", "integrated_gradients", "--steps", "12", "--rule", "riemann_right",
                               "--target", str(target), name="right.npz")["integrated_gradients"]
        self.assertGreater(max_diff(left, right), 1e-3 * float(right.abs().max()))

    def test_integrated_gradients_under_two_memory_caps(self):
        """The cap decides how many path points run together; both runs equal Captum run in the same
        batches, and the manifest records the cap and the batch, which can move a value in more than
        its last bits: on a CPU without AVX-512, Captum's own map of the colour images moves by 1e-3
        of its maximum between one path point at a time and all at once (another kernel per batch
        size; ReLU gates near zero flip)."""
        from captum.attr import IntegratedGradients
        ig = IntegratedGradients(self.model)

        def captum(batch):
            """Captum's map with `batch` path points of one image per pass, as TorchScope batches them
            (an image's path at most)."""
            self.assertLessEqual(batch, 24, "more than one image's path in a pass: not batched as here")
            return torch.cat([ig.attribute(self.x[i:i + 1], baselines=torch.zeros_like(self.x[i:i + 1]),
                                           target=int(self.predicted[i]), n_steps=24, internal_batch_size=batch)
                              for i in range(self.x.shape[0])])

        batches = {}
        for cap in ("1", "4000"):
            with self.subTest(cap=cap):
                got = self.attribute("--method", "integrated_gradients", "--steps", "24", "--memory-mb", cap,
                                     name=f"ig{cap}.npz")
                settings = json.loads((self.dir / f"ig{cap}.manifest.json").read_text())["settings"]
                self.assertEqual(settings["memory_mb"], cap)
                batches[cap] = int(settings["batch"])
                self.assertClose(got["integrated_gradients"], captum(batches[cap]))
        self.assertLess(batches["1"], batches["4000"])

    def test_occlusion_equals_captum(self):
        from captum.attr import Occlusion
        # 28 - 7 = 21, 40 - 7 = 33 and 56 - 7 = 49 are no multiples of 5: the last windows overhang, in
        # height and in width.
        for window, stride in ((8, 4), (7, 5)):
            with self.subTest(window=window, stride=stride):
                got = self.attribute("--method", "occlusion", "--window", str(window), "--stride", str(stride),
                                     "--memory-mb", "1", name=f"occlusion{window}.npz")
                want = Occlusion(self.model).attribute(self.x, sliding_window_shapes=(self.x.shape[1], window, window),
                                                       strides=(1, stride, stride), baselines=0, target=self.predicted)
                self.assertClose(got["occlusion"], want)
        bad = cli("attribute", self.MODEL, *inputs(self.IMAGES[:1]), "--method", "occlusion", "--window", "4",
                  "--stride", "6", "--out", self.dir / "x.pt")
        self.assertEqual(bad.returncode, 1)
        self.assertIn("1 <= --stride <= --window", bad.stderr)

    def test_cams_equal_pytorch_grad_cam_at_the_layer(self):
        from pytorch_grad_cam import GradCAM, GradCAMPlusPlus, HiResCAM, LayerCAM, XGradCAM
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
        peers = {"grad_cam": GradCAM, "grad_cam_pp": GradCAMPlusPlus, "hires_cam": HiResCAM,
                 "xgrad_cam": XGradCAM, "layer_cam": LayerCAM}
        layer = self.LAYER
        got = self.attribute(*[arg for name in peers for arg in ("--method", name)], "--layer", layer)
        # The layer's output and the predicted class's gradient there, by a forward hook, image by image.
        module = dict(self.model.named_modules())[layer]
        activations, gradients = [], []
        for i in range(len(self.x)):
            seen = {}
            hook = module.register_forward_hook(lambda m, inputs, output: seen.__setitem__("a", output))
            out = self.model(self.x[i:i + 1])
            hook.remove()
            gradient, = torch.autograd.grad(out[0, self.predicted[i]], seen["a"])
            activations.append(seen["a"].detach())
            gradients.append(gradient)
        a, g = torch.cat(activations).numpy(), torch.cat(gradients).numpy()
        targets = [ClassifierOutputTarget(int(t)) for t in self.predicted]
        for name, peer in peers.items():
            with self.subTest(method=name):
                # pytorch-grad-cam's own map at the layer before it rescales and resizes: ReLU of get_cam_image.
                raw = peer(model=self.model, target_layers=[module]).get_cam_image(self.x, module, targets, a, g, False)
                want = torch.from_numpy(np.maximum(raw, 0)).unsqueeze(1)
                self.assertGreater(float(want.abs().max()), 0.0)
                self.assertClose(got[name], want)
                upsampled = torch.nn.functional.interpolate(got[name], size=self.x.shape[2:], mode="bilinear",
                                                            align_corners=False)
                self.assertClose(got[name + ":input"], upsampled)
        self.assertGreater(max_diff(got["grad_cam"], got["layer_cam"]), 0.0)
        missing = cli("attribute", self.MODEL, *inputs(self.IMAGES[:1]), "--method", "grad_cam", "--out", self.dir / "x.pt")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("need --layer", missing.stderr)

    def test_score_cam_equals_pytorch_grad_cam_at_the_layer(self):
        got = self.attribute("--method", "score_cam", "--layer", self.LAYER, "--memory-mb", "1")
        want = peer_score_cam(self.model, dict(self.model.named_modules())[self.LAYER], self.x, self.predicted)
        self.assertGreater(float(want.abs().max()), 0.0)
        self.assertClose(got["score_cam"], want)

    def test_the_gradcam_command_equals_autograd(self):
        # The Grad-CAM view's operation (attribution/grad_cam), apart from attribute's grad_cam: the
        # layer's maps, each weighted by its gradient's mean, ReLU, bilinear to the image's height and
        # width; saliency the largest |gradient| over the channels.
        out = self.dir / "cam.pt"
        result = cli("gradcam", self.MODEL, *inputs(self.IMAGES), "--threads", THREADS, "--layer", self.LAYER,
                     "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        got = torch.load(out)
        module = dict(self.model.named_modules())[self.LAYER]
        for i in range(len(self.x)):
            seen = {}
            hook = module.register_forward_hook(lambda m, inputs, output: seen.__setitem__("a", output))
            x = self.x[i:i + 1].clone().requires_grad_(True)
            scores = self.model(x)
            hook.remove()
            gradient, gradient_x = torch.autograd.grad(scores[0, self.predicted[i]], [seen["a"], x])
            cam = torch.relu((gradient.mean((2, 3), keepdim=True) * seen["a"]).sum(1, keepdim=True)).detach()
            upsampled = F.interpolate(cam, size=x.shape[2:], mode="bilinear", align_corners=False)[0, 0]
            self.assertEqual(int(got["target"][i]), int(self.predicted[i]))
            for key, want in (("gradcam_layer", cam[0, 0]), ("gradcam", upsampled), ("saliency", gradient_x.abs().amax(1)[0])):
                with self.subTest(image=i, key=key):
                    self.assertEqual(tuple(got[key][i].shape), tuple(want.shape))
                    self.assertLessEqual(max_diff(got[key][i], want), 1e-5 * float(want.abs().max()) + 1e-8)

    def test_batches_under_the_memory_cap_change_nothing_but_memory(self):
        # One path point at a time (1 MiB) against all 20 together. Not every path is this calm: at
        # riemann_middle with 12 steps one fixture image's map differs by 1% between the two, and eager
        # PyTorch does the same (at one path point the gradient of a batch of 1 and of 12 differ by
        # 0.054): a near-tie in a ReLU or max-pool that the batch's rounding settles one way or the other.
        small = self.attribute("--method", "integrated_gradients", "--steps", "20", "--memory-mb", "1", name="a.npz")
        large = self.attribute("--method", "integrated_gradients", "--steps", "20", name="b.npz")
        self.assertClose(small["integrated_gradients"], large["integrated_gradients"], relative=1e-6)
        self.assertTrue(torch.equal(small["targets"], self.predicted))

    def test_mistakes_are_named(self):
        unknown = cli("attribute", self.MODEL, *inputs(self.IMAGES[:1]), "--method", "deeplift", "--out", self.dir / "x.pt")
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("occlusion", unknown.stderr)
        one = cli("attribute", self.MODEL, *inputs(self.IMAGES[:1]), "--method", "integrated_gradients", "--steps", "1",
                  "--rule", "riemann_trapezoid", "--out", self.dir / "x.pt")
        self.assertEqual(one.returncode, 1)
        self.assertIn("2 steps for the trapezoid", one.stderr)
        self.assertFalse((self.dir / "x.pt").exists())


@unittest.skipIf(HEADLESS, "reads image files")
class CliAttributeNoise(ImagesCase, FashionSubject, unittest.TestCase):
    """attribute: SmoothGrad, SmoothGrad² and VarGrad against Captum's NoiseTunnel drawing the same
    noise, and Integrated Gradients from a blurred, a noisy and a user's baseline against Captum
    given that baseline (itself checked against torchvision's gaussian_blur and torch.rand)."""

    IMAGES = FashionSubject.IMAGES[1:3]
    BASELINE = FashionSubject.IMAGES[3]  # --baseline IMAGE
    SEED = 7

    def attribute(self, *args, name="maps.npz"):
        return CliAttribute.attribute(self, *args, name=name)

    def assertClose(self, got, want, relative=1e-5):
        CliAttribute.assertClose(self, got, want, relative)

    def test_noise_tunnel_methods_equal_captum_with_the_same_noise(self):
        from captum.attr import NoiseTunnel, Saliency
        samples, noise = 6, 0.2
        got = self.attribute("--method", "smoothgrad", "--method", "smoothgrad_sq", "--method", "vargrad",
                             "--samples", str(samples), "--noise", str(noise), "--seed", str(self.SEED),
                             "--memory-mb", "1")
        tunnel = NoiseTunnel(Saliency(self.model))
        for name, nt_type in (("smoothgrad", "smoothgrad"), ("smoothgrad_sq", "smoothgrad_sq"), ("vargrad", "vargrad")):
            with self.subTest(method=name):
                want = []
                for i in range(len(self.x)):
                    x = self.x[i:i + 1]
                    sigma = noise * float(x.max() - x.min())  # a fraction of the image's range
                    torch.manual_seed(self.SEED + i)  # image i's noise: Captum draws it from the global generator
                    want.append(tunnel.attribute(x, nt_type=nt_type, nt_samples=samples, stdevs=sigma,
                                                 target=int(self.predicted[i]), abs=False))
                self.assertClose(got[name], torch.cat(want))
        # The noise matters: another seed gives another map, and SmoothGrad is not the plain gradient.
        other = self.attribute("--method", "smoothgrad", "--samples", str(samples), "--noise", str(noise),
                               "--seed", str(self.SEED + 100), name="other.npz")
        self.assertGreater(max_diff(got["smoothgrad"], other["smoothgrad"]), 1e-3 * float(got["smoothgrad"].abs().max()))
        self.assertGreater(float(got["vargrad"].min()), -1e-6)

    def integrated_gradients_equal_captum(self, got, baselines):
        from captum.attr import IntegratedGradients
        want, delta = IntegratedGradients(self.model).attribute(
            self.x, baselines=baselines, target=self.predicted, n_steps=10, return_convergence_delta=True)
        self.assertClose(got["integrated_gradients"], want)
        self.assertLessEqual(max_diff(got["integrated_gradients:delta"], delta.double()),
                             1e-4 * float(delta.abs().max()) + 1e-5)

    def test_blurred_baseline_is_torchvisions_gaussian_blur(self):
        from torchvision.transforms.functional import gaussian_blur
        for sigma in (None, 1.5):  # the default: a tenth of the shorter side (28 px: 2.8, a kernel of 19)
            with self.subTest(sigma=sigma):
                extra = [] if sigma is None else ["--blur-sigma", str(sigma)]
                got = self.attribute("--method", "integrated_gradients", "--steps", "10", "--baseline", "blur",
                                     *extra, name=f"blur{sigma}.npz")
                kernel, s = blur_kernel(self.x, sigma)
                blurred = gaussian_blur(self.x, kernel_size=[kernel, kernel], sigma=[s, s])
                self.assertClose(got["integrated_gradients:baseline"], blurred, relative=1e-6)
                self.integrated_gradients_equal_captum(got, got["integrated_gradients:baseline"])

    def test_noise_baseline_is_seeded_uniform_noise_over_the_range(self):
        got = self.attribute("--method", "integrated_gradients", "--steps", "10", "--baseline", "noise",
                             "--seed", str(self.SEED))
        for i in range(len(self.x)):
            x = self.x[i:i + 1]
            unit = torch.rand(x.shape, generator=torch.Generator().manual_seed(self.SEED + i))
            low, high = x.min(), x.max()
            self.assertClose(got["integrated_gradients:baseline"][i:i + 1], low + unit * (high - low), relative=1e-6)
        self.integrated_gradients_equal_captum(got, got["integrated_gradients:baseline"])

    def test_one_baseline_per_image_from_a_tensor_file(self):
        # A tensor file [N, C, H, W]: image i's path starts at baseline i (Captum's baselines tensor).
        torch.manual_seed(3)
        baselines = torch.rand_like(self.x) * (self.x.max() - self.x.min()) + self.x.min()
        torch.save(baselines, self.dir / "baselines.pt")
        got = self.attribute("--method", "integrated_gradients", "--steps", "10", "--baseline",
                             self.dir / "baselines.pt")
        self.assertClose(got["integrated_gradients:baseline"], baselines, relative=0)
        self.integrated_gradients_equal_captum(got, baselines)
        # The images differ from one another: a baseline given to the wrong image would not pass.
        self.assertGreater(max_diff(baselines[0], baselines[1]), 0.1)
        wrong = torch.rand(len(self.x) + 1, *self.x.shape[1:])
        torch.save(wrong, self.dir / "three.pt")
        bad = cli("attribute", self.MODEL, *inputs(self.IMAGES), "--method", "integrated_gradients",
                  "--baseline", self.dir / "three.pt", "--out", self.dir / "x.npz")
        self.assertEqual(bad.returncode, 1)
        self.assertIn(f"[{len(self.x) + 1}, ", bad.stderr)
        self.assertIn("or one per input", bad.stderr)

    def test_a_user_image_as_baseline(self):
        path = self.BASELINE
        got = self.attribute("--method", "integrated_gradients", "--steps", "10", "--baseline", path)
        baseline = self.image(path)
        self.assertClose(got["integrated_gradients:baseline"], baseline.expand_as(self.x), relative=0)
        self.integrated_gradients_equal_captum(got, baseline.expand_as(self.x))
        wrong = torch.zeros(1, self.x.shape[1], 14, 14)
        torch.save(wrong, self.dir / "small.pt")
        bad = cli("attribute", self.MODEL, *inputs(self.IMAGES), "--method", "integrated_gradients",
                  "--baseline", self.dir / "small.pt", "--out", self.dir / "x.npz")
        self.assertEqual(bad.returncode, 1)
        self.assertIn(f"[1, {self.x.shape[1]}, 14, 14]", bad.stderr)
        self.assertIn("one image of their size", bad.stderr)


@unittest.skipIf(HEADLESS, "reads image files")
class CliAttributeTorchcam(unittest.TestCase):
    """attribute's CAMs against torchcam's extractors on the eager demo model, image by image: Grad-CAM,
    XGrad-CAM and LayerCAM equal; torchcam's Grad-CAM++ is shown to be another formula."""

    IMAGES = CliAttribute.IMAGES
    LAYER = "features.1"

    @classmethod
    def setUpClass(cls):
        cls.x = torch.cat([fashion_image(path) for path in cls.IMAGES])
        cls.model = demo_model()
        with tempfile.TemporaryDirectory() as folder:
            out = pathlib.Path(folder) / "cams.npz"
            result = cli("attribute", FASHION, *inputs(cls.IMAGES), "--threads", THREADS, "--layer", cls.LAYER,
                         *[a for m in ("grad_cam", "grad_cam_pp", "xgrad_cam", "layer_cam") for a in ("--method", m)],
                         "--out", out)
            assert result.returncode == 0, result.stderr
            cls.got = {key: torch.from_numpy(value) for key, value in np.load(out).items()}

    def torchcam(self, extractor_class, **kwargs):
        cams = []
        for i in range(len(self.x)):
            with extractor_class(self.model, target_layer=self.LAYER, **kwargs) as extractor:
                out = self.model(self.x[i:i + 1])
                cams.append(extractor(int(self.got["targets"][i]), out, normalized=False)[0].detach())
        return torch.stack(cams)

    def test_grad_cam_xgrad_cam_and_layer_cam_equal_torchcam(self):
        from torchcam.methods import GradCAM, LayerCAM, XGradCAM
        for name, extractor in (("grad_cam", GradCAM), ("xgrad_cam", XGradCAM), ("layer_cam", LayerCAM)):
            with self.subTest(method=name):
                want = self.torchcam(extractor)
                self.assertGreater(float(want.max()), 0.0)
                self.assertLessEqual(max_diff(self.got[name], want), 1e-5 * float(want.max()))

    def test_torchcams_grad_cam_pp_is_another_formula(self):
        # torchcam 0.5's GradCAMpp divides alpha through a boolean-mask copy (alpha[mask].div_(...)),
        # which leaves alpha = g²: its channel weights are sum(g² · relu(g)), not Chattopadhay et al.'s
        # eq. 19, which TorchScope (and pytorch-grad-cam) follow.
        from torchcam.methods import GradCAMpp
        want = self.torchcam(GradCAMpp)
        module = dict(self.model.named_modules())[self.LAYER]
        effective = []
        for i in range(len(self.x)):
            seen = {}
            hook = module.register_forward_hook(lambda m, inp, output: seen.__setitem__("a", output))
            out = self.model(self.x[i:i + 1])
            hook.remove()
            g, = torch.autograd.grad(out[0, int(self.got["targets"][i])], seen["a"])
            weights = (g.pow(2) * torch.relu(g)).flatten(2).sum(-1)[..., None, None]
            effective.append(torch.relu((weights * seen["a"].detach()).sum(1)))
        self.assertLessEqual(max_diff(want, torch.stack(effective)), 1e-5 * float(want.max()))
        ours = self.got["grad_cam_pp"]
        scale = lambda t: t / t.flatten(1).max(1).values.view(-1, 1, 1, 1)
        self.assertGreater(max_diff(scale(ours), scale(want)), 1e-2)


@unittest.skipIf(HEADLESS, "reads image files")
class CliAttributeProbe(unittest.TestCase):
    """attribute --probe: a linear probe's class explained instead of the model's, against Captum and
    pytorch-grad-cam on the eager demo model with the probe's own TorchScript module on its hooked layer
    (two classes: class 1 is the probe's logit z, class 0 its negation -z)."""

    IMAGES = CliAttribute.IMAGES
    LAYER = "features.1"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.probe = pathlib.Path(cls.tmp.name) / "probe.pt"
        trained = cli("probe", "train", FASHION, "--layer", cls.LAYER, "--data", FIXTURES / "probe", "--out",
                      cls.probe, "--threads", THREADS, "--cache", "none")
        assert trained.returncode == 0, trained.stderr
        cls.x = torch.cat([fashion_image(path) for path in cls.IMAGES])
        model, probe, layer = demo_model(), torch.jit.load(str(cls.probe)), cls.LAYER

        class ProbeOnLayer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model, self.probe = model, probe  # registered: peers read the parameters' device

            def forward(self, x):
                seen = {}
                hook = dict(model.named_modules())[layer].register_forward_hook(
                    lambda m, i, output: seen.__setitem__("a", output))
                model(x)
                hook.remove()
                z = probe(seen["a"])
                return torch.cat([-z, z], 1)

        cls.wrapped = ProbeOnLayer()
        cls.inner = model  # the eager model inside the wrapper: its layers for the layer methods' hooks
        with torch.no_grad():
            cls.predicted = cls.wrapped(cls.x).argmax(1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_saliency_and_grad_cam_of_the_probes_class(self):
        from captum.attr import Saliency
        from pytorch_grad_cam import GradCAM
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
        out = pathlib.Path(self.tmp.name) / "maps.npz"
        result = cli("attribute", FASHION, *inputs(self.IMAGES), "--threads", THREADS, "--probe", self.probe,
                     "--method", "saliency", "--method", "grad_cam", "--layer", "features.0", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("probe class", result.stdout)
        got = {key: torch.from_numpy(value) for key, value in np.load(out).items()}
        self.assertTrue(torch.equal(got["targets"], self.predicted))
        self.assertEqual(set(self.predicted.tolist()), {0, 1})  # both of the probe's classes are explained
        want = Saliency(self.wrapped).attribute(self.x.clone().requires_grad_(), target=self.predicted, abs=True)
        self.assertLessEqual(max_diff(got["saliency"], want), 1e-5 * float(want.max()))
        cams = []
        for i in range(len(self.x)):
            seen = {}
            eager = demo_model()
            target_module = dict(eager.named_modules())["features.0"]
            hook = target_module.register_forward_hook(lambda m, inp, output: seen.__setitem__("a", output))
            probe, layer = torch.jit.load(str(self.probe)), dict(eager.named_modules())[self.LAYER]
            grabbed = {}
            hook2 = layer.register_forward_hook(lambda m, inp, output: grabbed.__setitem__("a", output))
            eager(self.x[i:i + 1])
            hook.remove()
            hook2.remove()
            z = probe(grabbed["a"])[0, 0]
            g, = torch.autograd.grad(z if int(self.predicted[i]) == 1 else -z, seen["a"])
            raw = GradCAM(model=eager, target_layers=[target_module]).get_cam_image(
                self.x[i:i + 1], target_module, [ClassifierOutputTarget(int(self.predicted[i]))],
                seen["a"].detach().numpy(), g.numpy(), False)
            cams.append(torch.from_numpy(np.maximum(raw, 0)))
        want = torch.stack(cams)
        self.assertGreater(float(want.max()), 0.0)
        self.assertLessEqual(max_diff(got["grad_cam"], want), 1e-5 * float(want.max()))

    def probe_maps(self, *args):
        out = pathlib.Path(self.tmp.name) / "probe_maps.npz"
        result = cli("attribute", FASHION, *inputs(self.IMAGES), "--threads", THREADS, "--probe", self.probe, *args,
                     "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return {key: torch.from_numpy(value) for key, value in np.load(out).items()}

    def test_occlusion_and_score_cam_of_the_probes_class(self):
        from captum.attr import Occlusion
        got = self.probe_maps("--method", "occlusion", "--window", "8", "--stride", "4", "--method", "score_cam",
                              "--layer", "features.0", "--memory-mb", "1")
        self.assertTrue(torch.equal(got["targets"], self.predicted))
        want = Occlusion(self.wrapped).attribute(self.x, sliding_window_shapes=(1, 8, 8), strides=(1, 4, 4),
                                                 baselines=0, target=self.predicted)
        self.assertGreater(float(want.abs().max()), 0.0)
        self.assertLessEqual(max_diff(got["occlusion"], want), 1e-5 * float(want.abs().max()))
        want = peer_score_cam(self.wrapped, dict(self.inner.named_modules())["features.0"], self.x, self.predicted)
        self.assertGreater(float(want.max()), 0.0)
        self.assertLessEqual(max_diff(got["score_cam"], want), 1e-5 * float(want.max()))

    def test_deletion_of_the_probes_class_equals_rise(self):
        maps = self.probe_maps("--method", "saliency")
        out = pathlib.Path(self.tmp.name) / "probe_metrics.json"
        result = cli("evaluate", FASHION, *inputs(self.IMAGES), "--threads", THREADS, "--probe", self.probe,
                     "--method", "saliency", "--metric", "deletion", "--pixels-per-step", "16", "--attributions",
                     pathlib.Path(self.tmp.name) / "probe_maps.npz", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(out.read_text())
        self.assertEqual([image["target"] for image in report["images"]], self.predicted.tolist())
        got = report["methods"]["saliency"]["deletion"]["curves"]
        for i in range(len(self.x)):
            # A binary probe's probabilities are its own: sigmoid(z) for class 1 and 1 - sigmoid(z) =
            # sigmoid(-z) for class 0 (what probe predict reports), not a softmax over [-z, z].
            want = rise_causal_curve(self.wrapped, self.x[i:i + 1], maps["saliency"][i].sum(0), "del", 16,
                                     torch.zeros_like, probability=torch.sigmoid)
            self.assertLessEqual(max_diff(got[i], want), 1e-5)

    def test_sanity_of_the_probes_class_equals_quantus_mprt(self):
        # The model's layers that run before the probe's are randomised from the top, each image's
        # Spearman equal to Quantus's MPRT on the eager model with the probe on its layer; the probe
        # stays as trained (Quantus resets modules with reset_parameters, which the probe's TorchScript
        # module has not). The layers after the probe's are left out and named: Quantus's rows for
        # them are all 1, since they cannot change the probe's score.
        import quantus
        from captum.attr import Saliency
        out = pathlib.Path(self.tmp.name) / "probe_sanity.json"
        result = cli("sanity", FASHION, *inputs(self.IMAGES), "--threads", THREADS, "--probe", self.probe,
                     "--method", "saliency", "--seed", "42", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(out.read_text())
        self.assertEqual([image["target"] for image in report["images"]], self.predicted.tolist())
        got = report["sanity"]["methods"]["saliency"]["layers"]
        layer, probe = self.LAYER, torch.jit.load(str(self.probe))

        class ProbeOnOwnLayer(torch.nn.Module):
            """The probe on its layer of this module's own copy of the model (Quantus randomises a deep copy)."""

            def __init__(self):
                super().__init__()
                self.model, self.probe = demo_model(), probe

            def forward(self, x):
                seen = {}
                hook = dict(self.model.named_modules())[layer].register_forward_hook(
                    lambda m, i, output: seen.__setitem__("a", output))
                self.model(x)
                hook.remove()
                z = self.probe(seen["a"])
                return torch.cat([-z, z], 1)

        def saliency(model, inputs, targets, **kwargs):
            x = torch.as_tensor(inputs).float().requires_grad_()
            return Saliency(model).attribute(x, target=torch.as_tensor(targets), abs=True).detach().numpy()

        mprt = quantus.MPRT(layer_order="top_down", seed=42, abs=False, normalise=False, disable_warnings=True)
        scores = mprt(model=ProbeOnOwnLayer().eval(), x_batch=self.x.numpy(), y_batch=self.predicted.numpy(),
                      a_batch=None, explain_func=saliency, device="cpu", batch_size=1)
        scores = {name.removeprefix("model."): values for name, values in scores.items() if name != "original"}
        ours = [entry["layer"] for entry in got]
        after = [name for name in scores if name not in ours]
        self.assertEqual(ours, [name for name in scores if name in ours])  # the same order
        self.assertEqual(after, ["classifier.2", "features.2.bn", "features.2.conv"])
        self.assertEqual(sorted(report["sanity"]["after_probe"]),
                         sorted(f"{name} ({kind})" for name, kind in zip(after, ("Linear", "BatchNorm2d", "Conv2d"))))
        for name in after:
            self.assertLessEqual(max_diff(scores[name], np.ones(len(self.x))), 1e-6, name)
        self.assertEqual(ours, ["features.1.bn", "features.1.conv", "features.0.bn", "features.0.conv"])
        for entry in got:
            self.assertLessEqual(max_diff(entry["per_image"]["spearman"], scores[entry["layer"]]), 1e-6, entry["layer"])
        self.assertLess(got[-1]["spearman"], 0.5)  # the randomised model explains the class differently

    def test_a_layer_after_the_probes_is_refused(self):
        result = cli("attribute", FASHION, *inputs(self.IMAGES[:1]), "--probe", self.probe, "--method", "grad_cam",
                     "--layer", "features.2", "--out", pathlib.Path(self.tmp.name) / "x.npz")
        self.assertEqual(result.returncode, 1)
        self.assertIn("take a layer before the probe's", result.stderr)


class CliAttributeArchitectures(unittest.TestCase):
    """attribute on a model with a namedtuple output (GoogLeNet: its logits explained) and on a vision
    transformer's tokens (ViT-B/16, a block's tokens as their 14 x 14 patch grid), against the values the
    fixtures took with forward hooks and autograd on the eager models, and pytorch-grad-cam's CAMs of them."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def attribute(self, model, inputs, layer, *methods):
        out = self.dir / "maps.npz"
        result = cli("attribute", FIXTURES / model, "--input", FIXTURES / inputs, "--threads", THREADS, "--layer",
                     layer, "--target", "3", *[a for m in methods for a in ("--method", m)], "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return {key: torch.from_numpy(value) for key, value in np.load(out).items()}

    def assertCams(self, got, activations, gradients, x):
        from pytorch_grad_cam import GradCAM, HiResCAM, LayerCAM
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
        targets = [ClassifierOutputTarget(3)]
        for name, peer in (("grad_cam", GradCAM), ("hires_cam", HiResCAM), ("layer_cam", LayerCAM)):
            with self.subTest(method=name):
                module = torch.nn.Linear(1, 1)  # get_cam_image reads only the values given to it
                raw = peer(model=module, target_layers=[module]).get_cam_image(
                    x, module, targets, activations.numpy(), gradients.numpy(), False)
                want = torch.from_numpy(np.maximum(raw, 0)).unsqueeze(1)
                self.assertGreater(float(want.max()), 0.0)
                # pytorch-grad-cam weighs and sums in NumPy and resizes with OpenCV: float32 apart.
                self.assertLessEqual(max_diff(got[name], want), 1e-4 * float(want.max()))

    def test_a_namedtuple_output_explains_its_logits(self):
        got = self.attribute("googlenet_scripted.pt", "googlenet_input.pt", "inception5b", "saliency",
                             "input_x_gradient", "grad_cam", "hires_cam", "layer_cam")
        expected = torch.load(FIXTURES / "googlenet_expected.pt")
        x = torch.load(FIXTURES / "googlenet_input.pt")
        gradient = expected["input:grad"]  # of the logits' class 3, by autograd on the eager model
        self.assertEqual(got["targets"].tolist(), [3])
        # Autograd at the fixtures' thread count: the same sums in the same order, equal.
        self.assertTrue(torch.equal(got["saliency"], gradient.abs()), max_diff(got["saliency"], gradient.abs()))
        self.assertTrue(torch.equal(got["input_x_gradient"], x * gradient),
                        max_diff(got["input_x_gradient"], x * gradient))
        self.assertCams(got, expected["inception5b"], expected["inception5b:grad"], x)

    def test_a_segmentation_class_over_a_box(self):
        out = self.dir / "seg.npz"
        result = cli("attribute", FIXTURES / "deeplabv3_scripted.pt", "--input", FIXTURES / "deeplabv3_input.pt",
                     "--threads", THREADS, "--layer", "backbone.16", "--target", "3", "--target-box", "40,60,200,180",
                     "--method", "grad_cam", "--method", "saliency", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("summed over the region", result.stdout)
        got = {key: torch.from_numpy(value) for key, value in np.load(out).items()}
        expected = torch.load(FIXTURES / "deeplabv3_expected.pt")  # autograd of class 3's scores in the box
        for key, value in (("grad_cam", got["grad_cam"][:, 0]), ("saliency", got["saliency"].amax(1))):
            want = expected[f"region/{'cam' if key == 'grad_cam' else 'saliency'}"]
            self.assertTrue(torch.equal(value, want), f"{key}: {max_diff(value, want)}")  # the fixtures' threads

    def test_vision_transformer_tokens(self):
        expected = torch.load(FIXTURES / "vit_expected.pt")
        as_maps = lambda t: t[:, 1:].transpose(1, 2).reshape(1, t.shape[2], 14, 14)
        # Block 5: its patch tokens carry the score's gradient (past block 10 gradient x activation
        # summed over channels cancels to 1e-9, rounding noise, for any implementation).
        layer = "encoder.layers.encoder_layer_5"
        got = self.attribute("vit_b_16_scripted.pt", "vit_input.pt", layer, "grad_cam", "hires_cam", "layer_cam")
        self.assertCams(got, as_maps(expected[layer]), as_maps(expected[f"{layer}:grad"]),
                        torch.load(FIXTURES / "vit_input.pt"))
        self.assertEqual(tuple(got["grad_cam:input"].shape), (1, 1, 224, 224))
        # Block 10's Grad-CAM as the fixture computed it (eager, at the same thread count): equal.
        got = self.attribute("vit_b_16_scripted.pt", "vit_input.pt", "encoder.layers.encoder_layer_10", "grad_cam")
        self.assertTrue(torch.equal(got["grad_cam"][:, 0], expected["gradcam/cam"]),
                        max_diff(got["grad_cam"][:, 0], expected["gradcam/cam"]))


@unittest.skipIf(HEADLESS, "reads image files")
class CliEigenCam(unittest.TestCase):
    """attribute --method eigen_cam on a CNN, a detection model and a vision transformer's tokens,
    against pytorch-grad-cam's get_2d_projection_with_sign_correction of the same activations."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def eigen_cam(self, model, layer, *input_args):
        out = self.dir / "eigen.npz"
        result = cli("attribute", model, *input_args, "--threads", THREADS, "--method", "eigen_cam", "--layer", layer,
                     "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return {key: torch.from_numpy(value) for key, value in np.load(out).items()}

    def assertEqualsPeer(self, got, activations):
        from pytorch_grad_cam.utils.svd_on_activations import get_2d_projection, get_2d_projection_with_sign_correction
        a = activations.double().numpy()
        want = torch.from_numpy(np.maximum(get_2d_projection_with_sign_correction(a), 0)).unsqueeze(1)
        self.assertGreater(float(want.max()), 0.0)
        self.assertLessEqual(max_diff(got, want), 1e-4 * float(want.max()))
        # EigenCAM itself keeps numpy's SVD sign, which is arbitrary: equal up to that sign.
        plain = get_2d_projection(a)
        for i in range(len(plain)):
            flipped = plain[i] if abs(plain[i].min()) <= abs(plain[i].max()) else -plain[i]
            self.assertLessEqual(max_diff(got[i, 0], np.maximum(flipped, 0)), 1e-4 * float(want.max()))

    def test_a_cnn_layer(self):
        layer = "features.1"
        images = CliAttribute.IMAGES
        got = self.eigen_cam(FASHION, layer, *inputs(images))
        model = demo_model()
        seen = {}
        module = dict(model.named_modules())[layer]
        hook = module.register_forward_hook(lambda m, i, output: seen.__setitem__("a", output.detach()))
        with torch.no_grad():
            predicted = model(torch.cat([fashion_image(p) for p in images])).argmax(1)
        hook.remove()
        self.assertEqualsPeer(got["eigen_cam"], seen["a"])
        self.assertTrue(torch.equal(got["targets"], predicted))
        upsampled = torch.nn.functional.interpolate(got["eigen_cam"], size=(28, 28), mode="bilinear",
                                                    align_corners=False)
        self.assertLessEqual(max_diff(got["eigen_cam:input"], upsampled), 1e-6)

    def test_a_detection_model_needs_no_score(self):
        layer = "backbone.body.13"
        got = self.eigen_cam(FIXTURES / "fasterrcnn_scripted.pt", layer, "--input", FIXTURES / "fasterrcnn_input.pt")
        expected = torch.load(FIXTURES / "fasterrcnn_expected.pt")
        self.assertEqualsPeer(got["eigen_cam"], expected[f"0/{layer}"])
        self.assertEqual(got["targets"].tolist(), [-1])

    def test_vision_transformer_tokens_as_their_patch_grid(self):
        layer = "encoder.layers.encoder_layer_10"
        got = self.eigen_cam(FIXTURES / "vit_b_16_scripted.pt", layer, "--input", FIXTURES / "vit_input.pt")
        tokens = torch.load(FIXTURES / "vit_expected.pt")[layer]
        patches = tokens[:, 1:].transpose(1, 2).reshape(1, tokens.shape[2], 14, 14)
        self.assertEqualsPeer(got["eigen_cam"], patches)
        self.assertEqual(tuple(got["eigen_cam:input"].shape), (1, 1, 224, 224))


def rise_causal_curve(model, image, explanation, mode, step, substrate, probability=lambda out: torch.softmax(out, 1)):
    """RISE's CausalMetric.single_run (Petsiuk et al. 2018, github.com/eclique/RISE, evaluation.py)
    transcribed for one image on the CPU, the model's softmax watched for class c. One change: the
    pixels are ranked by a stable sort (RISE's np.argsort is a quicksort, its tie order arbitrary)."""
    c, hw = image.shape[1], image.shape[2] * image.shape[3]
    n_steps = (hw + step - 1) // step
    start, finish = (image.clone(), substrate(image)) if mode == "del" else (substrate(image), image.clone())
    with torch.no_grad():
        target = int(model(image).argmax(1))
    scores = np.empty(n_steps + 1)
    salient_order = np.argsort(-explanation.reshape(-1, hw).numpy(), axis=1, kind="stable")
    for i in range(n_steps + 1):
        with torch.no_grad():
            scores[i] = float(probability(model(start))[0, target])
        if i < n_steps:
            coords = salient_order[:, step * i:step * (i + 1)]
            start.numpy().reshape(1, c, hw)[0, :, coords] = finish.numpy().reshape(1, c, hw)[0, :, coords]
    return scores


def rise_auc(arr):
    return (arr.sum() - arr[0] / 2 - arr[-1] / 2) / (arr.shape[0] - 1)


@unittest.skipIf(HEADLESS, "reads image files")
class CliEvaluate(ImagesCase, FashionSubject, unittest.TestCase):
    """evaluate: deletion and insertion against RISE's own procedure, Average Drop and Increase in
    Confidence against pytorch-grad-cam's DropInConfidence / IncreaseInConfidence, on maps made by
    attribute and read back through --attributions."""

    def evaluate(self, *args, name="metrics.json"):
        out = self.dir / name
        result = cli("evaluate", self.MODEL, *inputs(self.IMAGES), "--threads", THREADS, *args, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return out

    def maps(self, *methods):
        out = self.dir / "maps.npz"
        result = cli("attribute", self.MODEL, *inputs(self.IMAGES), "--threads", THREADS,
                     *[a for m in methods for a in ("--method", m)], "--layer", self.LAYER, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return out, {key: torch.from_numpy(value) for key, value in np.load(out).items()}

    def test_deletion_and_insertion_equal_rise(self):
        from torchvision.transforms.functional import gaussian_blur
        path, maps = self.maps("saliency", "grad_cam")
        report = json.loads(self.evaluate("--method", "saliency", "--method", "grad_cam", "--metric", "deletion",
                                          "--metric", "insertion", "--pixels-per-step", "16",
                                          "--attributions", path).read_text())
        self.assertEqual(report["pixels_per_step"], 16)
        # The cap and the batch it gave, which can move a score in its last bits, are recorded.
        self.assertGreater(report["memory_mb"], 0)
        self.assertGreaterEqual(report["batch"], 1)
        # One schema with the window's export (core's attributionMeasuresJson): images as objects.
        self.assertEqual([image["path"] for image in report["images"]], [str(p) for p in self.IMAGES])
        self.assertEqual([image["target"] for image in report["images"]], maps["targets"].tolist())
        self.assertEqual((report["deletion_fill"], report["insertion_start"], report["attributions"]),
                         ("zero", "blur", str(path)))
        self.assertNotIn("sanity", report)
        kernel, sigma = blur_kernel(self.x)
        blur = lambda image: gaussian_blur(image, kernel_size=[kernel, kernel], sigma=[sigma, sigma])
        zero = torch.zeros_like
        for method, key in (("saliency", "saliency"), ("grad_cam", "grad_cam:input")):
            for metric, mode, substrate in (("deletion", "del", zero), ("insertion", "ins", blur)):
                with self.subTest(method=method, metric=metric):
                    got = report["methods"][method][metric]
                    for i in range(len(self.x)):
                        want = rise_causal_curve(self.model, self.x[i:i + 1], maps[key][i].sum(0), mode, 16, substrate)
                        self.assertLessEqual(max_diff(got["curves"][i], want), 1e-5)
                        self.assertAlmostEqual(got["per_image"][i], rise_auc(want), delta=1e-6)
                    self.assertAlmostEqual(got["mean"], float(np.mean(got["per_image"])), delta=1e-9)
                    self.assertAlmostEqual(got["sd"], float(np.std(got["per_image"])), delta=1e-9)
        # The ranking is the map's: the reversed map deletes other pixels first, and its curve starts at
        # the same full image's probability.
        reverse = self.dir / "reverse.npz"
        np.savez(reverse, saliency=(-maps["saliency"]).numpy(), targets=maps["targets"].numpy())
        reversed_ = json.loads(self.evaluate("--method", "saliency", "--metric", "deletion", "--pixels-per-step", "16",
                                             "--attributions", reverse, name="reverse.json").read_text())
        for forward, backward in zip(report["methods"]["saliency"]["deletion"]["curves"],
                                     reversed_["methods"]["saliency"]["deletion"]["curves"]):
            self.assertEqual(forward[0], backward[0])
            self.assertGreater(max_diff(forward, backward), 1e-3)

    def test_blur_and_mean_fills_with_the_default_step_equal_rise(self):
        from torchvision.transforms.functional import gaussian_blur
        path, maps = self.maps("saliency")
        kernel, sigma = blur_kernel(self.x)
        substrates = {"blur": lambda image: gaussian_blur(image, kernel_size=[kernel, kernel], sigma=[sigma, sigma]),
                      # each channel's own mean, not one mean over the channels
                      "mean": lambda image: image.mean((2, 3), keepdim=True).expand_as(image).clone()}
        step = math.ceil(self.x.shape[2] * self.x.shape[3] / 100)  # the default: a hundredth of the image
        for fill, substrate in substrates.items():
            report = json.loads(self.evaluate("--method", "saliency", "--metric", "deletion", "--metric", "insertion",
                                              "--fill", fill, "--attributions", path, name=f"{fill}.json").read_text())
            self.assertEqual((report["pixels_per_step"], report["deletion_fill"], report["insertion_start"]),
                             (step, fill, fill))
            for metric, mode in (("deletion", "del"), ("insertion", "ins")):
                with self.subTest(fill=fill, metric=metric):
                    got = report["methods"]["saliency"][metric]
                    for i in range(len(self.x)):
                        want = rise_causal_curve(self.model, self.x[i:i + 1], maps["saliency"][i].sum(0), mode, step,
                                                 substrate)
                        self.assertLessEqual(max_diff(got["curves"][i], want), 1e-5)

    def test_making_the_maps_itself_scores_what_attribute_writes(self):
        path, _ = self.maps("integrated_gradients")
        args = ("--method", "integrated_gradients", "--steps", "50", "--metric", "deletion", "--metric", "average_drop")
        given = json.loads(self.evaluate(*args, "--attributions", path, name="given.json").read_text())
        made = json.loads(self.evaluate(*args, name="made.json").read_text())
        # The same maps as .safetensors (read by the safetensors library, then by evaluate).
        other = self.dir / "maps.safetensors"
        written = cli("attribute", self.MODEL, *inputs(self.IMAGES), "--threads", THREADS, "--method",
                      "integrated_gradients", "--layer", self.LAYER, "--out", other)
        self.assertEqual(written.returncode, 0, written.stderr)
        self.assertTrue(torch.equal(read_safetensors(other)["integrated_gradients"],
                                    torch.from_numpy(np.load(path)["integrated_gradients"])))
        safetensors = json.loads(self.evaluate(*args, "--attributions", other, name="safetensors.json").read_text())
        for metric in ("deletion", "average_drop"):
            self.assertEqual(made["methods"]["integrated_gradients"][metric]["per_image"],
                             given["methods"]["integrated_gradients"][metric]["per_image"])
            self.assertEqual(safetensors["methods"]["integrated_gradients"][metric]["per_image"],
                             given["methods"]["integrated_gradients"][metric]["per_image"])

    def test_average_drop_and_increase_equal_pytorch_grad_cam(self):
        from pytorch_grad_cam.metrics.cam_mult_image import DropInConfidence, IncreaseInConfidence
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputSoftmaxTarget
        path, maps = self.maps("grad_cam", "layer_cam")
        out = self.evaluate("--method", "grad_cam", "--method", "layer_cam", "--metric", "average_drop",
                            "--metric", "increase_confidence", "--attributions", path, name="drop.csv")
        with out.open() as f:
            rows = list(csv.DictReader(f))
        targets = [ClassifierOutputSoftmaxTarget(int(t)) for t in maps["targets"]]
        with torch.no_grad():
            full = torch.softmax(self.model(self.x), 1)[torch.arange(len(self.x)), maps["targets"]].numpy()
        for method in ("grad_cam", "layer_cam"):
            with self.subTest(method=method):
                cam = maps[f"{method}:input"][:, 0]
                flat = cam.reshape(len(cam), -1)
                low, high = flat.min(1).values.view(-1, 1, 1), flat.max(1).values.view(-1, 1, 1)
                cams = ((cam - low) / (high - low)).numpy()  # pytorch-grad-cam's maps are scaled to [0, 1]
                drop = DropInConfidence()(self.x, cams, targets, self.model)
                increase = IncreaseInConfidence()(self.x, cams, targets, self.model)
                got = {(r["metric"], r["image"]): float(r["value"]) for r in rows if r["method"] == method}
                for i, image in enumerate(self.IMAGES):
                    # Chattopadhay et al. divide the drop by the full image's probability; pytorch-grad-cam
                    # gives the drop itself.
                    self.assertAlmostEqual(got[("average_drop", str(image))], 100 * drop[i] / full[i], delta=1e-3)
                    self.assertEqual(got[("increase_confidence", str(image))], 100 * increase[i])
                self.assertAlmostEqual(got[("average_drop", "mean")], float(np.mean(100 * drop / full)), delta=1e-3)

    def test_road_equals_pytorch_grad_cam(self):
        from pytorch_grad_cam.metrics.road import (ROADLeastRelevantFirst, ROADLeastRelevantFirstAverage,
                                                   ROADMostRelevantFirst, ROADMostRelevantFirstAverage)
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputSoftmaxTarget
        path, maps = self.maps("grad_cam")
        seed = 5
        report = json.loads(self.evaluate("--method", "grad_cam", "--metric", "road_morf", "--metric", "road_lerf",
                                          "--seed", str(seed), "--attributions", path).read_text())
        cam = maps["grad_cam:input"].sum(1)  # the map the pixels are ranked by
        for name, averager in (("road_morf", ROADMostRelevantFirstAverage()),
                               ("road_lerf", ROADLeastRelevantFirstAverage())):
            with self.subTest(metric=name):
                got = report["methods"]["grad_cam"][name]
                for i in range(len(self.x)):
                    # Image i's imputation noise: the global generator seeded seed + i, the percentiles in order.
                    torch.manual_seed(seed + i)
                    target = [ClassifierOutputSoftmaxTarget(int(maps["targets"][i]))]
                    want = averager(self.x[i:i + 1], cam[i:i + 1].numpy(), target, self.model)
                    self.assertAlmostEqual(got["per_image"][i], float(want[0]), delta=1e-5)
                    # Point by point: the averager's percentiles in its order, from the same seed.
                    torch.manual_seed(seed + i)
                    one = ROADMostRelevantFirst if name == "road_morf" else ROADLeastRelevantFirst
                    points = [float(one(p)(self.x[i:i + 1], cam[i:i + 1].numpy(), target, self.model)[0])
                              for p in averager.percentiles]
                    self.assertLessEqual(max_diff(got["curves"][i], points), 1e-5)
        # The most relevant pixels matter more than the least: MoRF falls below LeRF on average.
        self.assertLess(report["methods"]["grad_cam"]["road_morf"]["mean"],
                        report["methods"]["grad_cam"]["road_lerf"]["mean"])

    def test_maps_of_another_size_are_refused_naming_both_shapes(self):
        """A map of another height and width than the inputs would be scored against pixels it does not
        describe: refused, both shapes named, nothing written (it used to be scored, exit 0)."""
        path, maps = self.maps("saliency")
        n, k, h, w = maps["saliency"].shape
        for name, shape in (("narrow", (n, k, h, w - 4)), ("short", (n, k, h - 2, w)), ("channels", (n, 2, h, w))):
            with self.subTest(name=name):
                other = self.dir / f"{name}.npz"
                np.savez(other, saliency=np.zeros(shape, dtype=np.float32))
                out = self.dir / f"{name}.json"
                result = cli("evaluate", self.MODEL, *inputs(self.IMAGES), "--metric", "deletion", "--method",
                             "saliency", "--attributions", other, "--out", out)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn("[" + ", ".join(map(str, shape)) + "]", result.stderr)
                self.assertIn("the inputs are [", result.stderr)
                self.assertFalse(out.exists())

    def test_mistakes_are_named(self):
        path, _ = self.maps("saliency")
        cases = (
            (("--method", "occlusion", "--attributions", path, "--out", self.dir / "m.json"), "no key 'occlusion'"),
            (("--method", "saliency", "--out", self.dir / "m.txt"), "FILE.json or FILE.csv"),
            (("--method", "saliency", "--attributions", self.dir / "none.npz", "--out", self.dir / "m.json"),
             "none.npz"),
        )
        for args, message in cases:
            with self.subTest(message=message):
                result = cli("evaluate", self.MODEL, *inputs(self.IMAGES), "--metric", "deletion", *args)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(message, result.stderr)
        self.assertFalse((self.dir / "m.json").exists())


@unittest.skipIf(HEADLESS, "reads image files")
class CliSanity(ImagesCase, FashionSubject, unittest.TestCase):
    """sanity: cascading and independent randomisation against Quantus's MPRT on the eager demo model
    (the same layers in the same order, re-initialised from the same seed, the same Spearman per image),
    SSIM against skimage's structural_similarity of the maps it keeps, and the loaded model untouched."""

    SEED = 42

    def sanity(self, *args, name="sanity.json"):
        out = self.dir / name
        result = cli("sanity", self.MODEL, *inputs(self.IMAGES), "--threads", THREADS, "--seed", self.SEED, *args,
                     "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return out

    @staticmethod
    def saliency(model, inputs, targets, **kwargs):
        from captum.attr import Saliency
        x = torch.as_tensor(inputs).float().requires_grad_()  # TorchScope's saliency is |gradient|, Captum's default
        return Saliency(model).attribute(x, target=torch.as_tensor(targets), abs=True).detach().numpy()

    @staticmethod
    def input_x_gradient(model, inputs, targets, **kwargs):
        from captum.attr import InputXGradient
        x = torch.as_tensor(inputs).float().requires_grad_()
        return InputXGradient(model).attribute(x, target=torch.as_tensor(targets)).detach().numpy()

    def test_cascading_and_independent_equal_quantus_mprt(self):
        import quantus
        for mode, order in (("cascading", "top_down"), ("independent", "independent")):
            report = json.loads(self.sanity("--method", "saliency", "--mode", mode, name=f"{mode}.json").read_text())
            self.assertEqual((list(report["sanity"]["methods"]), report["sanity"]["mode"]), (["saliency"], mode))
            self.assertEqual([image["target"] for image in report["images"]], self.predicted.tolist())
            self.assertEqual([image["path"] for image in report["images"]], [str(p) for p in self.IMAGES])
            self.assertEqual(report["seed"], self.SEED)
            got = report["sanity"]["methods"]["saliency"]
            for absolute, key in ((False, "spearman"), (True, "spearman_abs")):
                with self.subTest(mode=mode, key=key):
                    # One image a batch on both sides: the maps then round alike.
                    mprt = quantus.MPRT(layer_order=order, seed=self.SEED, abs=absolute, normalise=False,
                                        disable_warnings=True)
                    scores = mprt(model=self.model, x_batch=self.x.numpy(), y_batch=self.predicted.numpy(),
                                  a_batch=None, explain_func=self.saliency, device="cpu", batch_size=1)
                    layers = [name for name in scores if name != "original"]
                    self.assertEqual([entry["layer"] for entry in got["layers"]], layers)
                    for entry in got["layers"]:
                        self.assertLessEqual(max_diff(entry["per_image"][key], scores[entry["layer"]]), 1e-6,
                                             entry["layer"])
                        self.assertAlmostEqual(entry[key], float(np.mean(scores[entry["layer"]])), delta=1e-6)
        # A signed map: Spearman of the signed and of the absolute maps differ, each equal to Quantus's.
        got = json.loads(self.sanity("--method", "input_x_gradient", name="signed.json").read_text())
        got = got["sanity"]["methods"]["input_x_gradient"]
        for absolute, key in ((False, "spearman"), (True, "spearman_abs")):
            with self.subTest(method="input_x_gradient", key=key):
                mprt = quantus.MPRT(layer_order="top_down", seed=self.SEED, abs=absolute, normalise=False,
                                    disable_warnings=True)
                scores = mprt(model=self.model, x_batch=self.x.numpy(), y_batch=self.predicted.numpy(), a_batch=None,
                              explain_func=self.input_x_gradient, device="cpu", batch_size=1)
                for entry in got["layers"]:
                    self.assertLessEqual(max_diff(entry["per_image"][key], scores[entry["layer"]]), 1e-6,
                                         entry["layer"])
        self.assertGreater(max(abs(e["spearman"] - e["spearman_abs"]) for e in got["layers"]), 0.01)
        # The test can tell the modes apart: past the first layer they differ.
        cascading = json.loads((self.dir / "cascading.json").read_text())["sanity"]["methods"]["saliency"]["layers"]
        independent = json.loads((self.dir / "independent.json").read_text())["sanity"]["methods"]["saliency"]["layers"]
        self.assertNotEqual([e["spearman"] for e in cascading], [e["spearman"] for e in reversed(independent)])

    def test_grad_cams_spearman_equals_quantus_mprt(self):
        import quantus
        layer = self.LAYER

        def grad_cam(model, inputs, targets, **kwargs):
            """Grad-CAM of the (randomised) model by a forward hook and autograd, ReLU, then bilinear
            to the input's size: one image at a time."""
            module, maps = dict(model.named_modules())[layer], []
            for x, t in zip(torch.as_tensor(inputs).float(), torch.as_tensor(targets)):
                seen = {}
                hook = module.register_forward_hook(lambda m, i, o: seen.__setitem__("a", o))
                out = model(x[None])
                hook.remove()
                gradient, = torch.autograd.grad(out[0, int(t)], seen["a"])
                cam = torch.relu((gradient.mean((2, 3), keepdim=True) * seen["a"]).sum(1, keepdim=True))
                maps.append(F.interpolate(cam, size=x.shape[1:], mode="bilinear", align_corners=False).detach())
            return torch.cat(maps).numpy()

        report = json.loads(self.sanity("--method", "grad_cam", "--layer", layer).read_text())
        got = report["sanity"]["methods"]["grad_cam"]
        # Quantus refuses a batch whose maps are all zero (a randomised layer after the Grad-CAM layer
        # can give that) and its batched Spearman fails on the NaN of a constant map: its randomisation,
        # layer order and Spearman stay, the maps go straight through and one image is compared at a time.
        spearman = quantus.similarity_func.correlation_spearman
        mprt = quantus.MPRT(layer_order="top_down", seed=self.SEED, abs=False, normalise=False, disable_warnings=True,
                            similarity_func=lambda a, b, batched=True, **kw: np.array([spearman(a[0], b[0])]))
        unwrap = lambda model: model.get_model() if hasattr(model, "get_model") else model
        mprt.explain_batch = lambda model, x, y: grad_cam(unwrap(model), x, y)
        scores = mprt(model=self.model, x_batch=self.x.numpy(), y_batch=self.predicted.numpy(), a_batch=None,
                      explain_func=grad_cam, device="cpu", batch_size=1)
        self.assertEqual([entry["layer"] for entry in got["layers"]], [name for name in scores if name != "original"])
        self.assertTrue(any(np.isfinite(np.asarray(scores[entry["layer"]], dtype=np.float64)).any()
                            for entry in got["layers"]), "every Spearman value is NaN: nothing was compared")
        for entry in got["layers"]:
            # A randomised layer after the Grad-CAM layer leaves maps of ties (all zero): both sides
            # rank them alike, or the entry is NaN on both (Quantus's spearmanr of a constant).
            want = np.asarray(scores[entry["layer"]], dtype=np.float64)
            mine = np.asarray([np.nan if v is None else v for v in entry["per_image"]["spearman"]], dtype=np.float64)
            self.assertTrue(np.array_equal(np.isnan(mine), np.isnan(want)), entry["layer"])
            finite = ~np.isnan(want)
            self.assertLessEqual(max_diff(mine[finite], want[finite]), 1e-6, entry["layer"])

    def test_ssim_and_the_kept_maps(self):
        from skimage.metrics import structural_similarity
        out = self.sanity("--method", "saliency", "--method", "grad_cam", "--layer", self.LAYER,
                          "--maps", self.dir / "maps.npz")
        got = json.loads(out.read_text())["sanity"]["methods"]
        maps = {key: torch.from_numpy(value) for key, value in np.load(self.dir / "maps.npz").items()}
        attributed = cli("attribute", self.MODEL, *inputs(self.IMAGES), "--threads", THREADS, "--method", "saliency",
                         "--method", "grad_cam", "--layer", self.LAYER, "--out", self.dir / "plain.npz")
        self.assertEqual(attributed.returncode, 0, attributed.stderr)
        plain = {key: torch.from_numpy(value) for key, value in np.load(self.dir / "plain.npz").items()}
        # The loaded model is never changed: its maps are attribute's, a layer method's upsampled.
        self.assertTrue(torch.equal(maps["saliency/original"], plain["saliency"]))
        self.assertTrue(torch.equal(maps["grad_cam/original"], plain["grad_cam:input"]))
        for method in ("saliency", "grad_cam"):
            original = maps[f"{method}/original"].sum(1).double().numpy()
            for entry in got[method]["layers"]:
                randomised = maps[f"{method}/{entry['layer']}"].sum(1).double().numpy()
                for i in range(len(self.IMAGES)):
                    both = np.concatenate([original[i], randomised[i]])
                    want = structural_similarity(original[i], randomised[i], data_range=float(both.max() - both.min()))
                    self.assertAlmostEqual(entry["per_image"]["ssim"][i], want, delta=1e-9)
        first = got["saliency"]["layers"][0]
        self.assertEqual((first["layer"], first["type"]), ("classifier.2", "Linear"))
        # Quantus's ssim compares the flattened maps as 1-D signals; TorchScope compares the 2-D maps,
        # as Adebayo et al. did: the two are different numbers.
        import quantus
        original = maps["saliency/original"].sum(1).double().numpy()
        randomised = maps[f"saliency/{first['layer']}"].sum(1).double().numpy()
        flat = quantus.similarity_func.ssim(original[0].reshape(-1), randomised[0].reshape(-1))
        self.assertGreater(abs(flat - first["per_image"]["ssim"][0]), 1e-3)

    def test_mistakes_are_named(self):
        bad = cli("sanity", self.MODEL, *inputs(self.IMAGES[:1]), "--method", "saliency", "--mode", "sideways",
                  "--out", self.dir / "x.json")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("cascading", bad.stderr)
        wrong = cli("sanity", self.MODEL, *inputs(self.IMAGES[:1]), "--method", "saliency", "--out", self.dir / "x.txt")
        self.assertEqual(wrong.returncode, 1)
        self.assertIn("FILE.json or FILE.csv", wrong.stderr)


@unittest.skipIf(HEADLESS, "reads image files")
class CliAttributeColor(ColorSubject, CliAttribute):
    """CliAttribute's tests on 3 x 40 x 56 colour images."""


@unittest.skipIf(HEADLESS, "reads image files")
class CliAttributeNoiseColor(ColorSubject, CliAttributeNoise):
    """CliAttributeNoise's tests on 3 x 40 x 56 colour images."""

    IMAGES = ColorSubject.IMAGES[1:3]
    BASELINE = ColorSubject.IMAGES[3]


@unittest.skipIf(HEADLESS, "reads image files")
class CliEvaluateColor(ColorSubject, CliEvaluate):
    """CliEvaluate's tests on 3 x 40 x 56 colour images."""


@unittest.skipIf(HEADLESS, "reads image files")
class CliSanityColor(ColorSubject, CliSanity):
    """CliSanity's tests on 3 x 40 x 56 colour images."""


@unittest.skipIf(HEADLESS, "writes PNG files")
class CliVisualize(unittest.TestCase):
    """visualize: the images it writes, read back with PIL and run through the eager demo model."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_channels_to_a_folder_beat_every_image_of_the_folder(self):
        from PIL import Image
        import numpy as np
        out = self.dir / "sheet"
        result = cli("visualize", FASHION, "--layer", "features.2.bn", "--channels", "0-2", "--steps", "64",
                     "--data", FIXTURES / "labelled", "--top", "3", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        summary = json.loads((out / "visualization.json").read_text())
        self.assertEqual([i["channel"] for i in summary["images"]], [0, 1, 2])
        for name in ("sheet.png", "index.html"):
            self.assertTrue((out / name).stat().st_size > 0, name)
        self.assertEqual(len(list(out.glob("*labelled*"))), 0)

        # The PNGs are 28 px images enlarged 8 times by whole pixels: every 8th pixel is the image.
        pngs = [np.asarray(Image.open(out / i["file"]).convert("L"))[::8, ::8] for i in summary["images"]]
        optimised = torch.from_numpy(np.stack(pngs)).float().div(255).unsqueeze(1)
        means = eager_fashion_channel_means(optimised, "features.2.bn")
        labelled = torch.load(FIXTURES / "labelled_inputs.pt")["samples"]  # normalised already
        from demo_hooks import MEAN, STD
        folder = eager_fashion_channel_means(labelled * STD + MEAN, "features.2.bn")

        # Beside each channel's image, the folder's 3 images that excite it most, most first (ties
        # to the earlier image), by the hooks' channel means, with their means to 2 decimals.
        from torchvision.datasets import ImageFolder
        files = [os.path.realpath(p) for p, _ in ImageFolder(str(FIXTURES / "labelled")).samples]
        rows = re.findall(r"<tr><th>channel (\d+)</th>(.*?)</tr>", (out / "index.html").read_text())
        self.assertEqual([int(c) for c, _ in rows], [0, 1, 2])
        for channel, row in rows:
            shown = re.findall(r'<img src="file://([^"]+)"><br>[^<]* (-?[0-9.]+)</td>', row)
            ranked = np.argsort(-folder[:, int(channel)].double().numpy(), kind="stable")[:3]
            self.assertEqual([os.path.realpath(p) for p, _ in shown], [files[i] for i in ranked], channel)
            for (_, value), i in zip(shown, ranked):
                self.assertLessEqual(abs(float(value) - float(folder[i, int(channel)])), 0.005 + 1e-6, channel)
        for k, image in enumerate(summary["images"]):
            # 8-bit rounding moves the value a little; it still beats every image of the folder.
            self.assertAlmostEqual(float(means[k, k]), image["value"], delta=0.05 * abs(image["value"]) + 0.02)
            self.assertGreater(float(means[k, k]), float(folder[:, k].max()))

    def test_a_seed_gives_the_same_images_and_another_seed_others(self):
        runs = []
        for seed, name in ((4, "a.pt"), (4, "b.pt"), (5, "c.pt")):
            result = cli("visualize", FASHION, "--layer", "features.1.conv", "--channels", "1,3", "--steps", "8",
                         "--seed", seed, "--out", self.dir / name)
            self.assertEqual(result.returncode, 0, result.stderr)
            runs.append(torch.load(self.dir / name))
        self.assertEqual(list(runs[0]["images"].shape), [2, 1, 28, 28])
        self.assertTrue(torch.equal(runs[0]["images"], runs[1]["images"]))
        self.assertFalse(torch.equal(runs[0]["images"], runs[2]["images"]))

    def test_what_does_not_fit_is_refused(self):
        result = cli("visualize", FASHION, "--layer", "features.2.bn", "--channels", "500", "--steps", "2",
                     "--out", self.dir / "x.png")
        self.assertEqual(result.returncode, 1)
        self.assertIn("channel 500 is not in 'features.2.bn', which has 128 channels", result.stderr)
        result = cli("visualize", FASHION, "--layer", "features.2.bn", "--channels", "0-2", "--out", self.dir / "x.png")
        self.assertEqual(result.returncode, 2)
        self.assertIn("3 images do not fit in one PNG", result.stderr)
        result = cli("visualize", FASHION, "--layer", "features.2.bn", "--channels", "2-1", "--out", self.dir / "x.png")
        self.assertEqual(result.returncode, 2)
        self.assertIn("FIRST <= LAST", result.stderr)
        # Channel 0 of the face demo's dense2 block (after a ReLU) is 0 for the starting image.
        result = cli("visualize", "--layer", "features.dense2", "--channels", "0", "--steps", "3",
                     "--out", self.dir / "x.png")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("channel 0 stayed at 0.000000 for 3 steps: no gradient reaches it", result.stderr)


if __name__ == "__main__":
    unittest.main()
