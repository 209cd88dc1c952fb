"""IPC from Python on the host shared resource (host memory other processes
map; needs no driver): descriptors and their pickling, allocation handles
(file descriptors, dup, from_fd), a pool and a buffer handed to a child by
multiprocessing (spawn: the handle's fd crosses by DupFd) and by
ipc_send/ipc_receive over a socket pair, and refusals."""
import multiprocessing
import os
import pickle
import socket

import pytest

import cumem

CAPACITY = 1 << 20


def child_opens_and_replies(handle, descriptor, expected):
    """In the child: import the pool, open the buffer, check it, write a reply."""
    resource = cumem.Resource.from_allocation_handle(handle)
    assert resource.properties()["is_imported"]
    b = cumem.Buffer.from_ipc_descriptor(resource, descriptor)
    assert b.read(0, len(expected)) == expected, b.read(0, len(expected))
    b.write(b"reply", offset=100)
    b.close()


def test_descriptors_are_plain_bytes_and_pickle(host):
    r = cumem.Resource.host_shared(CAPACITY)
    b = r.allocate(256)
    d = b.get_ipc_descriptor()
    assert isinstance(d, cumem.IpcDescriptor) and len(bytes(d)) == 160
    assert pickle.loads(pickle.dumps(d)) == d
    assert cumem.IpcDescriptor(bytes(d)) == d
    assert hash(cumem.IpcDescriptor(bytes(d))) == hash(d)
    with pytest.raises(ValueError, match="160 bytes, not 3"):
        cumem.IpcDescriptor(b"abc")
    with pytest.raises(cumem.CumemError) as e:
        host.allocate(8).get_ipc_descriptor()
    assert e.value.status_name == "CUMEM_ERROR_NOT_SUPPORTED"


def test_allocation_handles(host):
    r = cumem.Resource.host_shared(CAPACITY)
    assert r.properties()["ipc_enabled"]
    h = r.get_allocation_handle()
    assert h.fd >= 0
    fd = h.dup_fd()
    assert fd != h.fd
    again = cumem.AllocationHandle.from_fd(h.descriptor, fd)  # owns fd from now on
    assert again.descriptor == h.descriptor
    again.release()
    with pytest.raises(cumem.CumemError) as e:
        cumem.AllocationHandle.from_fd(h.descriptor, -1)
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    broken = bytearray(bytes(h.descriptor))
    broken[20] ^= 0xFF
    with pytest.raises(cumem.CumemError) as e:
        cumem.AllocationHandle.from_fd(bytes(broken), h.dup_fd())
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    with pytest.raises(cumem.CumemError) as e:
        host.get_allocation_handle()
    assert e.value.status_name == "CUMEM_ERROR_NOT_SUPPORTED"


def test_a_child_by_multiprocessing_spawn():
    r = cumem.Resource.host_shared(CAPACITY)
    b = r.allocate(4096)
    b.write(b"hello from the parent")
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=child_opens_and_replies,
                        args=(r.get_allocation_handle(), b.get_ipc_descriptor(),
                              b"hello from the parent"))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert b.read(100, 5) == b"reply"


def test_a_child_by_ipc_send_and_receive():
    r = cumem.Resource.host_shared(CAPACITY)
    b = r.allocate(4096)
    b.write(b"over the socket")
    parent, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # the child: no CUDA is used, so forking is fine
        code = 1
        try:
            parent.close()
            handle, descriptors = cumem.ipc_receive(child_end)
            assert handle is not None and len(descriptors) == 1
            child_opens_and_replies(handle, descriptors[0], b"over the socket")
            # A corrupted descriptor is refused by name.
            imported = cumem.Resource.from_allocation_handle(handle)
            broken = bytearray(bytes(descriptors[0]))
            broken[40] ^= 0x01
            try:
                cumem.Buffer.from_ipc_descriptor(imported, bytes(broken))
            except cumem.CumemError as e:
                code = 0 if e.status_name == "CUMEM_ERROR_INVALID_ARGUMENT" else 3
            else:
                code = 2
        finally:
            os._exit(code)
    child_end.close()
    cumem.ipc_send(parent, r.get_allocation_handle(), [b.get_ipc_descriptor()])
    _, status = os.waitpid(pid, 0)
    parent.close()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert b.read(100, 5) == b"reply"


def test_send_limits_and_a_closed_peer():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with pytest.raises(ValueError, match="at most 1024"):
        cumem.ipc_send(a, None, [bytes(160)] * 1025)
    cumem.ipc_send(a, None, [])
    handle, descriptors = cumem.ipc_receive(b)
    assert handle is None and descriptors == []
    a.close()
    with pytest.raises(cumem.CumemError) as e:
        cumem.ipc_receive(b)
    assert e.value.status_name == "CUMEM_ERROR_INVALID_STATE"
    b.close()


def test_virtual_handles_of_native_allocations_and_from_pid_refuse_by_name(host):
    """VirtualIpcHandle.of_native and .from_pid: what cannot be shared says so."""
    from cumem._virtual import VirtualIpcHandle
    b = host.allocate(64)
    with pytest.raises(cumem.CumemError) as e:
        VirtualIpcHandle.of_native(host, b.ptr)
    assert e.value.status_name == "CUMEM_ERROR_NOT_SUPPORTED"
    assert "virtual IPC handles" in str(e.value)
    cache = cumem.Resource.caching(host)
    with pytest.raises(cumem.CumemError) as e:
        VirtualIpcHandle.of_native(cache, 0)
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    with pytest.raises(cumem.CumemError) as e:
        VirtualIpcHandle.from_pid(b"not a descriptor", os.getpid(), [0])
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    assert "CUMEMVMM" in str(e.value)
    with pytest.raises(ValueError, match="handle_type"):
        cumem.Resource.caching(host, expandable=True, handle_type="fabric")
