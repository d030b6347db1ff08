"""Mutation check: applies deliberate small faults to core (scripts/mutations.json) one at a time,
rebuilds, runs the tests meant to catch each, restores the source, and reports what was caught.
Run it through scripts/mutate.sh (not in CI: a rebuild and a test run per mutation).

Trustworthy by construction: it refuses a checkout with uncommitted changes to what it builds;
it mutates a private copy of the committed sources (BUILD_DIR/source), never the checkout, so an
interrupted run or a commit made meanwhile cannot pick a fault up; the chosen tests run on the
unmutated build first, and any failure there stops the run (a test that fails anyway catches
nothing); a test that did not run, timed out or crashed the runner is an error, never "caught".

    mutate.py --list                 one mutation a line: name, file, what the fault is
    mutate.py [NAME ...]             run these (all when none), then print the table
"""
import argparse
import fcntl
import json
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

CHECKOUT = pathlib.Path(__file__).resolve().parents[1]
ROOT = CHECKOUT  # where mutations are applied: the private copy, once main() made it
BUILT = ["cmake", "core", "app", "tests", "resources", "scripts", "CMakeLists.txt"]  # what the copy builds from
CATALOGUE = CHECKOUT / "scripts" / "mutations.json"
TARGETS = ["torchscope_core_tests", "torchscope-cli"]
# The lock scripts take around builds (`flock /tmp/torchscope-build.lock cmake --build ...`): no
# other tree compiles the mutated source.
BUILD_LOCK = "/tmp/torchscope-build.lock"


