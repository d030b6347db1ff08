#!/usr/bin/env bash
# The feature-visualisation demo: channels of the bundled face-expression network's third dense
# block, optimised from noise, beside the faces (and non-faces) of scikit-image's LFW subset that
# excite them most. Writes docs/visualize.png (the contact sheet in docs/visualize.md), the folder it comes
# from (PNGs, index.html, visualization.json) and docs/channel_page.png (the window's page).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
data=$build/lfw-subset
if [[ ! -d $data ]]; then
  # 200 greyscale 25 x 25 crops: 100 faces from Labeled Faces in the Wild, then 100 non-faces.
  "$(bash scripts/python_env.sh)" - "$data" <<'PY'
import pathlib, sys
import numpy as np
from PIL import Image
import skimage.data
out = pathlib.Path(sys.argv[1])
for kind in ("face", "other"):
    (out / kind).mkdir(parents=True, exist_ok=True)
for i, image in enumerate(skimage.data.lfw_subset()):
    kind = "face" if i < 100 else "other"
    Image.fromarray((image * 255).round().astype(np.uint8)).save(out / kind / f"{kind}_{i:03d}.png")
PY
fi
out=$build/visualize-face
"$build/app/torchscope-cli" visualize resources/face/face_expression.pt --layer features.dense2 \
  --channels "${CHANNELS:-1-6}" --steps "${STEPS:-256}" --data "$data" --top 5 --out "$out"
cp "$out/sheet.png" "${SHEET:-docs/visualize.png}"
# The window's channel page for channel 1, over a recording of the same folder.
QT_QPA_PLATFORM=offscreen "$build/app/torchscope" resources/face/face_expression.pt resources/face/photos \
  --select features.dense2 --record "$data" --channel-page features.dense2:1 --screenshot "${PAGE:-docs/channel_page.png}"
echo "contact sheet: $out/index.html"
