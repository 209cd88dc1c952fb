"""PyTorch's fragmentation example (its expandable-segments note) under every
PyTorch allocator (memory_harness.py): 8 x 16 MiB live, all freed, then
4 x 32 MiB live: 128 MiB live at most. Prints the device memory each takes
at the peak (cuMemGetInfo after every allocation). Issue 18's goal for the
expandable cache: at most 144 MiB. Usage (GPU machine, repository root):
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_fragmentation.py
"""
import json

import memory_harness

MiB = memory_harness.MiB


def run_child(name):
    allocator = memory_harness.Allocator(name)
    torch = allocator.torch
    torch.empty(1, device="cuda")  # the allocator's own setup
    allocator.start()
    live = []
    for _ in range(8):
        live.append(torch.empty(16 * MiB, dtype=torch.uint8, device="cuda"))
        allocator.sample()
    live.clear()
    for _ in range(4):
        live.append(torch.empty(32 * MiB, dtype=torch.uint8, device="cuda"))
        allocator.sample()
    result = {"allocator": name, "taken": allocator.taken(),
              "peak_in_use": allocator.peak_in_use_since_start()}
    live.clear()
    return result


def main():
    args = memory_harness.parse("PyTorch's fragmentation example", default_steps=0)
    if args.child:
        print(json.dumps(run_child(args.child)))
        return
    rows = memory_harness.run_all(__file__, args)
    print("| allocator | taken (MiB) | peak in use (MiB) | taken / 128 MiB live |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['allocator']} | {r['taken'] / MiB:.0f} | {r['peak_in_use'] / MiB:.0f} | "
              f"{r['taken'] / (128 * MiB):.3f} |")


if __name__ == "__main__":
    main()
