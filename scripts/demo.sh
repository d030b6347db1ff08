#!/usr/bin/env bash
# Sets up, builds and opens TorchScope on the bundled demo: face-api.js's face-expression network
# on public-domain and CC0 face photos, a dense block ticked and Grad-CAM of the predicted
# expression shown. Arguments replace the demo's (a model, images, options).
# Without a display it writes a screenshot of the window instead (and says where).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
app=$build/app/torchscope
args=("$@")
if ((${#args[@]} == 0)); then
  args=(resources/face/face_expression.pt resources/face/photos --select features.dense2 --gradcam features.dense2)
fi
if [[ -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ]]; then
  exec "$app" "${args[@]}"
fi
shot=${SCREENSHOT:-$PWD/torchscope-demo.png}
echo "No display: running offscreen and writing a screenshot of the window to $shot"
QT_QPA_PLATFORM=offscreen "$app" "${args[@]}" --screenshot "$shot"
