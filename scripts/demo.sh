#!/usr/bin/env bash
# Sets up, builds and opens TorchScope on the bundled demo model and images.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
model=resources/demo/fashion_cnn.pt
images=resources/demo/images
cli=${BUILD_DIR:-build}/app/torchscope-cli
echo "== module tree of the demo model (with output shapes from a dry run on the sample images)"
"$cli" inspect "$model" --input "$images"
echo
echo "== predictions for the sample images, grabbing every block's output and the gradient of class 9"
out=$(mktemp --suffix=.pt)
"$cli" run "$model" --input "$images" --grab 'features.*' --grab features.2:grad --target 9 --out "$out"
echo "(recorded tensors are in $out; read them in Python with torch.load)"
