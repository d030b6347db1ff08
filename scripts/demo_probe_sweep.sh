#!/usr/bin/env bash
# The probe demo: footwear vs. the rest of Fashion-MNIST (600 test images), one linear probe per
# layer of the bundled model, trained in the window offscreen. Writes the accuracy-by-layer plot
# (docs/probe_sweep.png in docs/probes_gradcam_patching.md) and the Probes tab (docs/probes.png), and prints the CLI's sweep of the same.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
data=$build/probe-demo-data
[[ -d $data ]] || "$(bash scripts/python_env.sh)" scripts/make_probe_demo_data.py "$data"
layers=features.0.conv,features.0,features.1.conv,features.1,features.2.conv,features.2,pool,classifier.2
model=resources/demo/fashion_cnn.pt
QT_QPA_PLATFORM=offscreen "$build/app/torchscope" "$model" resources/demo/images --probe-data "$data" --sweep "$layers" \
  --sweep-plot "${PLOT:-docs/probe_sweep.png}" --screenshot "${SCREENSHOT:-docs/probes.png}"
args=()
for layer in ${layers//,/ }; do args+=(--layer "$layer"); done
"$build/app/torchscope-cli" probe sweep "$model" "${args[@]}" --data "$data"
