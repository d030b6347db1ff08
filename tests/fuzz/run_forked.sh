#!/usr/bin/env bash
# Runs a libFuzzer target in fork mode with out-of-memory inputs and timeouts passed over
# (-ignore_ooms=1 -ignore_timeouts=1 -ignore_crashes=0), for a target whose code under test is partly
# not ours (fuzz_model_load: LibTorch's readers). libFuzzer still exits with the code of its last
# job, so a run whose last job ran out of memory (71) or time (70) ends with that code although it
# was ignored: those two pass, with the inputs named. A crash or a sanitizer report stops the run
# with its own code (1, 77, 134, ...) and fails.
#   run_forked.sh TARGET ARG...
set -uo pipefail
"$@"
code=$?
if ((code == 70 || code == 71)); then
  echo "run_forked.sh: the last job ended by $( ((code == 70)) && echo a timeout || echo running out of memory)" \
    "(passed over, as every such input: see the oom-/timeout- files beside the target)"
  exit 0
fi
exit "$code"
