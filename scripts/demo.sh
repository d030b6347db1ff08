#!/usr/bin/env bash
# Sets up, builds and opens TorchScope on the bundled demo model and images.
# Without a display it writes a screenshot of the window instead (and says where).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
app=${BUILD_DIR:-build}/app/torchscope
if [[ -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ]]; then
  exec "$app" "$@"
fi
shot=${SCREENSHOT:-$PWD/torchscope-demo.png}
echo "No display: running offscreen and writing a screenshot of the window to $shot"
QT_QPA_PLATFORM=offscreen "$app" --select features.1 --screenshot "$shot" "$@"
