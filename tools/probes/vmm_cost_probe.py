#!/usr/bin/env python3
"""What each virtual-memory driver call costs on this GPU, for the
expandable cache's pages (issue 18): cuMemCreate, cuMemMap, cuMemSetAccess
(per page, and once over N pages), cuMemUnmap and cuMemRelease, median of
several rounds of N pages of PAGE bytes on device 0; FD=1 makes the pages
with the POSIX fd handle type (shareable, as the framework's cache makes
them). Usage:
  python3 tools/probes/vmm_cost_probe.py [PAGE_MiB=2] [N=64] [ROUNDS=7] [FD=0]"""
import ctypes
import statistics
import sys
import time

page = int(sys.argv[1] if len(sys.argv) > 1 else 2) << 20
n = int(sys.argv[2]) if len(sys.argv) > 2 else 64
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
shareable = len(sys.argv) > 4 and sys.argv[4] == "1"
from cuda_driver import check, cu  # device 0's context is current
from vmm_structs import device_memory, read_write


prop = device_memory(0)
if shareable:
    prop.requestedHandleTypes = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
access = read_write(0)
base = ctypes.c_uint64()
check(cu.cuMemAddressReserve(ctypes.byref(base), ctypes.c_size_t(n * page), ctypes.c_size_t(0),
                             ctypes.c_uint64(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")
times = {k: [] for k in ("create", "map", "set_access each", "set_access once", "unmap", "release")}
for r in range(rounds):
    each = r % 2 == 0
    handles = []
    t = time.perf_counter()
    for i in range(n):
        h = ctypes.c_ulonglong()
        check(cu.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(page), ctypes.byref(prop),
                             ctypes.c_ulonglong(0)), "cuMemCreate")
        handles.append(h)
    times["create"].append(time.perf_counter() - t)
    t = time.perf_counter()
    for i, h in enumerate(handles):
        check(cu.cuMemMap(ctypes.c_uint64(base.value + i * page), ctypes.c_size_t(page),
                          ctypes.c_size_t(0), h, ctypes.c_ulonglong(0)), "cuMemMap")
    times["map"].append(time.perf_counter() - t)
    t = time.perf_counter()
    if each:
        for i in range(n):
            check(cu.cuMemSetAccess(ctypes.c_uint64(base.value + i * page), ctypes.c_size_t(page),
                                    ctypes.byref(access), ctypes.c_size_t(1)), "cuMemSetAccess")
        times["set_access each"].append(time.perf_counter() - t)
    else:
        check(cu.cuMemSetAccess(ctypes.c_uint64(base.value), ctypes.c_size_t(n * page),
                                ctypes.byref(access), ctypes.c_size_t(1)), "cuMemSetAccess")
        times["set_access once"].append(time.perf_counter() - t)
    t = time.perf_counter()
    for i in range(n):
        check(cu.cuMemUnmap(ctypes.c_uint64(base.value + i * page), ctypes.c_size_t(page)), "cuMemUnmap")
    times["unmap"].append(time.perf_counter() - t)
    t = time.perf_counter()
    for h in handles:
        check(cu.cuMemRelease(h), "cuMemRelease")
    times["release"].append(time.perf_counter() - t)
print(f"{n} pages of {page >> 20} MiB, median of {rounds} rounds, us per page:")
for k, v in times.items():
    print(f"  {k:16s} {1e6 * statistics.median(v) / n:8.1f}")
check(cu.cuMemAddressFree(ctypes.c_uint64(base.value), ctypes.c_size_t(n * page)), "cuMemAddressFree")
