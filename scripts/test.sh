#!/usr/bin/env bash
# Sets up, builds and runs every test (the README's test command; CI runs exactly this).
#   scripts/test.sh [--headless]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
cd "${BUILD_DIR:-build}"
export QT_QPA_PLATFORM=offscreen
ctest --output-on-failure --parallel "$(nproc)" --timeout 900
