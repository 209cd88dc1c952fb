#!/usr/bin/env python3
"""How much device memory a driver memory pool takes for a few MiB of small
blocks (issue 18: the framework's expandable cache takes its blocks up to
1 MiB from an IPC-enabled pool of its own, and on the trainings takes
0.2-0.4 % more than PyTorch's expandable segments, whose small blocks sit
in 2 MiB pages). For each pool (the device's default pool, a new pool, a
new pool with the POSIX fd handle type) it allocates COUNT blocks of SIZE
bytes on one stream, and prints the device memory taken (cuMemGetInfo's
free memory before minus after) and the pool's reserved memory
(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) against the bytes asked for.
Usage: python3 tools/probes/pool_chunk_probe.py [SIZE=65536] [COUNT=80]"""
import ctypes
import sys

size = int(sys.argv[1]) if len(sys.argv) > 1 else 65536
count = int(sys.argv[2]) if len(sys.argv) > 2 else 80
from cuda_driver import check, cu  # device 0's context is current
from vmm_structs import Location

MiB = 1 << 20
RESERVED_MEM_CURRENT = 5


class PoolProps(ctypes.Structure):
    _fields_ = [("allocType", ctypes.c_int), ("handleTypes", ctypes.c_int),
                ("location", Location), ("win32SecurityAttributes", ctypes.c_void_p),
                ("maxSize", ctypes.c_size_t), ("usage", ctypes.c_ushort),
                ("reserved", ctypes.c_ubyte * 54)]


def free_memory():
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
    return free.value


def measure(name, pool):
    stream = ctypes.c_void_p()
    check(cu.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    before = free_memory()
    ptrs = []
    for _ in range(count):
        p = ctypes.c_uint64()
        check(cu.cuMemAllocFromPoolAsync(ctypes.byref(p), ctypes.c_size_t(size), pool, stream),
              "cuMemAllocFromPoolAsync")
        ptrs.append(p)
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
    taken = before - free_memory()
    reserved = ctypes.c_uint64()
    check(cu.cuMemPoolGetAttribute(pool, RESERVED_MEM_CURRENT, ctypes.byref(reserved)),
          "cuMemPoolGetAttribute")
    asked = size * count
    print(f"{name:32s} asked {asked / MiB:8.2f} MiB  taken {taken / MiB:8.2f} MiB  "
          f"reserved {reserved.value / MiB:8.2f} MiB  taken / asked {taken / asked:6.2f}")
    for p in ptrs:
        check(cu.cuMemFreeAsync(p, stream), "cuMemFreeAsync")
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
    check(cu.cuMemPoolTrimTo(pool, ctypes.c_size_t(0)), "cuMemPoolTrimTo")
    check(cu.cuStreamDestroy_v2(stream), "cuStreamDestroy")


default_pool = ctypes.c_void_p()
check(cu.cuDeviceGetDefaultMemPool(ctypes.byref(default_pool), 0), "cuDeviceGetDefaultMemPool")
measure("the device's default pool", default_pool)
for handle_types, name in ((0, "a new pool"), (1, "a new pool, POSIX fd handles")):
    props = PoolProps()
    props.allocType = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
    props.handleTypes = handle_types
    props.location = Location(1, 0)  # CU_MEM_LOCATION_TYPE_DEVICE, device 0
    pool = ctypes.c_void_p()
    check(cu.cuMemPoolCreate(ctypes.byref(pool), ctypes.byref(props)), "cuMemPoolCreate")
    measure(name, pool)
    check(cu.cuMemPoolDestroy(pool), "cuMemPoolDestroy")
