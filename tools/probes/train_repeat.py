"""Whether a training's memory keeps growing: one of bench/python's
trainings run N times in one process under one allocator, printing after
each run the device memory taken (GiB above the start) and, for a libcumem
cache, its bytes reserved, pages mapped and recycles (device waits).

  CUMEM_LIBRARY=build/libcumem.so.1 \\
  PYTHONPATH=bindings/python:bench/python \\
  CUMEM_TORCH_EXTENSION=build/bindings/python/torch_extension/_cumem_torch.so \\
    /opt/torch/.venv/bin/python3 tools/probes/train_repeat.py resnet50 \\
      --runs 4 --steps 50 --allocator libcumem-expandable
"""
import argparse
import importlib
import os

import memory_harness

GiB = 1 << 30
WORKLOADS = {"resnet50": ("bench_train_resnet50", "ResNet50"),
             "gpt2": ("bench_train_gpt2", "Gpt2"),
             "mlp": ("bench_train_mlp", "Mlp")}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--allocator", default="libcumem-expandable")
    args = p.parse_args()
    module, cls = WORKLOADS[args.workload]
    workload = getattr(importlib.import_module(module), cls)
    if args.allocator == "pytorch-expandable":  # as memory_harness sets it for its children
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    allocator = memory_harness.Allocator(args.allocator)
    memory_harness.warm_up(allocator, workload, args.seed)
    shapes = workload.shapes(args.steps + args.warmup, args.seed)
    for run in range(1, args.runs + 1):
        steps_per_s, end = memory_harness.train(allocator, workload, shapes, args.warmup)
        line = f"{args.workload} run {run}: {steps_per_s:.1f} steps/s, end {end / GiB:.3f} GiB"
        c = allocator.details().get("caching")
        if c:
            line += (f", cache reserved {c.get('bytes_reserved', 0) / GiB:.3f} GiB"
                     f" (peak {c.get('peak_bytes_reserved', 0) / GiB:.3f}),"
                     f" pages mapped {c.get('pages_mapped')}, unmapped {c.get('pages_unmapped')},"
                     f" recycles {c.get('recycles')} (waits {c.get('recycle_waits')})")
        print(line, flush=True)


if __name__ == "__main__":
    main()
