"""What the build and its Python environment must have for every test to mean something: the peers
the tests use as oracles, torchrun, c10d's Gloo in the build and the bfloat16 drift fixture.

Under CI=true anything missing fails (a lost feature must not pass unseen as skipped tests); on
a developer's machine it is reported and the test is skipped (exit code 77).
    check_capabilities.py FIXTURES_DIR DISTRIBUTED(ON|OFF)
"""
import importlib.util
import pathlib
import shutil
import sys

# Import name and the requirements.txt name of each Python package the tests read with.
PACKAGES = {"torch": "torch", "torchvision": "torchvision", "numpy": "numpy", "PIL": "pillow",
            "safetensors": "safetensors", "captum": "captum", "pytorch_grad_cam": "grad-cam",
            "torchcam": "torchcam", "quantus": "quantus", "timm": "timm", "skimage": "scikit-image"}


def missing_capabilities(fixtures, distributed):
    missing = [f"the Python package {name} (scripts/requirements.txt)"
               for module, name in PACKAGES.items() if importlib.util.find_spec(module) is None]
    torchrun = pathlib.Path(sys.executable).with_name("torchrun")
    if not torchrun.exists() and shutil.which("torchrun") is None:
        missing.append(f"torchrun (looked beside {sys.executable} and on PATH)")
    if distributed not in ("ON", "TRUE", "1"):
        missing.append("c10d's Gloo in the build (TORCHSCOPE_DISTRIBUTED is OFF: no jobs of several processes)")
    if importlib.util.find_spec("torch") is not None:
        import torch
        drift = fixtures / "compare_expected.pt"
        if not drift.exists():
            missing.append(f"the compare fixtures ({drift} does not exist)")
        elif "drift/bfloat16/classifier.2/relative_l2" not in torch.load(drift):
            missing.append(f"the bfloat16 precision drift in {drift}")
    return missing


def main():
    import os
    fixtures, distributed = pathlib.Path(sys.argv[1]), sys.argv[2].upper()
    missing = missing_capabilities(fixtures, distributed)
    for what in missing:
        print("missing:", what)
    if not missing:
        print(f"every capability is present: {len(PACKAGES)} Python packages, torchrun, Gloo, the bfloat16 fixture")
        return 0
    if os.environ.get("CI") == "true":
        print("CI=true: a missing capability fails the run")
        return 1
    return 77


if __name__ == "__main__":
    sys.exit(main())
