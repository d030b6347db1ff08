#!/usr/bin/env bash
# Installs every Debian package TorchScope needs. Idempotent: asks apt only for what is missing,
# and prints nothing when everything is already there. PyTorch is not among them: it comes from
# PyPI into a virtual environment (scripts/python_env.sh); Debian's own LibTorch and PyTorch packages
# must not be mixed in.
#   scripts/install-deps.sh            everything (GUI, tests, fixtures, benchmark)
#   scripts/install-deps.sh --headless only what the core engine, CLI and core tests need
#   scripts/install-deps.sh --sanitize the headless set (clang among it), OpenCV and libFuzzer (scripts/sanitize.sh)
#   scripts/install-deps.sh --format   only clang-format 14, the project's pinned formatter (scripts/format.sh)
set -euo pipefail

packages=(
  cmake ninja-build g++ clang-14 lld ccache help2man pkg-config
  python3 python3-venv
  libgloo-dev nlohmann-json3-dev libzip-dev libcli11-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
)
case "${1:-}" in
  --format) packages=(clang-format-14) ;;
  --headless) ;;
  --sanitize) packages+=(libopencv-dev libturbojpeg0-dev libfuzzer-14-dev libclang-rt-14-dev) ;;
  *) packages+=(qt6-base-dev libqcustomplot-dev libqcustomplot2.1-qt6 libopencv-dev libturbojpeg0-dev desktop-file-utils) ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
    missing+=("$p")
  fi
done
((${#missing[@]} == 0)) && exit 0

echo "Installing: ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
