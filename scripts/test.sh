#!/usr/bin/env bash
# Sets up, builds and runs every test (the README's test command; CI runs exactly this).
#   scripts/test.sh [--headless]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
cd "${BUILD_DIR:-build}"
export QT_QPA_PLATFORM=offscreen
# ctest runs a test per core, each with OpenMP threads: threads that spin while they wait take the
# other test's core (measured on 2 cores: six of the longest tests in 116 s passive, 142 s default).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
ctest --output-on-failure --parallel "$(nproc)" --timeout 900
