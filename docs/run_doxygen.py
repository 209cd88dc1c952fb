#!/usr/bin/env python3
"""Runs doxygen on the generated Doxyfile, prints its warnings with a count,
and fails when doxygen fails, reports an error, or warns about anything but
an undocumented public name: a comment doxygen misreads (an unknown HTML
tag, a broken command or reference) is an error of the header's docs.
Undocumented names are shown and counted, not fatal.

Usage: run_doxygen.py DOXYGEN DOXYFILE WARNINGS_LOG"""
import subprocess
import sys


def main():
    doxygen, doxyfile, log = sys.argv[1:4]
    result = subprocess.run([doxygen, doxyfile], capture_output=True, text=True)
    sys.stderr.write(result.stdout + result.stderr)
    sys.stderr.flush()
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
    except FileNotFoundError:
        lines = []
    for line in lines:
        print(line, file=sys.stderr)
    undocumented = [l for l in lines if "is not documented" in l]
    errors = [l for l in lines if "is not documented" not in l]
    print(f"doxygen: {len(undocumented)} undocumented public names (warnings), "
          f"{len(errors)} errors; log: {log}", file=sys.stderr)
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    if result.returncode != 0:
        print(f"doxygen failed (exit status {result.returncode})", file=sys.stderr)
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
