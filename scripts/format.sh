#!/usr/bin/env bash
# Formats every C++ file of the project with the pinned clang-format (Debian's clang-format-14)
# and the style in .clang-format; --check changes nothing and fails, listing the files, when any
# file differs from its formatted self (CI runs that).
#   scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --format
formatter=clang-format-14
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' ':!:*.inc')
if [[ "${1:-}" == "--check" ]]; then
  unformatted=()
  for f in "${files[@]}"; do
    if ! "$formatter" --style=file "$f" | cmp -s - "$f"; then
      unformatted+=("$f")
    fi
  done
  if ((${#unformatted[@]})); then
    echo "format: ${#unformatted[@]} file(s) differ from $formatter's formatting (run scripts/format.sh):" >&2
    printf '  %s\n' "${unformatted[@]}" >&2
    exit 1
  fi
  echo "format: all ${#files[@]} C++ files are formatted ($formatter)"
else
  "$formatter" --style=file -i "${files[@]}"
fi
