#!/usr/bin/env python3
"""After a failed `meson test` under a sanitizer: the failed tests whose only
trouble was the sanitizer runtime crashing in itself, which .ci/run runs
once more.

LeakSanitizer stops every thread with a tracer at exit; once in CI its
tracer crashed ("Tracer caught signal 11", "LeakSanitizer has encountered a
fatal error") after a test program had passed all its tests, and 200 runs
of that program here never showed it again. A crash of the sanitizer is not
a finding about libcumem, but a leak or any other failure is: a failed
test counts as such a crash only when its output says that LeakSanitizer
failed in itself and its gtest summary says every test passed.

Usage: tools/sanitizer_crashes.py BUILD_DIR
Prints the names of those tests, one per line, and exits 0 when every
failed test was such a crash; exits 1 (printing nothing) when any failure
was something else, or when no test failed.
"""
import json
import pathlib
import sys

CRASH = "LeakSanitizer has encountered a fatal error"
PASSED = "[  PASSED  ]"
FAILED = "[  FAILED  ]"


def main() -> int:
    log = pathlib.Path(sys.argv[1]) / "meson-logs" / "testlog.json"
    failed = []
    for line in log.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("result") in ("OK", "SKIP", "EXPECTEDFAIL"):
            continue
        failed.append(r)
    if not failed:
        return 1
    names = []
    for r in failed:
        out = (r.get("stdout") or "") + (r.get("stderr") or "")
        if CRASH not in out or PASSED not in out or FAILED in out:
            return 1
        # "libcumem:host / engines_fabric_imex": meson test takes the name.
        names.append(r["name"].split(" / ")[-1])
    print("\n".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
