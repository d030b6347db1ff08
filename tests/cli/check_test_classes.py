"""Fails unless the classes CMake registered as ctest entries of a test file (one entry per class,
found in the file when CMake configures) are exactly the classes unittest finds tests in: so no
class can be left out of ctest unseen, nor one be registered that runs nothing.
    check_test_classes.py MODULE CLASS...
"""
import sys
import unittest


def tests_in(suite):
    """Every test case of a unittest suite, through its nested suites."""
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from tests_in(test)
        else:
            yield test


def main():
    module, registered = sys.argv[1], sys.argv[2:]
    found = {type(test).__name__ for test in tests_in(unittest.defaultTestLoader.loadTestsFromName(module))}
    problems = []
    if len(set(registered)) != len(registered):
        problems.append(f"registered more than once: {sorted({c for c in registered if registered.count(c) > 1})}")
    if found - set(registered):
        problems.append(f"classes with tests that ctest does not run: {sorted(found - set(registered))} "
                        "(configure again; a class must start a line as 'class Name(')")
    if set(registered) - found:
        problems.append(f"registered, but no tests found in them: {sorted(set(registered) - found)}")
    for problem in problems:
        print(f"{module}: {problem}")
    if problems:
        return 1
    print(f"{module}: ctest runs each of its {len(found)} test classes as an entry of its own: {', '.join(sorted(found))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
