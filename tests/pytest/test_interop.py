"""Other libraries' objects where libcumem takes its own: streams with
__cuda_stream__ (kept alive while used), devices with device_id, memory by
pointer and owner (from_handle, wrap), the CUDA array interface both ways,
and as_buffer."""
import ctypes
import gc
import weakref

import pytest

import cumem


class ForeignStream:
    """A stream of another library: the CUDA stream protocol, as cuda.core's
    Stream has it (a method; `device` with a device_id)."""

    def __init__(self, stream, as_property=False, version=0):
        self._stream = stream  # the cumem.Stream whose CUstream this is
        self.device = type("Dev", (), {"device_id": stream.device.ordinal})()
        self._version = version
        if as_property:
            self.__cuda_stream__ = (version, stream.native)

    def __cuda_stream__(self):
        return (self._version, self._stream.native)


class ForeignDevice:
    def __init__(self, ordinal):
        self.device_id = ordinal


class CaiArray:
    """An array of another library: __cuda_array_interface__ version 3 over
    `nbytes` at `ptr` (kept alive through `owner`)."""

    def __init__(self, ptr, shape, typestr="|u1", strides=None, stream=None, owner=None):
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": strides, "stream": stream}


def test_a_stream_argument_that_is_not_a_stream_is_refused(host):
    b = host.allocate(16)
    with pytest.raises(TypeError, match="a stream is a cumem.Stream, an object with __cuda_stream__"):
        b.fill(0, stream=7)
    with pytest.raises(TypeError, match="cumem.Stream.wrap"):
        host.allocate(16, object())


def test_devices_of_other_libraries():
    with pytest.raises(TypeError, match="device_id"):
        cumem.Resource.device(object())
    with pytest.raises(TypeError):
        cumem.Resource.device(True)


@pytest.mark.device
def test_devices_with_device_id(device):
    assert cumem._device(ForeignDevice(0)).handle == device.handle
    assert device.device_id == 0
    r = cumem.Resource.device(ForeignDevice(0))
    assert r.properties()["device_id"] == 0


@pytest.mark.device
@pytest.mark.parametrize("as_property", [False, True])
def test_foreign_streams_everywhere(device, host, as_property):
    mine = cumem.Stream(device)
    theirs = ForeignStream(mine, as_property)
    d = device.memory_resource
    b = d.allocate(4096, theirs)
    assert b._stream.native == mine.native  # wrapped, not a new stream
    b.fill(7, stream=theirs)
    h = host.allocate(4096)
    b.copy_to(h, stream=theirs)
    assert h.read(0, 4, stream=theirs) == b"\x07" * 4
    e = cumem.Event(device).record(theirs)
    e.synchronize()
    mine.wait(theirs)
    assert isinstance(mine.__cuda_stream__(), tuple) and mine.__cuda_stream__()[1] == mine.native
    b.close(theirs)


@pytest.mark.device
def test_a_stream_protocol_of_another_version_is_refused(device):
    mine = cumem.Stream(device)
    with pytest.raises(TypeError, match="version 1"):
        device.memory_resource.allocate(16, ForeignStream(mine, version=1))


@pytest.mark.device
def test_the_foreign_stream_outlives_the_users_reference(device):
    mine = cumem.Stream(device)
    theirs = ForeignStream(mine)
    alive = weakref.ref(theirs)
    b = device.memory_resource.allocate(1 << 16, theirs)
    del theirs
    gc.collect()
    assert alive() is not None, "the buffer's deallocation stream keeps the stream object alive"
    b.release()
    del b
    gc.collect()
    assert alive() is None


@pytest.mark.device
def test_graph_builder_like_objects_give_their_stream(device):
    mine = cumem.Stream(device)
    builder = type("GraphBuilder", (), {"stream": ForeignStream(mine)})()
    assert cumem._stream(builder).native == mine.native


