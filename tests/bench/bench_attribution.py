"""The attribution workbench against its Python peers, each side a whole process on the same
model file, inputs and thread count, run in turn; prints one JSON object per case (wall seconds,
peak resident memory, the peer's own compute seconds) and the ratios.

  bench_attribution.py CLI [--threads T] [--cases ig,scorecam,deletion,sanity] [--repeats R]

Cases (random weights: no download; the models are scripted into a temporary folder):
  ig        Integrated Gradients, 50 Gauss-Legendre steps, ResNet-50, a batch of 8 at 224 x 224: TorchScope
            under its default memory cap; Captum with internal_batch_size=16 and without it (all 400 path
            points at once; that run gets a 14 GB data limit, so that running out of memory is a clean failure).
  scorecam  Score-CAM of ResNet-18's layer4 (512 channels), one 224 x 224 image: TorchScope; pytorch-grad-cam's
            ScoreCAM (batches of 16); torchcam's ScoreCAM (batches of 32).
  deletion  Deletion and insertion (RISE's procedure, 64 steps each) of Grad-CAM maps over 100 images of
            64 x 64, ResNet-18: TorchScope's evaluate against RISE's own loop (one image a forward, as its
            CausalMetric runs) and Quantus's PixelFlipping (deletion only).
  sanity    Cascading randomisation of ResNet-18 (every layer), saliency, 10 images of 112 x 112: TorchScope's
            sanity against Quantus's MPRT with Captum's Saliency.
  lrp       LRP of ResNet-50 (epsilon_plus_flat, batch norms merged, residual sums split), a batch of 8 at
            224 x 224: TorchScope's lrp and, on the same graph, its input_x_gradient (one gradient pass: the
            issue's bound is LRP <= 1.5 x that); Zennit 0.5.1's EpsilonPlusFlat with its ResNetCanonizer.
  vit       LRP of torchvision's ViT-B/16 (CP-LRP, LXT's gamma recipe), a batch of 4 at 224 x 224: TorchScope's
            lrp and its input_x_gradient; LXT 2.1's cp_LRP patches with Zennit's Gamma through LXT's
            monkey_patch_zennit.
  crp       CRP of ResNet-50 at layer3 (epsilon_plus_flat): 4 images of 224 x 224, each image's 8 most relevant
            channels' conditional maps; then RelMax references of those channels over a folder of 32 images
            (top 9). TorchScope's crp against zennit-crp 0.6's CondAttribution (one pass for the channels'
            relevance, one of 8 conditions per image) and its FeatureVisualization (batches of 8).
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision

PEER_PRELUDE = """
import sys, time, torch, torchvision
torch.set_num_threads({threads})
model = getattr(torchvision.models, '{arch}')(weights=None)
model.load_state_dict(torch.jit.load('{model}').state_dict())
model.eval()
x = torch.load('{inputs}')
"""


ZENNIT_05 = pathlib.Path(sys.prefix) / "oracles" / "zennit-0.5.1"  # scripts/python_env.sh puts it there

LXT_PRELUDE = """
import importlib, os, types, lxt
for package in ('lxt.efficient', 'lxt.efficient.models'):  # their __init__s import transformers
    stub = types.ModuleType(package)
    stub.__path__ = [os.path.join(os.path.dirname(lxt.__file__), *package.split('.')[1:])]
    sys.modules[package] = stub
vit_torch = importlib.import_module('lxt.efficient.models.vit_torch')
importlib.import_module('lxt.efficient.zennit_patches').monkey_patch_zennit()
"""


def run(command, data_limit=None):
    """Wall seconds, exit status, stdout and stderr of one whole process."""
    def limit():
        if data_limit:
            resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    out, err = process.communicate()
    return {"seconds": time.perf_counter() - started, "status": process.returncode, "stdout": out[-4000:],
            "stderr": err[-4000:]}


def timed(command, data_limit=None):
    """run() with the process's peak resident memory, as GNU time -v reports it."""
    result = run(["/usr/bin/time", "-v", *command], data_limit)
    for line in result["stderr"].splitlines():
        if "Maximum resident set size" in line:
            result["peak_mib"] = int(line.split(":")[1]) / 1024
    if result["status"] != 0:  # time's own report is last: the command's error is above it
        lines = [l for l in result["stderr"].splitlines() if "Error" in l or "error" in l]
        result["error"] = lines[-1:] if lines else ["exit status %d" % result["status"]]
    return result


