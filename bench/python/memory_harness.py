"""What the issue-18 memory benchmarks share: the allocators PyTorch runs on,
one process per allocator, and one way to measure what each takes from the
GPU against what it hands out.

Allocators (PyTorch chooses its allocator before its first CUDA use, so each
runs in a process of its own):
  pytorch               PyTorch's caching allocator
  pytorch-expandable    the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  libcumem-device       libcumem's device resource (the driver's pool) through
                        CUDAPluggableAllocator (CUMEM_FRAMEWORK_RESOURCE=device)
  libcumem-caching      libcumem's caching adaptor over it (=caching)
  libcumem-expandable   the caching adaptor with expandable segments (=expandable)
  libcumem-expandable-<N>MiB   the same with pages of N MiB (made with
                        cumem.Resource.caching(..., expandable=True, page_size=N MiB))

Measures, the same for every allocator:
  taken        device memory taken at the peak: cuMemGetInfo's free memory at
               the baseline minus its lowest value, read in a forward hook of
               every module, a hook on every gradient and after every step
               (allocations happen on the host, so the reading is exact at
               those points whatever the GPU is doing);
  peak in use  the peak of the bytes PyTorch asked for, as PyTorch counts
               them for every allocator (torch.cuda.memory_stats()'s
               requested_bytes.all.peak, which libcumem's extension keeps
               too, under a lock), minus what was in use at the baseline.
               Not a libcumem resource's peak_bytes_in_use: that one is
               counted per thread without a shared atomic, and with the
               autograd thread freeing what the main thread allocates it
               read up to 1.4 % low (4.31 GiB on the MLP, 4.37 by
               PyTorch's count; H200, 2026-12-03). Only without the
               extension (CUDAPluggableAllocator) is it used. The table's
               last lines print PyTorch's max_memory_allocated beside it
               (whole blocks handed out: 0.05 % more for PyTorch's own);
  steps/s      over the timed steps (after the warm-up steps) of the first
               run, where the allocator takes its memory from the GPU, and
               of the second, where it serves everything from what it holds.
The baseline is taken after a warm-up on a small model of the same shape (so
that kernels are loaded and library handles made), everything freed and the
allocator's cache emptied.

Runs from the repository root on the GPU machine:
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_train_mlp.py
"""
import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import time

ALLOCATORS = ("pytorch", "pytorch-expandable", "libcumem-device", "libcumem-caching",
              "libcumem-expandable")
MiB = 1 << 20
GiB = 1 << 30


def child_env(allocator):
    """The environment of a child process running `allocator`."""
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env.setdefault("HF_HUB_OFFLINE", "1")  # no network on the GPU machine
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    if allocator == "pytorch-expandable":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    elif allocator.startswith("libcumem-expandable"):
        env["CUMEM_FRAMEWORK_RESOURCE"] = "expandable"
    elif allocator.startswith("libcumem-"):
        env["CUMEM_FRAMEWORK_RESOURCE"] = allocator[len("libcumem-"):]
    return env


