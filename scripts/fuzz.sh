#!/usr/bin/env bash
# A long fuzzing run of one target of the sanitized build (scripts/sanitize.sh builds it):
#   scripts/fuzz.sh NAME [SECONDS] [JOBS]
# NAME: fuzz_image_decode, fuzz_session_file, fuzz_model_setup, fuzz_specs, fuzz_file_diagnosis.
# New inputs collect in build-sanitize/tests/fuzz/NAME_corpus; a crash is written next to it as
# NAME-crash-* and replayed with: build-sanitize/tests/fuzz/NAME FILE
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/fuzz.sh NAME [SECONDS] [JOBS]}
seconds=${2:-3600}
jobs=${3:-1}
dir=${SANITIZE_BUILD_DIR:-build-sanitize}/tests/fuzz
[[ -x "$dir/$name" ]] || { echo "no $dir/$name: run scripts/sanitize.sh first" >&2; exit 2; }
mkdir -p "$dir/${name}_corpus"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
exec "$dir/$name" "$dir/${name}_corpus" "tests/fuzz/corpus/$name" -max_total_time="$seconds" \
  -jobs="$jobs" -workers="$jobs" -rss_limit_mb=4096 -timeout=20 -artifact_prefix="$dir/$name-" -print_final_stats=1
