#!/usr/bin/env bash
# Mutation check (not in CI): deliberate small faults in core, one at a time, each rebuilt and run
# against the tests meant to catch it; prints a table of what the suite caught.
#   scripts/mutate.sh --list        one mutation a line
#   scripts/mutate.sh [NAME ...]    run these (all when none)
# Works in its own build tree (build-mutate: core tests and the CLI) on build/'s fixtures, so the
# main build is never left mutated. Needs scripts/test.sh to have run once (fixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--list" ]]; then
  exec python3 scripts/mutate.py --list
fi
python=$(bash scripts/python_env.sh)
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH # configuring PyPI's CUDA LibTorch needs the toolkit
fi
fixtures=$PWD/${BUILD_DIR:-build}/fixtures
if [[ ! -f "$fixtures/stamp" ]]; then
  echo "mutate.sh: no fixtures in $fixtures: run scripts/test.sh first" >&2
  exit 1
fi
build_dir=${MUTATE_BUILD_DIR:-build-mutate}
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DTORCHSCOPE_HEADLESS=ON -DTORCHSCOPE_IMAGING=ON \
    -DTORCHSCOPE_BUILD_BENCHMARKS=OFF "-DTORCHSCOPE_FIXTURES_DIR=$fixtures" "-DTORCHSCOPE_PYTHON=$python" >/dev/null
fi
# A mutation is restored even when this script is interrupted: mutate.py writes the original back
# in a finally block; `git diff core/` shows anything left behind.
exec python3 scripts/mutate.py --build-dir "$build_dir" "$@"
