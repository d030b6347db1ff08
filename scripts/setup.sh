#!/usr/bin/env bash
# Installs the Debian packages TorchScope needs (once) and builds it into build/ (or $BUILD_DIR).
#   scripts/setup.sh             full build: GUI, CLI, tests, benchmarks
#   scripts/setup.sh --headless  core engine, CLI tensor path and their tests only (no Qt, no OpenCV)
# Extra CMake arguments can go in $CMAKE_ARGS, e.g. CMAKE_ARGS=-DCMAKE_PREFIX_PATH=/opt/libtorch.
set -euo pipefail
cd "$(dirname "$0")/.."

headless=OFF
deps_flags=()
if [[ "${1:-}" == "--headless" ]]; then
  headless=ON
  deps_flags=(--headless)
fi
bash scripts/install-deps.sh "${deps_flags[@]}"

build_dir=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DTORCHSCOPE_HEADLESS=$headless ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)"
