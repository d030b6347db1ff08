#!/usr/bin/env bash
# Installs every Debian package TorchScope needs. Idempotent: asks apt only for what is missing,
# and prints nothing when everything is already there.
#   scripts/install-deps.sh            everything (GUI, tests, fixtures, benchmark)
#   scripts/install-deps.sh --headless only what the core engine, CLI and core tests need
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libtorch-dev nlohmann-json3-dev libzip-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-torchvision python3-numpy python3-pil
  libopenblas0-pthread
  dataset-fashion-mnist
)
if [[ "${1:-}" != "--headless" ]]; then
  packages+=(
    qt6-base-dev libqcustomplot-dev libqcustomplot2.1-qt6
    libopencv-dev
  )
fi

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
