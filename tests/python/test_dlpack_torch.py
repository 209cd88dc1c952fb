"""torch.from_dlpack of libcumem buffers of each kind sees the bytes libcumem
wrote; torch tensors imported into libcumem read correctly."""
import struct

import torch

import cumem
from gpu_common import SKIP, kinds, pattern, require_gpu, run

if not torch.cuda.is_available():
    print("skipped: torch sees no CUDA device")
    raise SystemExit(SKIP)
require_gpu()

# Where PyTorch does not take a kind's own DLPack device, libcumem presents the
# memory the other valid way: pinned as kDLCPU, managed as kDLCUDA.
FALLBACK = {"pinned": cumem.DLDeviceType.kDLCPU, "legacy_pinned": cumem.DLDeviceType.kDLCPU,
            "managed": cumem.DLDeviceType.kDLCUDA}


def torch_view(buf, name):
    try:
        return torch.from_dlpack(buf), "own device type"
    except (RuntimeError, BufferError, TypeError, ValueError) as e:
        if name not in FALLBACK:
            raise
        return (torch.from_dlpack(buf.dlpack_view(device_type=FALLBACK[name])),
                f"presented as {FALLBACK[name]} ({type(e).__name__}: {str(e)[:80]})")


def test_torch_sees_libcumem_bytes():
    for name, r in kinds():
        b = r.allocate(4096)
        data = pattern(4096, len(name))
        b.write(data)
        t, how = torch_view(b, name)
        print(f"     {name}: {t.device}, {how}")
        assert bytes(t.cpu().tolist()) == data, name
        # Writes through torch are seen by libcumem.
        t[:4] = torch.tensor([1, 2, 3, 4], dtype=torch.uint8)
        torch.cuda.synchronize()
        assert b.read(0, 4) == bytes([1, 2, 3, 4]), name
        # The tensor keeps the memory: releasing the buffer frees nothing yet.
        b.release()
        assert r.statistics()["live_allocations"] == 1, name
        del t
        torch.cuda.synchronize()
        import gc
        gc.collect()
        assert r.statistics()["live_allocations"] == 0, (name, r.statistics())


def test_typed_export():
    r = cumem.Resource.device(0)
    b = r.allocate(6 * 4)
    b.write(struct.pack("<6f", *range(6)))
    t = torch.from_dlpack(b.dlpack_view(dtype="float32", shape=(2, 3)))
    assert t.shape == (2, 3) and t.dtype == torch.float32
    assert t.cpu().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], t


def test_torch_tensors_import():
    t = torch.arange(256, dtype=torch.int32, device="cuda").reshape(16, 16)
    buf = cumem.from_dlpack(t)
    assert buf.size == 1024 and buf.memory_kind == "device"
    raw = buf.read()
    assert [int.from_bytes(raw[i:i + 4], "little") for i in range(0, 1024, 4)] == list(range(256))
    buf.release()
    h = torch.arange(10, dtype=torch.uint8).pin_memory()
    hb = cumem.from_dlpack(h)
    assert hb.read() == bytes(range(10)), hb.read()
    hb.release()
    try:
        cumem.from_dlpack(t.t())
        raise AssertionError("a transposed tensor was accepted")
    except cumem.CumemError as e:
        assert "not contiguous" in e.message, e.message


SPIN_THEN_FILL = r"""
extern "C" __global__ void spin_then_fill(unsigned int* words, unsigned long long n,
                                          unsigned int value, unsigned long long spin_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < spin_ns);
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    words[i] = value;
}
"""


def test_cpu_consumer_waits_for_queued_work():
    """Issue 17, item 10: a CPU consumer (kDLCPU) of pinned or managed memory
    gets the data after the work queued on it: a kernel that spins 300 ms and
    then fills the buffer, launched just before the export."""
    import ctypes
    try:
        kernel = cumem.Program.compile(0, SPIN_THEN_FILL).load().get_kernel("spin_then_fill")
    except cumem.CumemError as e:
        if e.status_name == "CUMEM_ERROR_NO_COMPILER":
            print(f"     skipped: {e.message}")
            return
        raise
    size = 4 << 20
    for name, r in kinds():
        if name not in ("pinned", "legacy_pinned", "managed"):
            continue
        b = r.allocate(size)
        b.fill(0)
        cumem.launch(kernel, None, (64, 1, 1), (256, 1, 1), b, ctypes.c_ulonglong(size // 4),
                     ctypes.c_uint(0x01010101), ctypes.c_ulonglong(300_000_000))
        t = torch.from_dlpack(b.dlpack_view(device_type=cumem.DLDeviceType.kDLCPU))
        assert t.device.type == "cpu", (name, t.device)
        total = int(t.sum())
        assert total == size, f"{name}: the CPU consumer read {total} of {size} ones: unfinished data"
        print(f"     {name}: the CPU consumer saw the kernel's {size} bytes")
        del t
        b.release()


run([test_torch_sees_libcumem_bytes, test_typed_export, test_torch_tensors_import,
     test_cpu_consumer_waits_for_queued_work])
