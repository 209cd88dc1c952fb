"""The seed example, cuda.core's memory_ops, through the ctypes package:
compile a kernel at run time, allocate device memory (a stream-ordered
pool) and pinned host memory (cuMemHostAlloc), launch, copy between them,
and check every result, as examples/memory_ops.c does (the same lines are
printed). Exits 1 on a mismatch (a libcumem failure raises CumemError), and
77 (what test harnesses read as "skipped") where there is no GPU.

    CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python \\
      python3 bindings/python/examples/memory_ops.py
"""
import ctypes
import random
import sys

import cumem

N = 1024
BLOCK = 256

SOURCE = r"""
extern "C" __global__ void memory_ops(float* device_data, float* pinned_data, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) {
    device_data[i] += 1.0f;
    pinned_data[i] *= 3.0f;
  }
}
"""

Floats = ctypes.c_float * N


def host_floats(buffer):
    """The N floats of a host-accessible buffer, read and written in place."""
    return Floats.from_address(buffer.ptr)


def compare(what, got, expected):
    """Prints the check; 0 when all N values match, 1 otherwise."""
    for i in range(N):
        if got[i] != expected[i]:
            print(f"{what}: MISMATCH at {i}: {got[i]:g}, expected {expected[i]:g}")
            return 1
    print(f"{what}: OK ({N} values)")
    return 0


def main():
    try:
        count = cumem.device_count()
    except cumem.CumemError as e:
        print(f"no CUDA device to run on ({e.message})")
        return 77
    if count == 0:
        print("no CUDA device to run on (the driver reports none)")
        return 77

    device = cumem.Device(0)
    stream = cumem.Stream(device)
    kernel = cumem.Program.compile(device, SOURCE).load().get_kernel("memory_ops")

    device_mr = device.memory_resource  # its default pool unless the program chose another
    pinned_mr = cumem.Resource.legacy_pinned(device)
    nbytes = N * ctypes.sizeof(ctypes.c_float)
    device_buffer = device_mr.allocate(nbytes, stream)
    pinned_buffer = pinned_mr.allocate(nbytes, stream)
    staging = pinned_mr.allocate(nbytes, stream)  # pinned, for copies to and from device memory
    pinned = host_floats(pinned_buffer)  # mapped pinned memory: the kernel uses it too
    staged = host_floats(staging)

    # Random data, rounded to float32 as the device holds it; the expected
    # results are computed in float32 too (Floats stores each one rounded).
    rng = random.Random(2024)
    original_device = Floats(*(rng.random() for _ in range(N)))
    original_pinned = Floats(*(rng.random() for _ in range(N)))
    plus_one = Floats(*(x + 1.0 for x in original_device))
    times_three = Floats(*(x * 3.0 for x in original_pinned))
    ctypes.memmove(staged, original_device, nbytes)
    ctypes.memmove(pinned, original_pinned, nbytes)
    staging.copy_to(device_buffer, stream)

    cumem.launch(kernel, stream, (N + BLOCK - 1) // BLOCK, BLOCK,
                 device_buffer, pinned_buffer, ctypes.c_size_t(N))
    stream.synchronize()

    mismatches = 0
    device_buffer.copy_to(staging, stream)
    stream.synchronize()
    mismatches += compare("device_data[i] == original + 1", staged, plus_one)
    mismatches += compare("pinned_data[i] == original * 3", pinned, times_three)

    # Device -> pinned: the pinned buffer now holds the device results.
    ctypes.memset(pinned, 0, nbytes)
    device_buffer.copy_to(pinned_buffer, stream)
    stream.synchronize()
    mismatches += compare("pinned after copy from device", pinned, plus_one)

    # Pinned -> a new device buffer, read back through the cleared staging buffer.
    new_device_buffer = device_mr.allocate(nbytes, stream)
    pinned_buffer.copy_to(new_device_buffer, stream)
    ctypes.memset(staged, 0, nbytes)
    new_device_buffer.copy_to(staging, stream)
    stream.synchronize()
    mismatches += compare("new device buffer after copy from pinned", staged, plus_one)

    for b in (new_device_buffer, staging, pinned_buffer, device_buffer):
        b.close(stream)
    stream.synchronize()
    print("memory_ops: FAILED" if mismatches else "memory_ops: all checks passed")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