def peer(code, python, **fields):
    return [python, "-c", PEER_PRELUDE.format(**fields) + code]


def script(folder, arch, size, count, seed):
    torch.manual_seed(seed)
    model = getattr(torchvision.models, arch)(weights=None).eval()
    path = folder / f"{arch}.pt"
    torch.jit.save(torch.jit.script(model), str(path))
    inputs = folder / f"{arch}_{size}_{count}.pt"
    torch.save(torch.randn(count, 3, size, size), inputs)
    return path, inputs


def compare(name, sides, repeats):
    """Each side `repeats` times, in turn; the median of each."""
    runs = {label: [] for label, _, _ in sides}
    for _ in range(repeats):
        for label, command, limit in sides:
            runs[label].append(timed(command, limit))
    figures = {}
    for label, results in runs.items():
        ok = [r for r in results if r["status"] == 0]
        entry = {"runs": len(results), "failed": len(results) - len(ok)}
        if ok:
            entry["seconds"] = statistics.median(r["seconds"] for r in ok)
            entry["peak_mib"] = statistics.median(r.get("peak_mib", 0) for r in ok)
            inner = [float(line.split()[1]) for r in ok for line in r["stdout"].splitlines() if line.startswith("compute ")]
            if inner:
                entry["compute_seconds"] = statistics.median(inner)
        else:
            entry["error"] = results[-1].get("error", [])
            entry["peak_mib"] = results[-1].get("peak_mib", 0)
        figures[label] = entry
    first = sides[0][0]
    for label, entry in figures.items():
        if label != first and "seconds" in entry and "seconds" in figures[first]:
            entry["torchscope_speedup"] = entry["seconds"] / figures[first]["seconds"]
    print(json.dumps({"case": name, **figures}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cli")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cases", default="ig,scorecam,deletion,sanity,lrp,vit,crp")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    python, threads, cli = sys.executable, args.threads, args.cli
    torch.set_num_threads(threads)
    cases = args.cases.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        if "ig" in cases:
            model, inputs = script(folder, "resnet50", 224, 8, 1)
            fields = dict(threads=threads, arch="resnet50", model=model, inputs=inputs)
            ig = """
from captum.attr import IntegratedGradients
target = model(x).argmax(1)
started = time.perf_counter()
IntegratedGradients(model).attribute(x, baselines=torch.zeros_like(x), target=target, n_steps=50,
                                     method='gausslegendre'{extra})
print('compute', time.perf_counter() - started)
"""
            compare("integrated_gradients resnet50 224 batch 8, 50 steps", [
                ("torchscope", [cli, "attribute", str(model), "--input", str(inputs), "--method",
                                "integrated_gradients", "--steps", "50", "--threads", str(threads), "--preprocess",
                                "none", "--out", str(folder / "ig.npz")], None),
                ("captum internal_batch_size=16", peer(ig.format(extra=", internal_batch_size=16"), python, **fields),
                 None),
                ("captum all steps at once", peer(ig.format(extra=""), python, **fields), 14 << 30),
            ], args.repeats)
        if "scorecam" in cases:
            model, inputs = script(folder, "resnet18", 224, 1, 2)
            fields = dict(threads=threads, arch="resnet18", model=model, inputs=inputs)
            grad_cam = """
from pytorch_grad_cam import ScoreCAM
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
target = int(model(x).argmax(1))
cam = ScoreCAM(model=model, target_layers=[model.layer4])
started = time.perf_counter()
cam(input_tensor=x, targets=[ClassifierOutputTarget(target)])
print('compute', time.perf_counter() - started)
"""
            torchcam = """
from torchcam.methods import ScoreCAM
extractor = ScoreCAM(model, target_layer='layer4')
started = time.perf_counter()
out = model(x)
extractor(int(out.argmax(1)), out)
print('compute', time.perf_counter() - started)
"""
            compare("score_cam resnet18 layer4 (512 channels), one 224 image", [
                ("torchscope", [cli, "attribute", str(model), "--input", str(inputs), "--method", "score_cam",
                                "--layer", "layer4", "--threads", str(threads), "--preprocess", "none", "--out",
                                str(folder / "score.npz")], None),
                ("pytorch-grad-cam", peer(grad_cam, python, **fields), None),
                ("torchcam", peer(torchcam, python, **fields), None),
            ], args.repeats)
        if "deletion" in cases:
            model, inputs = script(folder, "resnet18", 64, 100, 3)
            fields = dict(threads=threads, arch="resnet18", model=model, inputs=inputs)
            maps = folder / "cams.npz"
            made = subprocess.run([cli, "attribute", str(model), "--input", str(inputs), "--method", "grad_cam",
                                   "--layer", "layer3", "--threads", str(threads), "--preprocess", "none", "--out",
                                   str(maps)], capture_output=True, text=True)
            assert made.returncode == 0, made.stderr
            rise = """
import numpy as np
from torchvision.transforms.functional import gaussian_blur
maps = torch.from_numpy(np.load('{maps}')['grad_cam:input'])[:, 0]
hw, step = 64 * 64, 64
n_steps = (hw + step - 1) // step
started = time.perf_counter()
with torch.no_grad():
    for i in range(len(x)):
        image = x[i:i + 1]
        c = int(model(image).argmax(1))
        order = np.argsort(-maps[i].reshape(-1).numpy(), kind='stable')
        for start, finish in ((image.clone(), torch.zeros_like(image)),
                              (gaussian_blur(image, [19, 19], [6.4, 6.4]), image.clone())):
            for k in range(n_steps + 1):
                torch.softmax(model(start), 1)[0, c]
                if k < n_steps:
                    coords = order[step * k:step * (k + 1)]
                    start.numpy().reshape(1, 3, hw)[0, :, coords] = finish.numpy().reshape(1, 3, hw)[0, :, coords]
print('compute', time.perf_counter() - started)
""".replace("{maps}", str(maps))
            quantus = """
import numpy as np, quantus
maps = np.load('{maps}')['grad_cam:input']
y = model(x).argmax(1).numpy()
started = time.perf_counter()
quantus.PixelFlipping(features_in_step=64, perturb_baseline='black', normalise=False, disable_warnings=True,
                      return_auc_per_sample=True)(model=model, x_batch=x.numpy(), y_batch=y, a_batch=maps,
                                                   device='cpu', batch_size=100)
print('compute', time.perf_counter() - started)
""".replace("{maps}", str(maps))
            compare("deletion + insertion, 64 steps, 100 images of 64 x 64, resnet18", [
                ("torchscope", [cli, "evaluate", str(model), "--input", str(inputs), "--method", "grad_cam",
                                "--metric", "deletion", "--metric", "insertion", "--pixels-per-step", "64",
                                "--attributions", str(maps), "--threads", str(threads), "--preprocess", "none",
                                "--out", str(folder / "metrics.json")], None),
                ("RISE's loop", peer(rise, python, **fields), None),
                ("quantus PixelFlipping (deletion only)", peer(quantus, python, **fields), None),
            ], args.repeats)
        if "sanity" in cases:
            model, inputs = script(folder, "resnet18", 112, 10, 4)
            fields = dict(threads=threads, arch="resnet18", model=model, inputs=inputs)
            mprt = """
import quantus
from captum.attr import Saliency
def explain(model, inputs, targets, **kwargs):
    xs = torch.as_tensor(inputs).float().requires_grad_()
    return Saliency(model).attribute(xs, target=torch.as_tensor(targets), abs=True).detach().numpy()
y = model(x).argmax(1).numpy()
started = time.perf_counter()
quantus.MPRT(layer_order='top_down', seed=42, abs=True, normalise=False, disable_warnings=True)(
    model=model, x_batch=x.numpy(), y_batch=y, a_batch=None, explain_func=explain, device='cpu', batch_size=10)
print('compute', time.perf_counter() - started)
"""
            compare("cascading randomisation, resnet18, saliency, 10 images of 112 x 112", [
                ("torchscope", [cli, "sanity", str(model), "--input", str(inputs), "--method", "saliency",
                                "--seed", "42", "--threads", str(threads), "--preprocess", "none", "--out",
                                str(folder / "sanity.json")], None),
                ("quantus MPRT", peer(mprt, python, **fields), None),
            ], args.repeats)
        if "lrp" in cases:
            model, inputs = script(folder, "resnet50", 224, 8, 5)
            fields = dict(threads=threads, arch="resnet50", model=model, inputs=inputs)
            zennit = f"""
sys.path.insert(0, '{ZENNIT_05}')
from zennit.attribution import Gradient
from zennit.composites import EpsilonPlusFlat
from zennit.torchvision import ResNetCanonizer
with torch.no_grad():
    logits = model(x)
target = logits.argmax(1)
seed = torch.zeros_like(logits)
seed[torch.arange(len(x)), target] = logits[torch.arange(len(x)), target]
started = time.perf_counter()
with Gradient(model=model, composite=EpsilonPlusFlat(canonizers=[ResNetCanonizer()])) as attributor:
    attributor(x, seed)
print('compute', time.perf_counter() - started)
"""
            common = ["--input", str(inputs), "--threads", str(threads), "--preprocess", "none"]
            compare("lrp resnet50 224 batch 8, epsilon_plus_flat", [
                ("torchscope", [cli, "attribute", str(model), *common, "--method", "lrp", "--composite",
                                "epsilon_plus_flat", "--out", str(folder / "lrp.npz")], None),
                ("torchscope input_x_gradient", [cli, "attribute", str(model), *common, "--method",
                                                 "input_x_gradient", "--out", str(folder / "ixg.npz")], None),
                ("zennit 0.5.1", peer(zennit, python, **fields), None),
            ], args.repeats)
        if "vit" in cases:
            model, inputs = script(folder, "vit_b_16", 224, 4, 6)
            fields = dict(threads=threads, arch="vit_b_16", model=model, inputs=inputs)
            lxt = f"""
sys.path.insert(0, '{ZENNIT_05}')
{LXT_PRELUDE}
from zennit.composites import LayerMapComposite
from zennit.rules import Gamma
for module in model.modules():
    for cls, patch in vit_torch.cp_LRP.items():
        if isinstance(module, cls):
            if patch.keywords.get('keep_original'):
                module.original_forward = module.forward
            module.forward = types.MethodType(patch.args[0], module)
LayerMapComposite([(torch.nn.Conv2d, Gamma(0.25)), (torch.nn.Linear, Gamma(0.05))]).register(model)
started = time.perf_counter()
x.requires_grad_()
logits = model(x)
logits[torch.arange(len(x)), logits.argmax(1)].sum().backward()
(x * x.grad).detach()
print('compute', time.perf_counter() - started)
"""
            common = ["--input", str(inputs), "--threads", str(threads), "--preprocess", "none"]
            compare("lrp vit_b_16 224 batch 4, cp-lrp with gamma (LXT's recipe)", [
                ("torchscope", [cli, "attribute", str(model), *common, "--method", "lrp", "--composite", "epsilon0",
                                "--rule", "type:Conv2d=gamma:0.25", "--rule", "type:Linear=gamma:0.05",
                                "--out", str(folder / "vit_lrp.npz")], None),
                ("torchscope input_x_gradient", [cli, "attribute", str(model), *common, "--method",
                                                 "input_x_gradient", "--out", str(folder / "vit_ixg.npz")], None),
                ("lxt 2.1", peer(lxt, python, **fields), None),
            ], args.repeats)
        if "crp" in cases:
            crp_case(folder, cli, python, threads, args.repeats)


def crp_case(folder, cli, python, threads, repeats):
    from PIL import Image
    import numpy as np
    torch.manual_seed(7)
    model = torchvision.models.resnet50(weights=None).eval()
    path = folder / "crp_resnet50.pt"
    torch.jit.save(torch.jit.script(model), str(path))
    rng = np.random.default_rng(7)
    images, references = folder / "crp_images", folder / "crp_references"
    for target, count in [(images, 4), (references, 32)]:
        target.mkdir(exist_ok=True)
        for i in range(count):
            Image.fromarray(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)).save(target / f"{i:02d}.png")
    prelude = f"""
import sys, time, pathlib, torch, torchvision, numpy as np
from PIL import Image
torch.set_num_threads({threads})
model = torchvision.models.resnet50(weights=None)
model.load_state_dict(torch.jit.load('{path}').state_dict())
model.eval()
def load(p):
    return torch.from_numpy(np.asarray(Image.open(p).convert('RGB'), dtype=np.float32) / 255.0).permute(2, 0, 1)
from crp.attribution import CondAttribution
from crp.concepts import ChannelConcept
from zennit.composites import EpsilonPlusFlat
from zennit.torchvision import ResNetCanonizer
composite = EpsilonPlusFlat(canonizers=[ResNetCanonizer()])
attribution = CondAttribution(model, no_param_grad=True)
"""
    conditional = prelude + f"""
started = time.perf_counter()
for p in sorted(pathlib.Path('{images}').glob('*.png')):
    x = load(p).unsqueeze(0).requires_grad_()
    with torch.no_grad():
        target = int(model(x).argmax(1))
    whole = attribution(x, [{{'y': [target]}}], composite, record_layer=['layer3'])
    shares = ChannelConcept().attribute(whole.relevances['layer3'], abs_norm=True)[0]
    channels = torch.argsort(shares, descending=True)[:8].tolist()
    attribution(x, [{{'y': [target], 'layer3': [c]}} for c in channels], composite)
print('compute', time.perf_counter() - started)
"""
    relmax = prelude + f"""
import contextlib, io, os
from crp.visualization import FeatureVisualization
dataset = [(load(p), 0) for p in sorted(pathlib.Path('{references}').glob('*.png'))]
started = time.perf_counter()
fv = FeatureVisualization(attribution, dataset, {{'layer3': ChannelConcept()}}, path='{folder / "fv"}', device='cpu')
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    fv.run(composite, 0, len(dataset), batch_size=8)
print('compute', time.perf_counter() - started)
"""
    common = [str(path), "--input", str(images), "--layer", "layer3", "--threads", str(threads), "--preprocess",
              "none"]
    compare("crp resnet50 layer3, 4 images of 224, top 8 channels' conditional maps", [
        ("torchscope", [cli, "crp", *common, "--channels", "top:8", "--out", str(folder / "crp.npz")], None),
        ("zennit-crp 0.6", [python, "-c", conditional], None),
    ], repeats)
    compare("crp resnet50 layer3 RelMax over 32 images of 224, top 9 (8 channels; zennit-crp: all)", [
        ("torchscope", [cli, "crp", *common, "--channels", "top:8", "--references", str(references), "--top", "9",
                        "--out", str(folder / "crp_refs.npz")], None),
        ("zennit-crp 0.6", [python, "-c", relmax], None),
    ], repeats)


if __name__ == "__main__":
    main()
