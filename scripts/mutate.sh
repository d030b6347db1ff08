#!/usr/bin/env bash
# Mutation check (not in CI): deliberate small faults in core, one at a time, each rebuilt and run
# against the tests meant to catch it; prints a table of what the suite caught.
#   scripts/mutate.sh --list        one mutation a line
#   scripts/mutate.sh [NAME ...]    run these (all when none)
# Works on a private copy of the committed sources in its own build tree (build-mutate: core tests
# and the CLI) on build/'s fixtures: neither the checkout nor the main build is ever mutated. The
# chosen tests must pass unmutated first. Needs scripts/test.sh to have run once (fixtures).
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
# The mutations are made in a private copy of the committed sources (build-mutate/source, built in
# build-mutate/build): the checkout is never changed, and one with uncommitted changes is refused.
exec python3 scripts/mutate.py --build-dir "${MUTATE_BUILD_DIR:-build-mutate}" --fixtures "$fixtures" \
  --python "$python" "$@"
