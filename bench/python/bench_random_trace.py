"""An RMM-shaped random trace (RMM's random_allocations: sizes log-uniform
from 256 B to 8 MiB, at most 4096 live, allocate or free with equal odds)
replayed with torch.empty under every PyTorch allocator
(memory_harness.py), PyTorch's expandable segments included (bench_peers
replays the same shape in C++ against PyTorch's default allocator only).
Prints the device memory each takes at the peak (cuMemGetInfo after every
allocation, over two replays: the second finds the caches filled) against
the trace's peak in use, and the time of a replay. Usage (GPU machine,
repository root):
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_random_trace.py [--steps 100000]
(--steps: operations in the trace.)
"""
import json
import math
import random
import time

import memory_harness

MiB = memory_harness.MiB


def trace(operations, seed, max_live=4096, lo=256, hi=8 * MiB):
    """[(slot, size)]: size > 0 allocates into slot, 0 frees it; and the peak in use."""
    rng = random.Random(seed)
    ops, live, free_slots = [], [], []
    slots = in_use = peak = 0
    for _ in range(operations):
        if not live or (len(live) < max_live and rng.random() < 0.5):
            slot = free_slots.pop() if free_slots else slots
            slots = max(slots, slot + 1)
            size = int(math.exp(rng.uniform(math.log(lo), math.log(hi))))
            live.append((slot, size))
            ops.append((slot, size))
            in_use += size
            peak = max(peak, in_use)
        else:
            k = rng.randrange(len(live))
            slot, size = live[k]
            live[k] = live[-1]
            live.pop()
            ops.append((slot, 0))
            in_use -= size
            free_slots.append(slot)
    ops += [(slot, 0) for slot, _ in live]
    return ops, slots, peak


def run_child(name, operations, seed):
    allocator = memory_harness.Allocator(name)
    torch = allocator.torch
    torch.empty(1, device="cuda")
    ops, slots, peak = trace(operations, seed)
    allocator.start()
    seconds = []
    for _ in range(2):
        tensors = [None] * slots
        t0 = time.perf_counter()
        for slot, size in ops:
            if size:
                tensors[slot] = torch.empty(size, dtype=torch.uint8, device="cuda")
                allocator.sample()
            else:
                tensors[slot] = None
        torch.cuda.synchronize()
        seconds.append(time.perf_counter() - t0)
    return {"allocator": name, "taken": allocator.taken(), "trace_peak": peak,
            "peak_in_use": allocator.peak_in_use_since_start(), "second_replay_s": seconds[1]}


def main():
    args = memory_harness.parse("an RMM-shaped random trace", default_steps=100000)
    if args.child:
        print(json.dumps(run_child(args.child, args.steps, args.seed)))
        return
    rows = memory_harness.run_all(__file__, args)
    torch_taken = next((r["taken"] for r in rows if r["allocator"] == "pytorch"), 0)
    print("| allocator | taken (MiB) | trace's peak in use (MiB) | taken / peak in use "
          "| taken / PyTorch's | replay (s, with sampling) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        vs = r["taken"] / torch_taken if torch_taken else float("nan")
        print(f"| {r['allocator']} | {r['taken'] / MiB:.0f} | {r['trace_peak'] / MiB:.0f} | "
              f"{r['taken'] / r['trace_peak']:.3f} | {vs:.3f} | {r['second_replay_s']:.2f} |")


if __name__ == "__main__":
    main()
