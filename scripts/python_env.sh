#!/usr/bin/env bash
# Makes (once) the Python environment whose PyTorch TorchScope builds on: a virtual environment
# outside the clone, at $TORCHSCOPE_VENV (default ~/.cache/torchscope/venv), holding the pinned
# torch + torchvision of scripts/requirements.txt and the peer libraries the tests compare with.
# CMake links that torch's LibTorch; its python makes the fixtures and eager references.
# Reused as it is while requirements.txt is unchanged; prints the environment's python last.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${TORCHSCOPE_VENV:-$HOME/.cache/torchscope/venv}
requirements=$PWD/scripts/requirements.txt
nodeps=$PWD/scripts/requirements-nodeps.txt
# LXT's Zennit patches need Zennit 0.5 (ParamMod); zennit-crp pins Zennit <= 0.4.6, which the
# environment keeps: 0.5.1 sits beside it, for the tests that put it first on their path.
zennit05=$venv/oracles/zennit-0.5.1
stamp=$venv/.torchscope-requirements
wanted=$(cat "$requirements" "$nodeps" "$0" | sha256sum | cut -d' ' -f1)

if [[ ! -f $stamp || $(cat "$stamp") != "$wanted" ]]; then
  # Debian's python3 (with python3-venv): the same interpreter on every machine of the project.
  base_python=${TORCHSCOPE_BASE_PYTHON:-/usr/bin/python3}
  [[ -x $venv/bin/python ]] || {
    echo "python_env: making the virtual environment $venv from $base_python" >&2
    "$base_python" -m venv "$venv"
  }
  progress=(--progress-bar on)
  [[ -t 2 ]] || progress=(--progress-bar off)
  echo "python_env: installing scripts/requirements.txt into $venv" >&2
  echo "python_env: torch with its CUDA 13 libraries is a download of about 4 GB the first time" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check "${progress[@]}" -r "$requirements" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check "${progress[@]}" --no-deps -r "$nodeps" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check "${progress[@]}" --no-deps --upgrade \
    --target "$zennit05" zennit==0.5.1 >&2
  echo "$wanted" > "$stamp"
fi
echo "$venv/bin/python"
