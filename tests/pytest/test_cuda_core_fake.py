"""The cuda.core adapter (cumem.cuda_core) against a small fake cuda.core
with the protocol of cuda.core 1.x (the real one is tested by
test_gpu_cuda_core.py on the GPU machine): MemoryResource subclassed,
Buffer.from_handle(ptr, size, mr=None, owner=None, *, stream=None) whose
close calls mr.deallocate(ptr, size, stream=...), Stream with
__cuda_stream__ and device, Device with device_id."""
import gc
import importlib
import sys
import types
import weakref

import pytest

import cumem


def make_fake_cuda_core():
    core = types.ModuleType("cuda.core")

    class MemoryResource:
        def allocate(self, size, *, stream):
            raise NotImplementedError

        def deallocate(self, ptr, size, *, stream):
            raise NotImplementedError

    class Buffer:
        def __init__(self, ptr, size, mr, owner, stream):
            self._ptr, self._size, self._mr, self._owner = ptr, size, mr, owner
            self._stream = stream

        @staticmethod
        def from_handle(ptr, size, mr=None, owner=None, *, stream=None):
            if mr is not None and owner is not None:
                raise ValueError("owner and mr cannot be given together")
            return Buffer(int(ptr), size, mr, owner, stream)

        @property
        def handle(self):
            return self._ptr

        @property
        def size(self):
            return self._size

        @property
        def memory_resource(self):
            return self._mr

        @property
        def owner(self):
            return self._owner

        def close(self, stream=None):
            if self._ptr and self._mr is not None:
                self._mr.deallocate(self._ptr, self._size,
                                    stream=stream if stream is not None else self._stream)
            self._ptr, self._owner = 0, None

    class Device:
        def __init__(self, device_id=0):
            self.device_id = device_id

    class Stream:
        def __init__(self, cumem_stream):
            self._s = cumem_stream
            self.device = Device(cumem_stream.device.ordinal)

        def __cuda_stream__(self):
            return (0, self._s.native)

    core.MemoryResource, core.Buffer, core.Device, core.Stream = MemoryResource, Buffer, Device, Stream
    return core


@pytest.fixture
def core(monkeypatch):
    fake = make_fake_cuda_core()
    cuda = types.ModuleType("cuda")
    cuda.core = fake
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.core", fake)
    import cumem.cuda_core as adapter
    importlib.reload(adapter)  # a fresh adapter class over this fake
    yield fake
    importlib.reload(adapter)


def test_without_cuda_core_it_says_so(monkeypatch, host):
    monkeypatch.setitem(sys.modules, "cuda.core", None)
    import cumem.cuda_core as adapter
    importlib.reload(adapter)
    with pytest.raises(ImportError, match="needs cuda.core"):
        adapter.memory_resource(host)
    assert adapter.buffer_of(object()) is None


def test_a_resource_is_a_cuda_core_memory_resource(core, host):
    mr = host.to_cuda_core()
    assert isinstance(mr, core.MemoryResource)
    assert mr.resource is host
    assert mr.is_host_accessible and not mr.is_device_accessible
    assert mr.device_id == -1 and not mr.is_managed
    buf = mr.allocate(1000, stream=None)
    assert isinstance(buf, core.Buffer) and buf.memory_resource is mr and buf.size == 1000
    assert host.statistics()["bytes_in_use"] == 1000
    inner = cumem.as_buffer(buf)
    assert inner.ptr == buf.handle, "the very libcumem buffer behind it, no copy"
    inner.fill(3)
    assert inner.read(0, 2) == b"\x03\x03"
    buf.close()
    assert host.statistics()["bytes_in_use"] == 0
    assert buf.handle == 0
    with pytest.raises(ValueError, match="was not allocated by this libcumem memory resource"):
        mr.deallocate(12345, 8, stream=None)
    empty = mr.allocate(0, stream=None)
    assert empty.handle == 0
    empty.close()


def test_positional_stream_of_older_cuda_core(core, host):
    mr = cumem.cuda_core.memory_resource(host)
    buf = mr.allocate(64, None)  # stream as a positional argument
    mr.deallocate(buf.handle, 64, None)
    assert host.statistics()["live_allocations"] == 0


def test_buffers_both_ways_without_copies(core, host):
    b = host.allocate(32)
    b.write(bytes(range(32)))
    as_core = b.to_cuda_core()
    assert isinstance(as_core, core.Buffer) and as_core.handle == b.ptr and as_core.owner is b
    # A cuda.core Buffer from elsewhere: wrapped, kept alive while used.
    foreign = core.Buffer.from_handle(b.ptr, 32, owner=b)
    alive = weakref.ref(foreign)
    view = cumem.as_buffer(foreign)
    assert view.ptr == b.ptr and view.read(31, 1) == b"\x1f"
    del foreign
    gc.collect()
    assert alive() is not None
    view.release()
    del view
    gc.collect()
    assert alive() is None


@pytest.mark.device
def test_cuda_core_streams_and_devices(core, device):
    s = cumem.Stream(device)
    theirs = core.Stream(s)
    mr = cumem.cuda_core.caching_memory_resource(core.Device(0))
    assert mr.is_device_accessible and mr.device_id == 0
    buf = mr.allocate(4096, stream=theirs)
    inner = cumem.as_buffer(buf)
    assert inner._stream.native == s.native, "allocated on the cuda.core stream"
    inner.fill(1, stream=theirs)
    buf.close(stream=theirs)
    assert mr.resource.caching_statistics()["bytes_cached"] >= 4096
    r = cumem.Resource.device(core.Device(0))
    assert r.properties()["device_id"] == 0
