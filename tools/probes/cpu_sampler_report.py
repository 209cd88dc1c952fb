#!/usr/bin/env python3
"""Reads what tools/probes/cpu_sampler.c wrote and prints the functions that
took the most CPU time: by self samples (the innermost frame) and by total
samples (anywhere on the stack, once per sample), each as a share of all
samples. Addresses in modules named with --resolve (substrings of their
paths; default libcumem and _cumem_torch) are named by addr2line (inlined
code by the function it was inlined into); the others by the nearest
exported symbol dladdr found.
Usage: cpu_sampler_report.py FILE [--top N] [--resolve SUBSTR ...] [--below NAME]
--below NAME: only the samples whose stack holds a function whose name
contains NAME (the shares stay shares of all samples)."""
import argparse
import collections
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--resolve", nargs="*", default=["libcumem", "_cumem_torch"])
    ap.add_argument("--below")
    a = ap.parse_args()
    where = {}
    stacks = []
    samples = 0
    with open(a.file) as f:
        for line in f:
            if line.startswith("# samples"):
                samples = int(line.split()[2])
            elif line.startswith("A "):
                _, pc, module, offset, symbol = line.rstrip("\n").split(" ", 4)
                where[pc] = (module, int(offset, 16), symbol)
            elif line.startswith("S"):
                stacks.append(line.split()[1:])
    by_module = collections.defaultdict(set)
    for module, offset, _ in where.values():
        if any(s in module for s in a.resolve):
            by_module[module].add(offset)
    resolved = {}
    for module, offsets in by_module.items():
        offsets = sorted(offsets)
        # A return address points after its call: one byte back is the call.
        out = subprocess.run(["addr2line", "-f", "-C", "-e", module] +
                             [hex(max(o - 1, 0)) for o in offsets],
                             capture_output=True, text=True).stdout.splitlines()
        for i, o in enumerate(offsets):
            if 2 * i < len(out) and out[2 * i] != "??":
                resolved[(module, o)] = out[2 * i]
    names = {}
    for pc, (module, offset, symbol) in where.items():
        short = module.rsplit("/", 1)[-1]
        names[pc] = f"{short}: {resolved.get((module, offset)) or symbol}"
    self_by = collections.Counter()
    total_by = collections.Counter()
    for stack in stacks:
        keys = [names.get(pc, pc) for pc in stack]
        if a.below and not any(a.below in k for k in keys):
            continue
        if keys:
            self_by[keys[0]] += 1
        for k in set(keys):
            total_by[k] += 1
    print(f"{samples} samples" + (f", those below {a.below}" if a.below else ""))
    for title, counter in (("self", self_by), ("total", total_by)):
        print(f"-- by {title}")
        for key, n in counter.most_common(a.top):
            print(f"{100.0 * n / max(samples, 1):6.2f}%  {key[:160]}")


if __name__ == "__main__":
    main()
