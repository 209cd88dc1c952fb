"""cupy.from_dlpack of libcumem buffers of each kind sees the bytes libcumem
wrote; CuPy arrays imported into libcumem read correctly."""
import gc

import cupy

import cumem
from gpu_common import kinds, pattern, require_gpu, run

require_gpu()

# Where CuPy does not take a kind's own DLPack device, managed memory is
# presented as kDLCUDA. Pinned memory is not: CuPy takes only CUDA device
# memory, and would copy pinned memory presented as kDLCUDA as device
# memory, which the runtime refuses; CuPy's refusal is checked instead.
FALLBACK = {"managed": cumem.DLDeviceType.kDLCUDA}
PINNED = ("pinned", "legacy_pinned")


def cupy_view(buf, name):
    try:
        return cupy.from_dlpack(buf), "own device type"
    except (RuntimeError, BufferError, TypeError, ValueError) as e:
        if name not in FALLBACK:
            raise
        return (cupy.from_dlpack(buf.dlpack_view(device_type=FALLBACK[name])),
                f"presented as {FALLBACK[name]} ({type(e).__name__}: {str(e)[:80]})")


def test_cupy_sees_libcumem_bytes():
    for name, r in kinds():
        b = r.allocate(4096)
        data = pattern(4096, 3 + len(name))
        b.write(data)
        if name in PINNED:
            try:
                cupy.from_dlpack(b)
                raise AssertionError(f"CuPy took {name} memory as kDLCUDAHost")
            except (RuntimeError, BufferError, TypeError, ValueError) as e:
                print(f"     {name}: CuPy refuses kDLCUDAHost ({type(e).__name__}: {str(e)[:60]})")
            b.release()
            continue
        a, how = cupy_view(b, name)
        print(f"     {name}: {how}")
        assert a.get().tobytes() == data, name
        a[:4] = cupy.asarray([9, 8, 7, 6], dtype=cupy.uint8)
        cupy.cuda.Device().synchronize()
        assert b.read(0, 4) == bytes([9, 8, 7, 6]), name
        b.release()
        assert r.statistics()["live_allocations"] == 1, name
        del a
        gc.collect()
        cupy.cuda.Device().synchronize()
        assert r.statistics()["live_allocations"] == 0, (name, r.statistics())


def test_cupy_arrays_import():
    a = cupy.arange(1000, dtype=cupy.float64)
    buf = cumem.from_dlpack(a)
    assert buf.size == 8000 and buf.memory_kind == "device"
    assert buf.read() == a.get().tobytes()
    buf.release()
    m = cupy.arange(12, dtype=cupy.int16).reshape(3, 4)
    try:
        cumem.from_dlpack(m.T)
        raise AssertionError("a transposed array was accepted")
    except cumem.CumemError as e:
        assert "not contiguous" in e.message, e.message


run([test_cupy_sees_libcumem_bytes, test_cupy_arrays_import])
