"""cumem.cuda_core with the real cuda.core (the GPU machine's 1.x): a
libcumem resource as cuda.core's MemoryResource, cuda.core Streams and
Devices in libcumem calls, cuda.core Buffers as libcumem buffers without
copies, DLPack of the adapter's buffers through CuPy."""
import pytest

import cumem
import cumem.cuda_core

pytestmark = pytest.mark.gpu
core = pytest.importorskip("cuda.core")


@pytest.fixture
def dev():
    d = core.Device(0)
    d.set_current()
    return d


def test_a_libcumem_resource_is_a_memory_resource(dev):
    s = dev.create_stream()
    mr = cumem.cuda_core.caching_memory_resource(dev)
    assert isinstance(mr, core.MemoryResource)
    assert mr.is_device_accessible and not mr.is_host_accessible and mr.device_id == 0
    buf = mr.allocate(1 << 20, stream=s)
    assert isinstance(buf, core.Buffer) and buf.size == 1 << 20
    assert buf.memory_resource is mr
    inner = cumem.as_buffer(buf)
    assert inner.ptr == int(buf.handle), "the libcumem buffer itself, no copy"
    inner.fill(7, stream=s)
    pinned = core.LegacyPinnedMemoryResource().allocate(1 << 20, stream=s)
    buf.copy_to(pinned, stream=s)
    s.sync()
    assert cumem.as_buffer(pinned).read(0, 4) == b"\x07" * 4
    buf.close(s)
    s.sync()
    assert mr.resource.caching_statistics()["bytes_cached"] >= 1 << 20
    pinned.close(s)


def test_cuda_core_streams_and_devices_in_libcumem_calls(dev):
    s = dev.create_stream()
    r = cumem.Resource.device(dev)
    b = r.allocate(4096, s)
    assert b._stream.native == int(s.handle)
    b.fill(3, stream=s)
    e = cumem.Event(dev).record(s)
    e.synchronize()
    assert b.read(0, 2, stream=s) == b"\x03\x03"
    b.close(s)
    s.sync()


def test_cuda_core_buffers_become_libcumem_buffers_without_copies(dev):
    s = dev.create_stream()
    theirs = dev.memory_resource.allocate(256, stream=s)
    mine = cumem.as_buffer(theirs)
    assert mine.ptr == int(theirs.handle) and mine.size == 256
    mine.fill(5, stream=s)
    back = mine.to_cuda_core()
    assert int(back.handle) == mine.ptr
    s.sync()
    assert mine.read(0, 3) == b"\x05\x05\x05"
    theirs.close(s)


def test_dlpack_of_the_adapters_buffers(dev):
    cp = pytest.importorskip("cupy")
    s = dev.create_stream()
    mr = cumem.cuda_core.memory_resource(cumem.Device(0).memory_resource)
    buf = mr.allocate(4096, stream=s)
    s.sync()
    a = cp.from_dlpack(buf).view(cp.float32)
    a[:] = 2.0
    cp.cuda.Device(0).synchronize()
    assert cumem.as_buffer(buf).read(0, 4) == cp.float32(2.0).tobytes()
    del a
    buf.close(s)
