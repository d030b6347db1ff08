#!/usr/bin/env bash
# Sets up, builds and opens TorchScope on the bundled demo model and images.
# Without a display it writes a screenshot of the window instead (and says where).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
app=$build/app/torchscope
# A labelled folder for the Probes panel (footwear vs. the rest of Fashion-MNIST).
probes=$build/probe-demo-data
[[ -d $probes ]] || /usr/bin/python3 scripts/make_probe_demo_data.py "$probes"
if [[ -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ]]; then
  exec "$app" --probe-data "$probes" "$@"
fi
shot=${SCREENSHOT:-$PWD/torchscope-demo.png}
echo "No display: running offscreen and writing a screenshot of the window to $shot"
QT_QPA_PLATFORM=offscreen "$app" --probe-data "$probes" --select features.1 --screenshot "$shot" "$@"
