"""Zennit 0.5.1 first on the path, before anything imports Zennit: the LRP tests' oracle.

The environment's own Zennit is 0.4.6, which zennit-crp pins; scripts/python_env.sh installs 0.5.1
beside it (its --target directory). 0.5 is the current release: its γ-rule is the generalised one
(Andéol et al. 2021) that TorchScope's gamma follows, and LXT's Zennit patches need its ParamMod."""

import pathlib
import sys

DIRECTORY = pathlib.Path(sys.prefix) / "oracles" / "zennit-0.5.1"
if not (DIRECTORY / "zennit").is_dir():
    raise RuntimeError(f"Zennit 0.5.1 is not at {DIRECTORY}: run scripts/python_env.sh")
sys.path.insert(0, str(DIRECTORY))

import zennit  # noqa: E402

if not pathlib.Path(zennit.__file__).is_relative_to(DIRECTORY):
    raise RuntimeError(f"Zennit was imported from {zennit.__file__} before {DIRECTORY} was put first")