def private_copy(target):
    """The committed files of the checkout, copied to `target` (files that did not change keep their
    time stamps, so the copy's build stays incremental; a changed file is stamped now, not with the
    checkout's time, which can be older than an object the copy built from a mutated version of it
    since, and would leave that object stale). Returns the copy's root."""
    files = subprocess.run(["git", "-C", str(CHECKOUT), "ls-files", "-z", "--", *BUILT], capture_output=True,
                           check=True).stdout.decode().split("\0")
    wanted = set()
    for name in filter(None, files):
        source, copy = CHECKOUT / name, target / name
        wanted.add(copy)
        if not source.is_file():
            continue
        if copy.is_file() and copy.read_bytes() == source.read_bytes():
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, copy)
    for old in target.rglob("*"):  # files the checkout no longer has
        if old.is_file() and old not in wanted:
            old.unlink()
    return target


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

    def named(endings):
        return [line.split(" - ", 1)[1].split(" (")[0].strip() for line in out.splitlines()
                if " - " in line and line.rstrip().endswith(endings)]
    failed = named(("(Failed)", "(SEGFAULT)", "(Child aborted)"))
    # Not an answer: the test never ran, or ran out of time. Never counted as catching a fault.
    errors = named(("(Not Run)", "(Timeout)", "(Subprocess aborted)"))
    ran = 0
    for line in out.splitlines():
        if "tests passed," in line and "out of" in line:
            ran = int(line.rsplit("out of", 1)[1])
    return ran, failed, errors


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
        ran, failed, errors = run_tests(build_dir, mutation["tests"])
    finally:
        path.write_text(original)
    if ran == 0:
        return {"verdict": "no tests", "detail": f"no test matches {mutation['tests']!r}",
                "seconds": time.monotonic() - started, "ran": 0}
    if errors:
        return {"verdict": "error", "detail": "did not run or timed out: " + ", ".join(errors[:4]),
                "seconds": time.monotonic() - started, "ran": ran}
    return {"verdict": "caught" if failed else "missed", "detail": ", ".join(failed[:4]) + (" …" if len(failed) > 4 else ""),
            "seconds": time.monotonic() - started, "ran": ran}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="mutations to run (all when none)")
    parser.add_argument("--list", action="store_true", help="print one mutation a line and stop")
    parser.add_argument("--check", action="store_true",
                        help="check that each mutation's text occurs exactly once in the checkout, and stop")
    parser.add_argument("--build-dir", default=str(CHECKOUT / "build-mutate"),
                        help="holds the private copy (source/) and its build tree (build/)")
    parser.add_argument("--fixtures", help="the fixtures folder the tests read (made by scripts/test.sh)")
    parser.add_argument("--python", help="the Python with torch the build configures against")
    args = parser.parse_args()

    mutations = load_mutations()
    if args.list:
        for m in mutations:
            print(f"{m['name']:32} {m['file']:40} {m['description']}")
        return 0
    if args.check:  # the catalogue against the code as it is now (a test: the code moves under it)
        stale = []
        for m in mutations:
            path = CHECKOUT / m["file"]
            count = path.read_text().count(m["find"]) if path.is_file() else 0
            if count != 1:
                stale.append(f"{m['name']}: its text occurs {count} times in {m['file']} (must be once)")
        if stale:
            sys.exit(f"{CATALOGUE}: {len(stale)} mutation(s) no longer match the code:\n  " + "\n  ".join(stale))
        print(f"mutate: all {len(mutations)} mutations match the code once")
        return 0
    known = {m["name"]: m for m in mutations}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        sys.exit(f"unknown mutation(s): {', '.join(unknown)} (scripts/mutate.sh --list names them)")
    chosen = [known[n] for n in args.names] if args.names else mutations

    def stop(*_):  # a kill restores the source like Ctrl+C does (check() restores in `finally`)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    work = pathlib.Path(args.build_dir)
    build_dir = work / "build"
    dirty = subprocess.run(["git", "-C", str(CHECKOUT), "status", "--porcelain", "--", *BUILT],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        sys.exit("mutate: the checkout has uncommitted changes to what it builds; commit or stash them first "
                 "(the mutations are made in a copy of the committed sources):\n" + dirty)
    global ROOT
    ROOT = private_copy(work / "source")
    if not (build_dir / "CMakeCache.txt").is_file():
        if not args.fixtures or not args.python:
            sys.exit("mutate: a first run needs --fixtures and --python (scripts/mutate.sh passes them)")
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja", "-DTORCHSCOPE_HEADLESS=ON",
                        "-DTORCHSCOPE_IMAGING=ON", "-DTORCHSCOPE_BUILD_BENCHMARKS=OFF", "-DTORCHSCOPE_GTEST_SHARDS=0",
                        f"-DTORCHSCOPE_FIXTURES_DIR={args.fixtures}", f"-DTORCHSCOPE_PYTHON={args.python}"],
                       check=True, stdout=subprocess.DEVNULL)
    built, log = build(build_dir)  # the unmutated tree first: a failure here is not a mutation's
    if not built:
        sys.exit(f"the unmutated build fails:\n{log}")
    # The tests each mutation names, listed by ctest itself (CMake's regexes, which allow only a few
    # groups in one expression), then run once together by their exact names.
    names = set()
    for m in chosen:
        listed = subprocess.run(["ctest", "--test-dir", str(build_dir), "-N", "-R", m["tests"]],
                                capture_output=True, text=True).stdout
        found = [line.split(": ", 1)[1].strip() for line in listed.splitlines() if line.strip().startswith("Test")
                 and ": " in line]
        if not found:
            sys.exit(f"mutate: no test matches {m['name']}'s {m['tests']!r}")
        names.update(found)
    literal = lambda name: re.sub(r"([.+*?\[\]()^$|\\])", r"\\\1", name)  # CMake's regex metacharacters
    regex = "|".join("^" + literal(name) + "$" for name in sorted(names))
    ran, failed, errors = run_tests(build_dir, regex)
    if ran == 0 or failed or errors:
        sys.exit("mutate: the chosen tests do not pass on the unmutated build, so they cannot tell a mutation; "
                 f"{ran} ran, failing: {', '.join(failed + errors) or 'none'}")
    print(f"the unmutated build passes the {ran} chosen test(s)", flush=True)
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
    for verdict in ("missed", "error", "stale", "build failed", "no tests"):
        if any(o["verdict"] == verdict for _, o in rows):
            print(f"{verdict}: " + ", ".join(m["name"] for m, o in rows if o["verdict"] == verdict))
    print(f"\n{caught} of {len(rows)} mutations caught")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
