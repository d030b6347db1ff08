#!/usr/bin/env bash
# Sets up, builds and runs every test (the README's test command; CI runs exactly this).
#   scripts/test.sh [--headless]
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/setup.sh "$@"
echo "test.sh: set-up and build took $((SECONDS - start)) s"
cd "${BUILD_DIR:-build}"
export QT_QPA_PLATFORM=offscreen
# ctest runs a test per core, each with OpenMP threads: threads that spin while they wait take the
# other test's core (measured on 2 cores: six of the longest tests in 116 s passive, 142 s default).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
start=$SECONDS
status=0
ctest --output-on-failure --parallel "$(nproc)" --timeout 900 || status=$?
echo "test.sh: ctest took $((SECONDS - start)) s"
exit $status
