#!/usr/bin/env python3
"""The `fuzz` run target (-Dfuzzing=enabled, a clang build): each libFuzzer
target for SECONDS, on a copy of its seed corpus (libFuzzer adds what it
finds to the folder it is given; the committed seeds stay as they are),
with crashing inputs left in BUILD/artifacts-NAME/. Prints the executions
of each; exits 1 on a crash, a sanitizer report, or a run that did not
finish.

Usage: run_fuzzers.py BUILD SECONDS NAME EXE CORPUS [NAME EXE CORPUS ...]
"""
import pathlib
import re
import shutil
import subprocess
import sys

REPORTS = re.compile(r"^==\d+==ERROR|runtime error:|deadly signal", re.M)


def fuzz(build, seconds, name, exe, corpus):
    work = build / f"corpus-{name}"
    artifacts = build / f"artifacts-{name}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(artifacts, ignore_errors=True)
    shutil.copytree(corpus, work)
    artifacts.mkdir(parents=True)
    log = build / f"{name}.log"
    with open(log, "w") as out:
        status = subprocess.call([exe, f"-max_total_time={seconds}",
                                  f"-artifact_prefix={artifacts}/", str(work)],
                                 stdout=out, stderr=subprocess.STDOUT)
    text = log.read_text(errors="replace")
    runs = re.search(r"^Done (\d+) runs", text, re.M)
    if status != 0 or not runs or REPORTS.search(text):
        print("\n".join(text.splitlines()[-60:]), file=sys.stderr)
        print(f"fuzz {name}: FAILED (exit status {status}); see {log} and {artifacts}/",
              file=sys.stderr)
        return False
    print(f"fuzz {name}: {runs.group(1)} executions in {seconds} s, "
          f"no crash or sanitizer report (log: {log})")
    return True


def main():
    build = pathlib.Path(sys.argv[1])
    seconds = int(sys.argv[2])
    rest = sys.argv[3:]
    if seconds < 1 or not rest or len(rest) % 3 != 0:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for i in range(0, len(rest), 3):
        ok = fuzz(build, seconds, rest[i], rest[i + 1], rest[i + 2]) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
