#!/usr/bin/env python3
"""Whether the virtual-memory page calls slow the GPU's running work down
(issue 18: the expandable cache maps and unmaps pages in a training's
steady state, PyTorch's expandable segments only map): a stream of
matrix products (about 300 ms of GPU work, queued at once) is timed with
CUDA events alone, then again while the host makes N pages of PAGE MiB
(cuMemCreate + cuMemMap + cuMemSetAccess, "map"), or unmaps N pages mapped
before the products were queued (cuMemUnmap + cuMemRelease, "unmap"),
or does both ("cycle"). The GPU time the calls add, per page, is what a
page costs the training beyond the host's time (which a GPU-bound
training hides). Median of ROUNDS runs of each. Usage (GPU machine):
  /opt/torch/.venv/bin/python3 tools/probes/vmm_stall_probe.py [PAGE_MiB=8] [N=32] [ROUNDS=5]"""
import ctypes
import statistics
import sys
import time

import torch

page = int(sys.argv[1] if len(sys.argv) > 1 else 8) << 20
n = int(sys.argv[2]) if len(sys.argv) > 2 else 32
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
torch.empty(1, device="cuda")  # the primary context, which cuda_driver makes current too
from cuda_driver import check, cu  # noqa: E402
from vmm_structs import device_memory, read_write  # noqa: E402

prop = device_memory(0)
access = read_write(0)
base = ctypes.c_uint64()
check(cu.cuMemAddressReserve(ctypes.byref(base), ctypes.c_size_t(page * n), ctypes.c_size_t(0),
                             ctypes.c_uint64(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")
handles = [ctypes.c_ulonglong() for _ in range(n)]

a = torch.randn(4096, 8192, device="cuda")
b = torch.randn(8192, 2048, device="cuda")
c = torch.empty(4096, 2048, device="cuda")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def products(count):
    for _ in range(count):
        torch.mm(a, b, out=c)


# How many products make about 300 ms.
count = 8
while True:
    start.record()
    products(count)
    end.record()
    end.synchronize()
    if start.elapsed_time(end) >= 300:
        break
    count *= 2


def map_pages():
    for i, h in enumerate(handles):
        at = ctypes.c_uint64(base.value + i * page)
        check(cu.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(page), ctypes.byref(prop),
                             ctypes.c_ulonglong(0)), "cuMemCreate")
        check(cu.cuMemMap(at, ctypes.c_size_t(page), ctypes.c_size_t(0), h, ctypes.c_ulonglong(0)),
              "cuMemMap")
        check(cu.cuMemSetAccess(at, ctypes.c_size_t(page), ctypes.byref(access), ctypes.c_size_t(1)),
              "cuMemSetAccess")


def unmap_pages():
    for i, h in enumerate(handles):
        at = ctypes.c_uint64(base.value + i * page)
        check(cu.cuMemUnmap(at, ctypes.c_size_t(page)), "cuMemUnmap")
        check(cu.cuMemRelease(h), "cuMemRelease")


def timed(kind):
    """(GPU ms of the products, host ms of the page calls) with `kind`'s
    calls made while the products run."""
    torch.cuda.synchronize()
    if kind == "unmap":
        map_pages()
    torch.cuda.synchronize()
    start.record()
    products(count)
    end.record()
    t = time.perf_counter()
    if kind in ("map", "cycle"):
        map_pages()
    if kind in ("unmap", "cycle"):
        unmap_pages()
    host = (time.perf_counter() - t) * 1e3
    busy = not end.query()
    end.synchronize()
    if kind == "map":
        unmap_pages()
    if not busy:
        print(f"warning: {kind}: the products ended before the calls did")
    return start.elapsed_time(end), host


kinds = ("none", "map", "unmap", "cycle")
times = {k: [] for k in kinds}
for _ in range(rounds):
    for k in kinds:  # interleaved, so that a drift of the clocks touches each alike
        times[k].append(timed(k))
gpu = {k: statistics.median(g for g, _ in times[k]) for k in kinds}
print(f"{count} products, {gpu['none']:.2f} ms of GPU work alone; {n} pages of {page >> 20} MiB")
for k in kinds[1:]:
    host = statistics.median(h for _, h in times[k])
    print(f"{k}: GPU {gpu[k]:.2f} ms (+{gpu[k] - gpu['none']:.2f}, "
          f"{(gpu[k] - gpu['none']) / n * 1e3:.1f} us a page), host {host:.2f} ms "
          f"({host / n * 1e3:.1f} us a page)")
