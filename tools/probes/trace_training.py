#!/usr/bin/env python3
"""Records what a training workload of bench/python asks of the allocator,
to replay it on the host (tests/resource/expandable's fake VMM driver):
runs the workload twice in one process on libcumem's expandable cache (as
memory_harness.run_child does) with the memory history on, and writes the
caching adaptor's own allocate and free events, one per line:
  a <size> <stream> <address>      f <address>
plus "# run N ..." lines with the caching statistics and the device memory
taken at the end of each run. Usage (GPU machine, repository root):
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
    torch = allocator.torch
    cumem.record_memory_history(True, max_entries=1 << 21)
    torch.manual_seed(args.seed)
    small_model, small_step = workload.build(torch, small=True)
    for shape in workload.shapes(2, args.seed, smallest=True):
        small_step(shape)
    torch.cuda.synchronize()
    del small_model, small_step
    allocator.start()
    shapes = workload.shapes(args.steps + args.warmup, args.seed)
    notes = []
    for run in (1, 2):
        _, end = memory_harness.train(allocator, workload, shapes, args.warmup)
        c = allocator._resource().caching_statistics()
        notes.append(f"# run {run} taken_now {end} taken_peak {allocator.taken()} "
                     f"in_use {allocator.in_use()} " +
                     " ".join(f"{k} {v}" for k, v in sorted(c.items())))
        print(notes[-1], flush=True)
    gc.collect()
    snap = cumem.memory_snapshot(allocator._resource())
    cumem.record_memory_history(False)
    top = snap["resources"][0]["id"]
    lines = 0
    with gzip.open(args.out, "wt") as f:
        for n in notes:
            f.write(n + "\n")
        f.write(f"# history {snap.get('history')}\n")
        for e in snap["events"]:
            if e.get("resource") != top:
                continue
            if e["action"] == "allocate":
                f.write(f"a {e['size']} {e['stream']} {e['address']}\n")
            elif e["action"] == "free":
                f.write(f"f {e['address']}\n")
            else:
                continue
            lines += 1
    print(f"{lines} events of resource {top} ({snap['resources'][0].get('kind')}) "
          f"written to {args.out}", flush=True)


if __name__ == "__main__":
    main()
