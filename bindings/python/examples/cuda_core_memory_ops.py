"""A cuda.core program's memory operations, with libcumem's caching resource
as its device memory resource: the program is written against cuda.core 1.x
alone (its memory_ops example's flow: a kernel compiled with Program, device
and legacy pinned buffers, DLPack views through CuPy and NumPy, copies
between the kinds, every result checked), and the one line marked
"libcumem" (with its `import cumem.cuda_core`) is the only change from
cuda.core's own memory resource (`device_mr = dev.memory_resource`). Needs a GPU, cuda.core, CuPy and
NumPy; exits 77 (a test harness's "skipped") without them.

    python3 bindings/python/examples/cuda_core_memory_ops.py
"""
import sys

try:
    import cupy as cp
    import numpy as np
    from cuda.core import Device, LaunchConfig, LegacyPinnedMemoryResource, Program, ProgramOptions
    from cuda.core import launch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

import cumem.cuda_core

KERNEL = r"""
extern "C" __global__ void memory_ops(float* device_data, float* pinned_data, size_t n) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) {
    device_data[i] += 1.0f;  // device memory
    pinned_data[i] *= 3.0f;  // pinned host memory, reached from the GPU
  }
}
"""


def main():
    try:
        dev = Device()
    except Exception as e:  # noqa: BLE001 (no driver, no device: cuda.core's own errors)
        print(f"skipped: no CUDA device ({e})")
        return 77
    dev.set_current()
    stream = dev.create_stream()
    cp.cuda.ExternalStream(int(stream.handle)).use()  # CuPy works on our stream

    program = Program(KERNEL, code_type="c++",
                      options=ProgramOptions(std="c++17", arch=f"sm_{dev.arch}"))
    kernel = program.compile("cubin").get_kernel("memory_ops")

    device_mr = cumem.cuda_core.caching_memory_resource(dev)  # libcumem (was: dev.memory_resource)
    pinned_mr = LegacyPinnedMemoryResource()

    n = 1024
    dtype = cp.float32
    nbytes = n * dtype().itemsize
    device_buffer = device_mr.allocate(nbytes, stream=stream)
    pinned_buffer = pinned_mr.allocate(nbytes, stream=stream)
    device_array = cp.from_dlpack(device_buffer).view(dtype=dtype)
    pinned_array = np.from_dlpack(pinned_buffer).view(dtype=dtype)

    rng = cp.random.default_rng(2024)
    device_array[:] = rng.random(n, dtype=dtype)
    pinned_array[:] = rng.random(n, dtype=dtype).get()
    device_original = device_array.copy()
    pinned_original = pinned_array.copy()
    stream.sync()

    block = 256
    config = LaunchConfig(grid=(n + block - 1) // block, block=block)
    launch(stream, config, kernel, device_buffer, pinned_buffer, cp.uint64(n))
    stream.sync()
    assert cp.allclose(device_array, device_original + 1.0), "device memory operation failed"
    assert np.allclose(pinned_array, pinned_original * 3.0), "pinned memory operation failed"
    print("kernel over device and pinned memory: OK")

    device_buffer.copy_to(pinned_buffer, stream=stream)
    stream.sync()
    assert cp.allclose(cp.asarray(pinned_array), device_array), "device to pinned copy failed"
    print("device -> pinned copy: OK")

    new_device_buffer = device_mr.allocate(nbytes, stream=stream)
    new_device_array = cp.from_dlpack(new_device_buffer).view(dtype=dtype)
    pinned_buffer.copy_to(new_device_buffer, stream=stream)
    stream.sync()
    assert cp.allclose(new_device_array, cp.asarray(pinned_array)), "pinned to device copy failed"
    print("pinned -> device copy: OK")

    del device_array, new_device_array  # views of the buffers: gone before they close
    device_buffer.close(stream)
    pinned_buffer.close(stream)
    new_device_buffer.close(stream)
    stream.sync()
    stream.close()
    cp.cuda.Stream.null.use()
    assert device_buffer.handle == 0 and pinned_buffer.handle == 0 and new_device_buffer.handle == 0
    # What libcumem saw: two allocations, the second of the same size served
    # from its cache or a fresh block, all freed back into the cache.
    stats = device_mr.resource.caching_statistics()
    assert stats["hits"] + stats["misses"] == 2 and stats["bytes_cached"] >= nbytes, stats
    print("memory_ops with libcumem's caching resource: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
