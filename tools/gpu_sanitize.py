#!/usr/bin/env python3
"""Runs every test of the gpu suite under compute-sanitizer, in parallel.

Usage: tools/gpu_sanitize.py BUILD_DIR TOOL [LOG_DIR] [--skip NAME ... | --only NAME ...]
TOOL is memcheck or racecheck. Prints one line per test: its name, the
sanitizer's ERROR SUMMARY, and the distinct error kinds it reported, so that
expected driver errors (out-of-memory tests) can be told from real ones.
Exits non-zero if a test program itself failed under the sanitizer.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys


def main() -> int:
    build, tool = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    log_dir = rest.pop(0) if rest and not rest[0].startswith("--") else None
    skip = set(rest[rest.index("--skip") + 1:]) if "--skip" in rest else set()
    only = set(rest[rest.index("--only") + 1:]) if "--only" in rest else None
    tests = json.loads(subprocess.check_output(["meson", "introspect", "--tests", build]))
    gpu = [t for t in tests if "gpu" in t["suite"][0] and t["name"] not in skip
           and not t["name"].startswith("example") and (only is None or t["name"] in only)]
    args = ["compute-sanitizer", "--tool", tool, "--print-limit", "50"]
    if tool == "memcheck":
        args += ["--leak-check", "full"]

    def run(t):
        env = dict(os.environ)
        env.update(t.get("env") or {})
        cmd = args + t["cmd"]
        p = subprocess.run(cmd, env=env, cwd=t.get("workdir") or build,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=900)
        out = p.stdout
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
            with open(os.path.join(log_dir, t["name"] + ".log"), "w") as f:
                f.write(out)
        summary = re.findall(r"(?:ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard)", out)
        summary = ["".join(m) for m in summary]
        kinds = sorted(set(re.findall(r"========= (Program hit [A-Z_]+|Invalid __\w+__ \w+ of size \d+"
                                      r"|Leaked \d+ bytes|[A-Z][a-z]+ [a-z]+ error)", out)))
        gtest = re.findall(r"\[  (PASSED|FAILED)  \] (\d+) test", out)
        return t["name"], p.returncode, summary[-1] if summary else "?", kinds, gtest

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        for name, rc, errors, kinds, gtest in pool.map(run, gpu):
            print(f"{tool} {name}: rc={rc} errors={errors} gtest={gtest} kinds={kinds}")
            failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
