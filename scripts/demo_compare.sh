#!/usr/bin/env bash
# The compare demo: the bundled Fashion-MNIST model against a copy trained one epoch further on
# inverted, mirrored images (resources/demo/fashion_cnn_further.pt, scripts/train_demo_further.py),
# over the probe demo's 600 test images. Writes the Compare tab (docs/compare.png in docs/compare.md)
# and prints the CLI's tables: the two checkpoints layer by layer, and the model's precision drift.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
data=$build/probe-demo-data
[[ -d $data ]] || "$(bash scripts/python_env.sh)" scripts/make_probe_demo_data.py "$data"
layers=features.0.conv,features.0,features.1.conv,features.1,features.2.conv,features.2,classifier.2
model=resources/demo/fashion_cnn.pt
further=resources/demo/fashion_cnn_further.pt
QT_QPA_PLATFORM=offscreen "$build/app/torchscope" "$model" resources/demo/images --compare-data "$data" \
  --compare-with "$further" --compare-layers "$layers" --screenshot "${SCREENSHOT:-docs/compare.png}"
args=()
for layer in ${layers//,/ }; do args+=(--layer "$layer"); done
"$build/app/torchscope-cli" compare "$model" "$further" --mode checkpoints "${args[@]}" --input "$data" 2>/dev/null
"$build/app/torchscope-cli" compare "$model" "${args[@]}" --input "$data" 2>/dev/null
