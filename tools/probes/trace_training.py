#!/usr/bin/env python3
"""Records what a training workload of bench/python asks of the allocator,
to replay it on the host (tests/resource/expandable/replay_trace.cpp, on the
fake VMM driver): runs the workload twice in one process on libcumem's
expandable cache (as memory_harness.run_child does) with the memory history
on, and writes the caching adaptor's own requests in the replay's format,
one per line:
  a SIZE THREAD     allocate (the k-th "a" is block k) on recorded thread THREAD
  f K THREAD        free block k on thread THREAD
  trim              every cached block given back (the benchmark's baseline)
  run               a training run ends
with "#" lines first: the H200's caching statistics and device memory taken
at the end of each run. THREAD is the OS thread id the history recorded
(PyTorch's backward pass allocates on an autograd thread of its own).
Usage (GPU machine, repository root):
  CUMEM_FRAMEWORK_RESOURCE=expandable CUMEM_LIBRARY=build/libcumem.so.1 \\
  PYTHONPATH=bindings/python:bench/python python3 tools/probes/trace_training.py \\
    mlp OUT.trace.gz [--steps 40]
"""
import argparse
import gc
import gzip
import importlib

import memory_harness

WORKLOADS = {"mlp": ("bench_train_mlp", "Mlp"), "gpt2": ("bench_train_gpt2", "Gpt2"),
             "resnet50": ("bench_train_resnet50", "ResNet50")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=18)
    args = ap.parse_args()
    module, cls = WORKLOADS[args.workload]
    workload = getattr(importlib.import_module(module), cls)

    import cumem
    allocator = memory_harness.Allocator("libcumem-expandable")
    cumem.record_memory_history(True, max_entries=1 << 21)
    memory_harness.warm_up(allocator, workload, args.seed)
    shapes = workload.shapes(args.steps + args.warmup, args.seed)
    notes = []
    run_ends = []  # the top resource's event count at the end of each run
    for run in (1, 2):
        _, end = memory_harness.train(allocator, workload, shapes, args.warmup)
        c = allocator._resource().caching_statistics()
        notes.append(f"# H200 run {run} taken_now {end} taken_peak {allocator.taken()} "
                     f"in_use {allocator.in_use()} " +
                     " ".join(f"{k} {v}" for k, v in sorted(c.items())))
        print(notes[-1], flush=True)
        run_ends.append(len(requests(cumem.memory_snapshot(allocator._resource()))))
    cumem.record_memory_history(False)
    events = requests(cumem.memory_snapshot(allocator._resource()))
    header = [f"# {args.workload}: PyTorch's requests through libcumem's expandable cache, "
              f"tools/probes/trace_training.py --steps {args.steps} --warmup {args.warmup} "
              f"--seed {args.seed}"] + notes
    with gzip.open(args.out, "wt") as f:
        count, skipped = write_trace(f, header, events, run_ends)
    print(f"{count} allocations ({skipped} frees of earlier blocks left out) written to "
          f"{args.out}", flush=True)


def write_trace(f, header, events, run_ends):
    """Writes `events` (allocate, free and trim, oldest first) in the replay's
    format after the `header` lines, with "run" after the events counted in
    `run_ends`. Returns (allocations, frees of blocks allocated before the
    history began, which are left out)."""
    blocks = {}  # address -> block number
    count = skipped = 0
    for line in header:
        f.write(line + "\n")
    for i, e in enumerate(events):
        if e["action"] == "allocate":
            blocks[e["address"]] = count
            f.write(f"a {e['size']} {e['thread']}\n")
            count += 1
        elif e["action"] == "free":
            k = blocks.pop(e["address"], None)
            if k is None:
                skipped += 1
            else:
                f.write(f"f {k} {e['thread']}\n")
        else:
            f.write("trim\n")
        if i + 1 in run_ends:
            f.write("run\n")
    return count, skipped


def requests(snapshot):
    """The top resource's allocate, free and trim events, oldest first."""
    top = snapshot["resources"][0]["id"]
    return [e for e in snapshot["events"] if e.get("resource") == top and
            e["action"] in ("allocate", "free", "trim")]


if __name__ == "__main__":
    main()
