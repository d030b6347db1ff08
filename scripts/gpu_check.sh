#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU, builds the headless variant (core, CLI, their
# tests, the engine benchmark) the way scripts/setup.sh does, against the LibTorch of the project's
# Python environment (scripts/python_env.sh; $PYTHON for another python with a CUDA torch), runs
# every test (the CUDA ones must run, not skip) and the engine benchmark on --device cuda, and
# prints the figures. Writes its logs to ${GPU_CHECK_OUT:-build-gpu/check}.
#   scripts/gpu_check.sh
# Needs, besides that environment, CMake and ninja: nlohmann-json, CLI11, libzip, GoogleTest and a
# C++20 compiler (Debian: nlohmann-json3-dev libcli11-dev libzip-dev libgtest-dev libgmock-dev),
# and the CUDA toolkit of the wheel's CUDA version. Missing ones are named first.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-}
if [[ -z $python ]]; then
  venv_python=${TORCHSCOPE_VENV:-$HOME/.cache/torchscope/venv}/bin/python
  if [[ -x $venv_python ]]; then python=$venv_python; else python=$(bash scripts/python_env.sh); fi
fi
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
build=${GPU_BUILD_DIR:-build-gpu}
out=${GPU_CHECK_OUT:-$build/check}

fail() { echo "gpu_check: $*" >&2; exit 1; }

"$python" - <<'PY' || fail "$python needs torch with CUDA and a visible GPU, and torchvision"
import torch, torchvision
assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}), torchvision {torchvision.__version__}, "
      f"GPU: {torch.cuda.get_device_name(0)}")
PY
missing=()
for header in nlohmann/json.hpp CLI/CLI.hpp zip.h gtest/gtest.h; do
  echo "#include <$header>" | ${CXX:-c++} -std=c++20 -x c++ -fsyntax-only - 2>/dev/null || missing+=("$header")
done
((${#missing[@]} == 0)) || fail "missing headers: ${missing[*]} (Debian: nlohmann-json3-dev libcli11-dev libzip-dev libgtest-dev)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

mkdir -p "$out"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTORCHSCOPE_HEADLESS=ON -DTORCHSCOPE_PYTHON="$(command -v "$python")" >"$out/configure.log"
cmake --build "$build" --parallel "$(nproc)" 2>&1 | tail -n 3

# Every test; then the CUDA ones again on their own, which must have run.
(cd "$build" && ctest --output-on-failure --parallel "$(nproc)" --timeout 900) 2>&1 | tee "$out/ctest.log" | tail -n 5
"$build/tests/core/torchscope_core_tests" --gtest_filter='Device.*' 2>&1 | tee "$out/device_tests.log" \
  | grep -E '^\[ +(OK|SKIPPED|FAILED) +\]|max abs diff|values up to'
if grep -q '^\[  SKIPPED \] Device.RunsOnCuda' "$out/device_tests.log"; then
  fail "the CUDA tests skipped although a GPU is here"
fi
! grep -q '^\[  FAILED  \]' "$out/device_tests.log" || fail "the CUDA tests failed (see $out/device_tests.log)"

# The engine benchmark on the GPU: plain forward, grab overhead, truncation ratios (ResNet-50).
"$python" tests/bench/make_bench_model.py resnet50 "$build/bench" >/dev/null
for device in cuda cpu; do
  OMP_WAIT_POLICY=PASSIVE "$build/tests/bench/torchscope-bench-engine" "$build/bench/resnet50_scripted.pt" \
    "$build/bench/resnet50_state_dict.pt" resnet50 "$python" tests/bench/python_worker.py \
    --device "$device" --batch 8 --threads "$(nproc)" --repeats 15 >"$out/bench_$device.json"
done
"$python" - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for device in ("cuda", "cpu"):
    r = json.loads((out / f"bench_{device}.json").read_text())
    print(f"{device}: plain forward {r['plain_forward_seconds'] * 1e3:.2f} ms (ResNet-50, batch {r['batch']}); "
          f"grab 4 blocks / plain = {r['grab_ratio_to_plain']:.3f}")
    for t in r["truncation"]:
        print(f"  truncate at {t['at']}: time {t['time_ratio_to_full']:.3f} of full, FLOP share "
              f"{t['flop_share']:.3f}, ours / Python hooks {t['ours_over_python']:.3f}")
PY

# Precision and device drift of ResNet-50 against float64 on the CPU: CUDA float32, float16 and
# bfloat16 (and the CPU's), the first layer over a relative L2 error of 1e-3 in each.
"$python" -c "import torch; torch.manual_seed(0); torch.save(torch.randn(16, 3, 224, 224), '$build/bench/drift_inputs.pt')"
"$build/app/torchscope-cli" compare "$build/bench/resnet50_scripted.pt" --input "$build/bench/drift_inputs.pt" \
  --layer conv1 --layer 'layer?' --layer 'layer?.?' --layer fc --batch 8 --out "$out/drift.json" 2>/dev/null | tee "$out/drift.txt" \
  | grep -E 'against|first over|no layer over|not run'
echo "gpu_check: all tests passed, the CUDA ones ran; figures in $out"
