#!/usr/bin/env python3
"""libcumem's own instructions per allocation/free pair, on this host (no
GPU): each of bench/bench_capture's 256-byte pairs runs alone under
callgrind on the fake capturing driver (tests/fake_driver/
fake_capture_driver.cpp), and the pair's entry points' inclusive
instructions per pair are printed, and the same less what the fake's
cuStreamGetCaptureInfo cost in that run (a std::map and a mutex per call:
most of a host profile of this path, and not what the real driver costs).
The measure the framework path's trimming is judged by between GPU runs
(issue 20: the framework pair against the cache's raw pair); the GPU's
nanoseconds come from bench_capture and bench_peers on the GPU machine.

Usage: tools/probes/pair_instructions.py [BUILD] [BENCHMARK...]
  BUILD      a build folder with benchmarks and tests (default build-rel,
             made with: meson setup build-rel --buildtype=release)
  BENCHMARK  bench_capture benchmarks (default: the framework pair and the
             raw pair through native handles, on a foreign stream and on a
             libcumem stream, 256 bytes)
Needs valgrind."""
import collections
import os
import re
import subprocess
import sys
import tempfile

PAIRS = {  # benchmark: its allocation and free entry points
    "torch_pair_on_foreign_stream/256": ("cumem_torch_alloc", "cumem_torch_free"),
    "cumem_cached_pair_native_on_foreign_stream/256": ("cumem_resource_allocate_native",
                                                       "cumem_resource_deallocate_native"),
    "torch_pair_on_stream/256": ("cumem_torch_alloc", "cumem_torch_free"),
    "cumem_cached_pair_native_on_stream/256": ("cumem_resource_allocate_native",
                                               "cumem_resource_deallocate_native"),
    "cumem_cached_pair/256": ("cumem_resource_allocate_raw", "cumem_resource_deallocate_raw"),
}
FAKE_QUESTION = "fake_cuStreamGetCaptureInfo"


def callee_totals(path):
    """Calls and inclusive instructions of every function called, by name."""
    names, calls, inclusive = {}, collections.Counter(), collections.Counter()
    callee = None

    def name_of(text):
        m = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not m:
            return text
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")

    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("fn="):
            name_of(line[3:])
        elif line.startswith("cfn="):
            callee = name_of(line[4:])
        elif line.startswith("calls="):
            calls[callee] += int(line[6:].split()[0])
            i += 1
            inclusive[callee] += int(lines[i].split()[1])
        i += 1
    return calls, inclusive


def entry(calls, inclusive, name):
    """Calls and inclusive instructions of entry point `name`."""
    for k in calls:
        if k and (k == name or k.startswith(name + " ")) and calls[k]:
            return calls[k], inclusive[k]
    return 0, 0


def measure(build, benchmark):
    bench = os.path.join(build, "bench", "bench_capture")
    fake = os.path.join(build, "tests", "fake_driver", "libfake_capture_cuda.so")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = dict(os.environ, CUMEM_LIBCUDA=fake)
        run = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=no",
                              f"--callgrind-out-file={out}", bench,
                              f"--benchmark_filter=^{re.escape(benchmark)}$",
                              "--benchmark_min_time=0.05"],
                             env=env, capture_output=True, text=True)
        if run.returncode != 0 or not os.path.exists(out):
            sys.exit(f"pair_instructions.py: {benchmark} failed:\n" + run.stdout + run.stderr)
        return callee_totals(out)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build-rel"
    benchmarks = sys.argv[2:] or list(PAIRS)
    for path in (os.path.join(build, "bench", "bench_capture"),
                 os.path.join(build, "tests", "fake_driver", "libfake_capture_cuda.so")):
        if not os.path.exists(path):
            sys.exit(f"pair_instructions.py: {path} is missing (build {build} with benchmarks and tests)")
    print(f"{'benchmark (256 B pairs)':48} {'pairs':>7} {'per pair':>9} {'less fake':>10}")
    for benchmark in benchmarks:
        if benchmark not in PAIRS:
            sys.exit(f"pair_instructions.py: no entry points known for {benchmark} (known: {', '.join(PAIRS)})")
        calls, inclusive = measure(build, benchmark)
        alloc, free = PAIRS[benchmark]
        pairs, alloc_total = entry(calls, inclusive, alloc)
        freed, free_total = entry(calls, inclusive, free)
        if pairs == 0 or freed != pairs:
            sys.exit(f"pair_instructions.py: {benchmark}: {pairs} calls of {alloc}, {freed} of {free}")
        fake_total = sum(inclusive[k] for k in calls if k and FAKE_QUESTION in k)
        per_pair = (alloc_total + free_total) / pairs
        print(f"{benchmark:48} {pairs:7d} {per_pair:9.0f} {per_pair - fake_total / pairs:10.0f}")


if __name__ == "__main__":
    main()
