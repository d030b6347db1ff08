#!/usr/bin/env bash
# Installs the Debian packages TorchScope needs (once), the Python environment with the pinned
# PyTorch whose LibTorch it links (once, scripts/python_env.sh), and builds it into build/ (or
# $BUILD_DIR).
#   scripts/setup.sh             full build: GUI, CLI, tests, benchmarks
#   scripts/setup.sh --headless  core engine, CLI tensor path and their tests only (no Qt, no OpenCV)
# Extra CMake arguments can go in $CMAKE_ARGS, e.g. CMAKE_ARGS=-DCMAKE_PREFIX_PATH=/opt/libtorch
# for a LibTorch of your own.
set -euo pipefail
cd "$(dirname "$0")/.."

headless=OFF
deps_flags=()
if [[ "${1:-}" == "--headless" ]]; then
  headless=ON
  deps_flags=(--headless)
fi
bash scripts/install-deps.sh "${deps_flags[@]}"
python=$(bash scripts/python_env.sh)

# PyPI's torch is the CUDA 13 build: configuring against it needs the CUDA toolkit (no GPU).
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

build_dir=${BUILD_DIR:-build}
# clang compiles TorchScope's files with LibTorch's precompiled header in about two thirds of GCC's
# time (core's header 32 s against 59 s, a batch of its files 32 s against 55 s), so a new build
# directory uses it when it is installed and $CXX names no other; an existing one keeps its compiler.
compiler_args=()
if [[ ! -f "$build_dir/CMakeCache.txt" && -z "${CXX:-}" ]] && command -v clang++-14 >/dev/null; then
  compiler_args=(-DCMAKE_CXX_COMPILER=clang++-14)
fi
# Line tables only (-g1): backtraces, Qt's stack dump of a test that hangs and perf keep file and line,
# at three quarters of the compile time of full debug information in files that include LibTorch.
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DTORCHSCOPE_HEADLESS=$headless "-DTORCHSCOPE_PYTHON=$python" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "${compiler_args[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)"
