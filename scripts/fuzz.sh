#!/usr/bin/env bash
# Fuzzing runs of the sanitized build's libFuzzer targets (scripts/sanitize.sh builds them):
#   scripts/fuzz.sh NAME [SECONDS] [JOBS]          a long run (an hour by default) of one target
#   scripts/fuzz.sh --merge NAME [SECONDS] [JOBS]  a run (5 minutes by default), then what it found that
#                                                  adds coverage goes into the committed corpus
#   scripts/fuzz.sh --merge all [SECONDS] [JOBS]   the same for every target, one after another
# NAME: fuzz_image_decode, fuzz_session_file, fuzz_model_setup, fuzz_specs, fuzz_file_diagnosis,
# fuzz_model_load. Runs read the committed corpus (tests/fuzz/corpus/NAME: seeds of make_seeds.py and
# what earlier merges kept) and collect new inputs in build-sanitize/tests/fuzz/NAME_corpus. A crash
# is written next to it as NAME-crash-* and replayed with: build-sanitize/tests/fuzz/NAME FILE
# --merge adds to tests/fuzz/corpus/NAME only the inputs that reach code (edges, not hit counts:
# -use_counters=0, to keep it small) the corpus does not reach yet, the smallest first (libFuzzer's
# -merge=1), named by their SHA-1; commit them. The fuzz tests of ctest then start from there.
set -euo pipefail
cd "$(dirname "$0")/.."
merge=0
if [[ ${1:-} == --merge ]]; then
  merge=1
  shift
fi
usage="usage: scripts/fuzz.sh [--merge] NAME|all [SECONDS] [JOBS]"
name=${1:?$usage}
seconds=${2:-$((merge ? 300 : 3600))}
jobs=${3:-1}
dir=${SANITIZE_BUILD_DIR:-build-sanitize}/tests/fuzz
if [[ $name == all ]]; then
  ((merge)) || { echo "$usage: 'all' only with --merge" >&2; exit 2; }
  for target in "$dir"/fuzz_*; do
    [[ -x $target && ! -d $target && $(basename "$target") != *-* ]] || continue
    bash "$0" --merge "$(basename "$target")" "$seconds" "$jobs"
  done
  exit 0
fi
[[ -x "$dir/$name" ]] || { echo "no $dir/$name: run scripts/sanitize.sh first" >&2; exit 2; }
corpus=tests/fuzz/corpus/$name
found=$dir/${name}_corpus
mkdir -p "$found" "$corpus"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/.ci/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export QT_QPA_PLATFORM=offscreen
fuzz_options=(-rss_limit_mb=4096 -timeout=20 "-artifact_prefix=$dir/$name-" -print_final_stats=1)
runner=()
if [[ $name == fuzz_model_load ]]; then
  # LibTorch's loader runs inside: its out-of-memory and slow inputs are written and passed over
  # (fork mode; see tests/fuzz/CMakeLists.txt); crashes and sanitizer reports stop the run.
  fuzz_options+=(-fork="$jobs" -ignore_ooms=1 -ignore_timeouts=1 -ignore_crashes=0)
  runner=(bash tests/fuzz/run_forked.sh)
elif ((jobs > 1)); then
  fuzz_options+=(-jobs="$jobs" -workers="$jobs")
fi
if ((!merge)); then
  exec "${runner[@]}" "$dir/$name" "$found" "$corpus" -max_total_time="$seconds" "${fuzz_options[@]}"
fi

summary() { find "$corpus" -type f -printf '%s\n' | awk '{n++; b += $1} END {printf "%d files, %d bytes", n, b}'; }
before=$(summary)
"${runner[@]}" "$dir/$name" "$found" "$corpus" -max_total_time="$seconds" "${fuzz_options[@]}"
log=$dir/$name-merge.log
if ! "$dir/$name" -merge=1 -use_counters=0 "$corpus" "$found" -rss_limit_mb=4096 -timeout=20 "-artifact_prefix=$dir/$name-" \
  >"$log" 2>&1; then
  tail -30 "$log" >&2
  echo "fuzz.sh: the merge into $corpus failed (log: $log)" >&2
  exit 1
fi
grep -E '^MERGE-OUTER: [0-9]+ new files' "$log" || true
echo "fuzz.sh: $corpus: $before before, $(summary) after $seconds s"
