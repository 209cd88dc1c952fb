#!/usr/bin/env python3
"""Whether the virtual-memory driver calls wait for the GPU's queued work
(issue 18: mapping pages in a training's first run): each of cuMemCreate,
cuMemMap, cuMemSetAccess, cuMemUnmap and cuMemRelease for one page of
PAGE MiB, timed on the host with the GPU idle and again right after a
spin kernel of about 50 ms was queued (torch.cuda._sleep); a call that
waits takes about the kernel's time. Median of ROUNDS. Usage (GPU machine):
  /opt/torch/.venv/bin/python3 tools/probes/vmm_busy_probe.py [PAGE_MiB=2] [ROUNDS=5]"""
import ctypes
import statistics
import sys
import time

import torch

page = int(sys.argv[1] if len(sys.argv) > 1 else 2) << 20
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.empty(1, device="cuda")  # the primary context, which cuda_driver makes current too
from cuda_driver import check, cu  # noqa: E402
from vmm_structs import device_memory, read_write  # noqa: E402

prop = device_memory(0)
access = read_write(0)
base = ctypes.c_uint64()
check(cu.cuMemAddressReserve(ctypes.byref(base), ctypes.c_size_t(page), ctypes.c_size_t(0),
                             ctypes.c_uint64(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")

# Cycles of torch.cuda._sleep for about 50 ms.
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
cycles = 1 << 20
while True:
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    if start.elapsed_time(end) >= 50:
        break
    cycles *= 2
kernel_ms = start.elapsed_time(end)


def one_page(busy):
    """Each call's host time (ms) for one page, the GPU idle or busy."""
    out = {}
    h = ctypes.c_ulonglong()
    steps = [
        ("create", lambda: cu.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(page), ctypes.byref(prop),
                                          ctypes.c_ulonglong(0))),
        ("map", lambda: cu.cuMemMap(base, ctypes.c_size_t(page), ctypes.c_size_t(0), h,
                                    ctypes.c_ulonglong(0))),
        ("set_access", lambda: cu.cuMemSetAccess(base, ctypes.c_size_t(page), ctypes.byref(access),
                                                 ctypes.c_size_t(1))),
        ("unmap", lambda: cu.cuMemUnmap(base, ctypes.c_size_t(page))),
        ("release", lambda: cu.cuMemRelease(h)),
    ]
    for name, call in steps:
        torch.cuda.synchronize()
        if busy:
            torch.cuda._sleep(cycles)
        t = time.perf_counter()
        check(call(), name)
        out[name] = (time.perf_counter() - t) * 1e3
    torch.cuda.synchronize()
    return out


for busy in (False, True):
    runs = [one_page(busy) for _ in range(rounds)]
    cells = ", ".join(f"{k} {statistics.median(r[k] for r in runs):.3f}" for k in runs[0])
    print(f"{page >> 20} MiB page, GPU {'busy (kernel %.0f ms)' % kernel_ms if busy else 'idle'}: "
          f"ms per call: {cells}")