class Allocator:
    """The allocator of this process, installed before PyTorch's first CUDA use."""

    def __init__(self, name):
        self.name = name
        self.libcumem = name.startswith("libcumem")
        if self.libcumem:
            import cumem
            import cumem.torch
            if name.startswith("libcumem-expandable-"):
                mib = int(name[len("libcumem-expandable-"):].removesuffix("MiB"))
                cumem.set_framework_resource(
                    0, cumem.Resource.caching(cumem.Resource.device(0), expandable=True,
                                              page_size=mib * MiB))
            cumem.torch.use_libcumem_allocator()
        import torch
        self.torch = torch
        torch.cuda.init()
        # PyTorch's count of the bytes asked for, where the allocator keeps it.
        try:
            self.requested = "requested_bytes.all.peak" in torch.cuda.memory_stats()
        except RuntimeError:  # CUDAPluggableAllocator keeps no statistics
            self.requested = False
        self.lowest_free = None
        self.baseline_free = None
        self.baseline_in_use = 0

    def _resource(self):
        import cumem
        return cumem.framework_resource(0)

    def in_use(self):
        if self.requested:
            return self.torch.cuda.memory_stats()["requested_bytes.all.current"]
        return self._resource().statistics()["bytes_in_use"]

    def peak_in_use(self):
        if self.requested:
            return self.torch.cuda.memory_stats()["requested_bytes.all.peak"]
        return self._resource().statistics()["peak_bytes_in_use"]

    def reset_peak(self):
        if self.requested:
            self.torch.cuda.reset_peak_memory_stats()
        else:
            self._resource().reset_peak()

    def empty_cache(self):
        """Gives back everything cached (a cache's blocks, a pool's reserve)."""
        gc.collect()
        self.torch.cuda.synchronize()
        if not self.libcumem:
            self.torch.cuda.empty_cache()
            return
        r = self._resource()
        if self.name == "libcumem-device":
            from cumem._lib import lib
            lib.cumem_resource_pool_trim.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
            lib.cumem_resource_pool_trim(r.handle, 0)
        else:
            r.trim(0)
        self.torch.cuda.synchronize()

    def free_memory(self):
        return self.torch.cuda.mem_get_info()[0]

    def start(self):
        """The baseline: what is taken and in use from here on is measured."""
        self.empty_cache()
        self.baseline_free = self.free_memory()
        self.lowest_free = self.baseline_free
        self.baseline_in_use = self.in_use()
        self.baseline_allocated = (self.torch.cuda.memory_stats()["allocated_bytes.all.current"]
                                   if self.requested else 0)
        self.reset_peak()

    def sample(self, *_):
        free = self.free_memory()
        if free < self.lowest_free:
            self.lowest_free = free

    def taken(self):
        return self.baseline_free - self.lowest_free

    def taken_now(self):
        return self.baseline_free - self.free_memory()

    def peak_in_use_since_start(self):
        return self.peak_in_use() - self.baseline_in_use

    def pools_under(self):
        """At this moment, for a libcumem allocator: the driver pools in the
        framework resource's stack, as (their reservation, their bytes in
        use); None for the others. (The cache's own bytes reserved are in
        details()' caching statistics.)"""
        if not self.libcumem:
            return None
        import cumem
        reserved, used = 0, 0
        for r in cumem.statistics_json(self._resource())["resources"]:
            if "pool" in r:
                reserved += r["pool"]["reserved_mem_current"]
                used += r["pool"]["used_mem_current"]
        return reserved, used

    def details(self):
        d = {}
        if self.requested:
            d["allocated_peak"] = (self.torch.cuda.memory_stats()["allocated_bytes.all.peak"]
                                   - self.baseline_allocated)
        if self.libcumem and self.name != "libcumem-device":
            d["caching"] = self._resource().caching_statistics()
        return d


def watch(model, allocator):
    """Reads the free memory in every module's forward and every gradient."""
    handles = []
    for m in model.modules():
        if not list(m.children()):
            handles.append(m.register_forward_hook(allocator.sample))
    for p in model.parameters():
        if p.requires_grad:
            handles.append(p.register_hook(lambda grad: allocator.sample()))
    return handles


def train(allocator, workload, shapes, warmup, sample=True):
    """Builds the workload's model, runs a step per shape (the first `warmup`
    untimed) and frees everything; returns (steps/s, taken at the end).
    `sample`: the device's free memory read in every module's forward and
    every gradient (the peak taken), a driver call each that costs the host
    time (ResNet-50: over 300 per step); without it the steps/s are the
    training's own."""
    torch = allocator.torch
    model, step = workload.build(torch)
    handles = watch(model, allocator) if sample else []
    read = allocator.sample if sample else (lambda: None)
    for shape in shapes[:warmup]:
        step(shape)
        read()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for shape in shapes[warmup:]:
        step(shape)
        read()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    for h in handles:
        h.remove()
    del model, step
    gc.collect()
    torch.cuda.synchronize()
    return (len(shapes) - warmup) / elapsed, allocator.taken_now()


def warm_up(allocator, workload, seed):
    """Seeds torch, runs a small model of the workload's shape (its kernels,
    handles and workspaces made) and sets the allocator's baseline: what is
    taken and in use from here on is measured."""
    torch = allocator.torch
    torch.manual_seed(seed)
    small_model, small_step = workload.build(torch, small=True)
    for shape in workload.shapes(2, seed, smallest=True):
        small_step(shape)
    torch.cuda.synchronize()
    del small_model, small_step
    allocator.start()


