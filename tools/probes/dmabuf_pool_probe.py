#!/usr/bin/env python3
"""Which ranges of default-pool memory cuMemGetHandleForAddressRange exports
as dma-bufs: a 1 MiB + 100 allocation, then a 20 MiB one right after it
(the layout on which engines_gpu's caching block was refused on the H200).
Prints one line per range tried. Needs a GPU; plain ctypes on libcuda."""
import ctypes, os

from cuda_driver import check, cu  # device 0's context is current

page = os.sysconf("SC_PAGESIZE")
MiB = 1 << 20

def alloc(n):
    p = ctypes.c_uint64()
    check(cu.cuMemAllocAsync(ctypes.byref(p), ctypes.c_size_t(n), None), "cuMemAllocAsync")
    return p.value

def export(base, size, label):
    fd = ctypes.c_int(-1)
    r = cu.cuMemGetHandleForAddressRange(ctypes.byref(fd), ctypes.c_uint64(base),
                                         ctypes.c_size_t(size), 1, ctypes.c_ulonglong(0))
    print(f"{label}: {size} bytes at {base:#x}: CUresult {r}")
    if r == 0:
        os.close(fd.value)

a = alloc(MiB + 100)
b = alloc(20 * MiB)
check(cu.cuStreamSynchronize(None), "cuStreamSynchronize")
down = lambda v: v & ~(page - 1)
up = lambda v: (v + page - 1) & ~(page - 1)
two = 2 * MiB
print(f"a at {a:#x}, b at {b:#x}")
export(down(a), up(a + MiB + 100) - down(a), "a rounded out")
export(down(b), up(b + 20 * MiB) - down(b), "b rounded out")
boundary = (b + two - 1) & ~(two - 1)
export(down(b), boundary - down(b), "b up to the next 2 MiB boundary")
export(boundary, up(b + 20 * MiB) - boundary, "b from that boundary to its end")
export(boundary, two, "b: one 2 MiB page after the boundary")
export(up(b), 4 * MiB, "b: 4 MiB from its first whole page")
c = alloc(64 * MiB)
check(cu.cuStreamSynchronize(None), "cuStreamSynchronize")
print(f"c at {c:#x}")
export(down(c), up(c + 64 * MiB) - down(c), "c (64 MiB, third) rounded out")