def test_from_handle_keeps_the_owner_and_wrap_releases_once(host):
    memory = (ctypes.c_char * 64)()
    owner = bytearray(b"owner")
    alive = weakref.ref(memory)
    b = cumem.Buffer.from_handle(ctypes.addressof(memory), 64, owner=memory)
    del memory
    gc.collect()
    assert alive() is not None
    b.fill(9)
    view = b.slice(8, 8)  # a slice keeps the wrapped buffer alive
    b.release()
    gc.collect()
    assert alive() is not None
    assert view.read() == b"\x09" * 8
    view.release()
    del view
    gc.collect()
    assert alive() is None, "libcumem dropped the owner when it was done"

    released = []
    data = (ctypes.c_char * 16)()
    w = cumem.Buffer.wrap(ctypes.addressof(data), 16, release=lambda p, n: released.append((p, n)),
                          owner=owner)
    w.close()
    w.release()
    assert released == [(ctypes.addressof(data), 16)]


def test_wrap_owned_and_raw_allocation(host):
    p = host.allocate_raw(100)
    assert p and host.statistics()["bytes_in_use"] == 100
    b = cumem.Buffer.wrap_owned(host, p, 100)
    assert b.ptr == p
    b.close()
    assert host.statistics()["bytes_in_use"] == 0
    q = host.allocate_raw(10)
    host.deallocate_raw(q, 10)
    assert host.statistics()["live_allocations"] == 0


def test_host_memory_has_no_cuda_array_interface(host):
    b = host.allocate(8)
    assert not hasattr(b, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="memory a device can access"):
        b.cuda_array_view("float32")


@pytest.mark.device
def test_cuda_array_interface_of_device_memory(device):
    s = cumem.Stream(device)
    b = device.memory_resource.allocate(64, s)
    cai = b.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["shape"] == (64,) and cai["typestr"] == "|u1" and cai["strides"] is None
    assert cai["data"] == (b.ptr, False)
    assert cai["stream"] == s.native, "the stream its work is ordered on"
    unordered = device.memory_resource.allocate(64)
    assert unordered.__cuda_array_interface__["stream"] == 1, "the legacy default stream"
    view = b.cuda_array_view("float32", shape=(4, 4))
    assert view.__cuda_array_interface__["typestr"] == "<f4"
    assert view.__cuda_array_interface__["shape"] == (4, 4)
    assert b.slice(0, 16).__cuda_array_interface__["stream"] == s.native, "a slice: its parent's"
    with pytest.raises(ValueError, match="needs 128 bytes"):
        b.cuda_array_view("float64", shape=(16,))
    with pytest.raises(ValueError, match="no CUDA-array-interface typestr"):
        b.cuda_array_view("bfloat16")


@pytest.mark.device
def test_as_buffer_takes_cuda_array_interface_exporters(device):
    source = device.memory_resource.allocate(256)
    source.fill(5)
    array = CaiArray(source.ptr, (16, 4), "<f4", owner=source)
    alive = weakref.ref(array)
    b = cumem.as_buffer(array)
    assert b.ptr == source.ptr and b.size == 256
    del array
    gc.collect()
    assert alive() is not None, "the array stays alive while the buffer uses its memory"
    host = cumem.Resource.host().allocate(256)
    b.copy_to(host)
    assert host.read(0, 4) == b"\x05" * 4
    # C-contiguous strides are taken, others refused.
    assert cumem.as_buffer(CaiArray(source.ptr, (4, 4), "<f4", strides=(16, 4))).size == 64
    with pytest.raises(ValueError, match="not contiguous"):
        cumem.as_buffer(CaiArray(source.ptr, (4, 4), "<f4", strides=(4, 16)))
    with pytest.raises(ValueError, match="stream 0"):
        cumem.as_buffer(CaiArray(source.ptr, (4,), "<f4", stream=0))
    # The producer's stream is waited for by libcumem's next work.
    s = cumem.Stream(device)
    assert cumem.as_buffer(CaiArray(source.ptr, (4,), "<f4", stream=s.native)).size == 16
    assert cumem.as_buffer(b) is b
    with pytest.raises(TypeError, match="cannot view a object"):
        cumem.as_buffer(object())


def test_as_buffer_takes_dlpack_exporters(host):
    b = host.allocate(32)
    b.write(bytes(range(32)))
    view = cumem.as_buffer(b.dlpack_view())
    assert view.ptr == b.ptr and view.read(31, 1) == b"\x1f"


def test_buffer_resource_and_accessibility(host):
    b = host.allocate(8)
    assert b.resource.handle == host.handle
    assert b.is_host_accessible and not b.is_device_accessible
    assert cumem.Buffer.from_handle(b.ptr, 8).resource is None
    assert "host" in repr(b)
