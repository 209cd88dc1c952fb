#!/usr/bin/env python3
"""Runs every test of the gpu suite under compute-sanitizer, in parallel.

Usage: tools/gpu_sanitize.py BUILD_DIR TOOL [LOG_DIR] [--shards N]
                             [--skip NAME ... | --only NAME ...]
TOOL is memcheck or racecheck. --shards N splits each test program's
GoogleTest cases into N processes run side by side (GTEST_TOTAL_SHARDS /
GTEST_SHARD_INDEX), for programs too slow under the sanitizer in one. Prints one line per test: its name, the
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
    shards = 1
    if rest and rest[0] == "--shards":
        shards = int(rest[1])
        rest = rest[2:]
    skip = set(rest[rest.index("--skip") + 1:]) if "--skip" in rest else set()
    only = set(rest[rest.index("--only") + 1:]) if "--only" in rest else None
    tests = json.loads(subprocess.check_output(["meson", "introspect", "--tests", build]))
    gpu = [t for t in tests if "gpu" in t["suite"][0] and t["name"] not in skip
           and not t["name"].startswith("example") and (only is None or t["name"] in only)]
    args = ["compute-sanitizer", "--tool", tool, "--print-limit", "50"]
    if tool == "memcheck":
        args += ["--leak-check", "full"]

    jobs = [(t, i) for t in gpu for i in range(shards)]

    def run(job):
        t, shard = job
        env = dict(os.environ)
        env.update(t.get("env") or {})
        name = t["name"]
        if shards > 1:
            env.update(GTEST_TOTAL_SHARDS=str(shards), GTEST_SHARD_INDEX=str(shard))
            name += f".shard{shard}"
        cmd = args + t["cmd"]
        try:
            p = subprocess.run(cmd, env=env, cwd=t.get("workdir") or build,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=float(os.environ.get("SANITIZE_TIMEOUT", "900")))
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc = "timeout"
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
            with open(os.path.join(log_dir, name + ".log"), "w") as f:
                f.write(out)
        summary = re.findall(r"(?:ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard)", out)
        summary = ["".join(m) for m in summary]
        kinds = sorted(set(re.findall(r"========= (Program hit [A-Z_]+|Invalid __\w+__ \w+ of size \d+"
                                      r"|Leaked \d+ bytes|[A-Z][a-z]+ [a-z]+ error)", out)))
        gtest = re.findall(r"\[  (PASSED|FAILED)  \] (\d+) test", out)
        return name, rc, summary[-1] if summary else "?", kinds, gtest

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=6 * shards) as pool:
        for done in concurrent.futures.as_completed([pool.submit(run, j) for j in jobs]):
            name, rc, errors, kinds, gtest = done.result()
            print(f"{tool} {name}: rc={rc} errors={errors} gtest={gtest} kinds={kinds}", flush=True)
            failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
