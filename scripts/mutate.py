"""Mutation check: applies deliberate small faults to core (scripts/mutations.json) one at a time,
rebuilds, runs the tests meant to catch each, restores the source, and reports what was caught.
Run it through scripts/mutate.sh (not in CI: a rebuild and a test run per mutation).

    mutate.py --list                 one mutation a line: name, file, what the fault is
    mutate.py [NAME ...]             run these (all when none), then print the table
"""
import argparse
import fcntl
import json
import pathlib
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "scripts" / "mutations.json"
TARGETS = ["torchscope_core_tests", "torchscope-cli"]
# The lock scripts take around builds (`flock /tmp/torchscope-build.lock cmake --build ...`): no
# other tree compiles the mutated source.
BUILD_LOCK = "/tmp/torchscope-build.lock"


def load_mutations():
    mutations = json.loads(CATALOGUE.read_text())
    names = [m["name"] for m in mutations]
    duplicated = {n for n in names if names.count(n) > 1}
    if duplicated:
        sys.exit(f"{CATALOGUE}: names used twice: {', '.join(sorted(duplicated))}")
    return mutations


def apply(mutation):
    """The mutated text in place of the original, which is returned for restoring. The text to
    replace must occur exactly once, or the catalogue no longer matches the code."""
    path = ROOT / mutation["file"]
    original = path.read_text()
    count = original.count(mutation["find"])
    if count != 1:
        raise ValueError(f"{mutation['name']}: its text occurs {count} times in {mutation['file']} (must be once)")
    path.write_text(original.replace(mutation["find"], mutation["replace"]))
    return original


def build(build_dir):
    result = subprocess.run(["cmake", "--build", str(build_dir), "--parallel", "2", "--target", *TARGETS],
                            capture_output=True, text=True)
    return result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def run_tests(build_dir, regex):
    """ctest on the fixtures of the build tree; returns (tests run, names of those that failed)."""
    result = subprocess.run(["ctest", "--test-dir", str(build_dir), "-R", regex, "--parallel", "2",
                             "--timeout", "600", "-FS", "torch_fixtures", "-E", "^make_fixtures$"],
                            capture_output=True, text=True)
    out = result.stdout
    failed = [line.split(" - ", 1)[1].split(" (")[0].strip() for line in out.splitlines()
              if " - " in line and line.rstrip().endswith(("(Failed)", "(Timeout)", "(SEGFAULT)", "(Subprocess aborted)",
                                                             "(Not Run)", "(Child aborted)"))]
    ran = 0
    for line in out.splitlines():
        if "tests passed," in line and "out of" in line:
            ran = int(line.rsplit("out of", 1)[1])
    return ran, failed


def check(mutation, build_dir):
    """caught / missed / build-failed / stale, with the failing tests, for one mutation."""
    started = time.monotonic()
    with open(BUILD_LOCK, "w") as lock:  # builds of other trees wait while the source is mutated
        fcntl.flock(lock, fcntl.LOCK_EX)
        return mutated_run(mutation, build_dir, started)


def mutated_run(mutation, build_dir, started):
    try:
        original = apply(mutation)
    except ValueError as e:
        return {"verdict": "stale", "detail": str(e), "seconds": 0.0, "ran": 0}
    path = ROOT / mutation["file"]
    try:
        built, log = build(build_dir)
        if not built:
            return {"verdict": "build failed", "detail": log.strip().splitlines()[-1] if log.strip() else "",
                    "seconds": time.monotonic() - started, "ran": 0}
        ran, failed = run_tests(build_dir, mutation["tests"])
    finally:
        path.write_text(original)
    if ran == 0:
        return {"verdict": "no tests", "detail": f"no test matches {mutation['tests']!r}",
                "seconds": time.monotonic() - started, "ran": 0}
    return {"verdict": "caught" if failed else "missed", "detail": ", ".join(failed[:4]) + (" …" if len(failed) > 4 else ""),
            "seconds": time.monotonic() - started, "ran": ran}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="mutations to run (all when none)")
    parser.add_argument("--list", action="store_true", help="print one mutation a line and stop")
    parser.add_argument("--build-dir", default=str(ROOT / "build-mutate"))
    args = parser.parse_args()

    mutations = load_mutations()
    if args.list:
        for m in mutations:
            print(f"{m['name']:32} {m['file']:40} {m['description']}")
        return 0
    known = {m["name"]: m for m in mutations}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        sys.exit(f"unknown mutation(s): {', '.join(unknown)} (scripts/mutate.sh --list names them)")
    chosen = [known[n] for n in args.names] if args.names else mutations

    def stop(*_):  # a kill restores the source like Ctrl+C does (check() restores in `finally`)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    build_dir = pathlib.Path(args.build_dir)
    built, log = build(build_dir)  # the unmutated tree first: a failure here is not a mutation's
    if not built:
        sys.exit(f"the unmutated build fails:\n{log}")
    rows = []
    for m in chosen:
        print(f"mutation {m['name']} ({m['file']}): {m['description']}", flush=True)
        outcome = check(m, build_dir)
        print(f"  {outcome['verdict']} in {outcome['seconds']:.0f} s; {outcome['ran']} test(s) ran; {outcome['detail']}",
              flush=True)
        rows.append((m, outcome))
    build(build_dir)  # back to the unmutated binaries

    print("\n| mutation | file | fault | tests run | verdict | failing tests |")
    print("|---|---|---|---|---|---|")
    for m, o in rows:
        print(f"| {m['name']} | {m['file']} | {m['description']} | {o['ran']} | {o['verdict']} | {o['detail']} |")
    caught = sum(o["verdict"] == "caught" for _, o in rows)
    print(f"\n{caught} of {len(rows)} mutations caught")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
