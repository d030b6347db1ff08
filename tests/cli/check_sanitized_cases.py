"""Fails unless each name the sanitized run selects from a suite (unittest -k NAME, see
tests/cli/CMakeLists.txt) still picks at least one of its tests, and says what the selection leaves to
scripts/test.sh: a renamed test would otherwise leave its path out of the sanitized run unseen.
    check_sanitized_cases.py MODULE NAME...
"""
import fnmatch
import sys
import unittest

from check_test_classes import tests_in


def picks(name, test_id):
    """unittest's -k: fnmatch for a pattern with *, else a substring of the test's full name."""
    return fnmatch.fnmatchcase(test_id, name) if "*" in name else name in test_id


def main():
    module, names = sys.argv[1], sys.argv[2:]
    ids = [test.id() for test in tests_in(unittest.defaultTestLoader.loadTestsFromName(module))]
    unmatched = [n for n in names if not any(picks(n, i) for i in ids)]
    if not names or unmatched:
        print(f"{module}: names that pick no test: {unmatched or 'none given'}")
        return 1
    chosen = [i for i in ids if any(picks(n, i) for n in names)]
    print(f"{module}: the sanitized run takes {len(chosen)} of its {len(ids)} tests; scripts/test.sh alone runs "
          + ", ".join(i.split(".")[-1] for i in ids if i not in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