def run_child(workload, allocator_name, steps, warmup, seed):
    """One allocator, in this process: the measures as a dict."""
    allocator = Allocator(allocator_name)
    warm_up(allocator, workload, seed)
    shapes = workload.shapes(steps + warmup, seed)
    steps_per_s, end_first = train(allocator, workload, shapes, warmup)
    taken = allocator.taken()
    peak = allocator.peak_in_use_since_start()
    first = allocator.details().get("caching")
    pools_first = allocator.pools_under()
    # The same training once more in this process: it must end where the
    # first one did (nothing kept growing). Its steps/s are the training's
    # own: its shapes are known to cuDNN and PyTorch by now, and the free
    # memory is not sampled (run 1 measured what is taken).
    steps_per_s_second, end_second = train(allocator, workload, shapes, warmup, sample=False)
    result = {"workload": workload.name, "allocator": allocator_name,
              "steps_per_s": steps_per_s, "steps_per_s_second": steps_per_s_second,
              "taken": taken, "peak_in_use": peak,
              "end_first": end_first, "end_second": end_second}
    if pools_first:
        result["pools_first"] = pools_first
        result["pools_second"] = allocator.pools_under()
    result.update(allocator.details())
    if first:
        result["caching_first"] = first
    return result


def parse(description, default_steps):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--steps", type=int, default=default_steps, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--allocators", default=",".join(ALLOCATORS),
                    help="comma-separated, from: " + ", ".join(ALLOCATORS) +
                         ", libcumem-expandable-<N>MiB")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    return ap.parse_args()


def run_all(script, args, extra=()):
    """Runs every allocator of args.allocators in a process of its own (this
    script with --child) and returns their results."""
    rows = []
    for name in args.allocators.split(","):
        cmd = [sys.executable, script, "--child", name, "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--seed", str(args.seed), *extra]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, env=child_env(name), capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{name}: failed (exit {out.returncode})\n{out.stderr[-3000:]}", flush=True)
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        print(f"{name}: done in {row['wall_s']:.0f} s", file=sys.stderr, flush=True)
    return rows


def print_training_table(rows):
    print("| workload | allocator | taken (GiB) | peak in use (GiB) | taken / peak in use "
          "| steps/s run 1 (sampled) / run 2 | end of run 1 / run 2 (GiB) | process (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["taken"] / r["peak_in_use"] if r["peak_in_use"] else float("nan")
        print(f"| {r['workload']} | {r['allocator']} | {r['taken'] / GiB:.2f} | "
              f"{r['peak_in_use'] / GiB:.2f} | {ratio:.3f} | {r['steps_per_s']:.2f} / {r['steps_per_s_second']:.2f} | "
              f"{r['end_first'] / GiB:.2f} / {r['end_second'] / GiB:.2f} | {r['wall_s']:.0f} |")
    for r in rows:
        if "allocated_peak" in r:
            print(f"{r['allocator']}: peak asked for {r['peak_in_use'] / GiB:.3f} GiB, "
                  f"peak of whole blocks handed out {r['allocated_peak'] / GiB:.3f} GiB")
    for r in rows:
        if "pools_first" in r and "caching" in r and "caching_first" in r:
            # Where a libcumem stack's memory is at the end of each run: the
            # cache's own bytes, and what the driver pools under it reserved
            # (a pool takes the device's memory in chunks of its own).
            (p1, u1), (p2, u2) = r["pools_first"], r["pools_second"]
            c1 = r["caching_first"]["bytes_reserved"]
            c2 = r["caching"]["bytes_reserved"]
            print(f"{r['allocator']}: end of run 1 / run 2: cache reserved {c1 / GiB:.3f} / "
                  f"{c2 / GiB:.3f} GiB; pools under it reserved {p1 / MiB:.1f} / {p2 / MiB:.1f} "
                  f"MiB, of which in use {u1 / MiB:.1f} / {u2 / MiB:.1f} MiB")
    mapped = [r for r in rows if "caching" in r and r["caching"].get("pages_mapped")]
    for r in mapped:
        c = r["caching"]
        print(f"{r['allocator']}: {c['pages_mapped']} pages mapped, {c['pages_unmapped']} unmapped, "
              f"peak reserved {c['peak_bytes_reserved'] / GiB:.2f} GiB")
        f = r.get("caching_first")
        if f and "recycles" in c:
            # Per run: fragments recycled before new pages, and the device waits among them.
            print(f"{r['allocator']}: recycles (device waits) run 1 {f['recycles']} "
                  f"({f['recycle_waits']}), run 2 {c['recycles'] - f['recycles']} "
                  f"({c['recycle_waits'] - f['recycle_waits']}); pages mapped run 2 "
                  f"{c['pages_mapped'] - f['pages_mapped']}")


def training_main(workload, script, default_steps):
    args = parse(f"{workload.name}: device memory taken against the peak in use", default_steps)
    if args.child:
        print(json.dumps(run_child(workload, args.child, args.steps, args.warmup, args.seed)))
        return
    print_training_table(run_all(script, args))
