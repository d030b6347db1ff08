#!/usr/bin/env bash
# What CI's time went to, printed at the end of .ci/run (docs/engine_and_tests.md keeps the table).
#   time_report.sh cache-stats              the compiler cache's counters now (one line: hits misses)
#   time_report.sh cache-rate BEFORE AFTER  the hit rate between two such lines
#   time_report.sh slowest N LOG...         the N slowest tests of ctest logs, slowest first
set -euo pipefail
case "$1" in
  cache-stats)
    if command -v ccache >/dev/null; then
      ccache --print-stats 2>/dev/null | awk -F'\t' '
        $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
        $1 == "cache_miss" { misses += $2 }
        END { print hits + 0, misses + 0 }'
    else
      echo "0 0"
    fi
    ;;
  cache-rate)
    read -r h0 m0 <<<"$2"
    read -r h1 m1 <<<"$3"
    hits=$((h1 - h0))
    misses=$((m1 - m0))
    total=$((hits + misses))
    if ((total == 0)); then
      echo "no compile went through the cache"
    else
      echo "$hits of $total compiles from the cache ($((100 * hits / total)) %), $misses compiled"
    fi
    ;;
  slowest)
    n=$2
    shift 2
    # ctest's lines: "  12/411 Test  #37: name ......................   Passed   12.34 sec"
    awk '/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / && $NF == "sec" {
           for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) { name = $(i + 1); break }
           print $(NF - 1), name }' "$@" |
      sort -rn | head -n "$n" | awk '{ printf "  %8.1f s  %s\n", $1, $2 }'
    ;;
  *)
    echo "time_report.sh: unknown command '$1'" >&2
    exit 2
    ;;
esac
