"""IPC from Python on the GPU: an IPC-enabled device pool and one of its
buffers handed to a child started by multiprocessing (spawn: the pool's file
descriptor crosses by DupFd, the descriptor by pickling), the child's
writes ordered by an interprocess event; and a legacy device buffer shared
by its descriptor alone."""
import multiprocessing

import pytest

import cumem

pytestmark = pytest.mark.gpu


def child_pool(handle, descriptor, event_handle):
    import cumem
    r = cumem.Resource.from_allocation_handle(handle, device=0)
    b = cumem.Buffer.from_ipc_descriptor(r, descriptor)
    assert b.read(0, 4) == b"\x05" * 4
    s = cumem.Stream(0)
    b.fill(9, stream=s)
    cumem.Event.from_ipc_handle(0, event_handle).record(s)
    s.synchronize()
    b.close(s)


def child_legacy(descriptor):
    import cumem
    r = cumem.Resource.legacy_device(0)
    b = cumem.Buffer.from_ipc_descriptor(r, descriptor)
    assert b.read(0, 4) == b"\x06" * 4
    b.close()


def run_child(target, *args):
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=target, args=args)
    p.start()
    p.join(300)
    assert p.exitcode == 0


def test_a_device_pool_shared_with_a_child():
    pool = cumem.Resource.device(0, new_pool=True, ipc_enabled=True)
    assert pool.properties()["ipc_enabled"]
    b = pool.allocate(1 << 20)
    b.fill(5)
    cumem.Device(0).synchronize()
    done = cumem.Event(0, interprocess=True)
    run_child(child_pool, pool.get_allocation_handle(), b.get_ipc_descriptor(),
              done.get_ipc_handle())
    s = cumem.Stream(0)
    s.wait(done)
    assert b.read(0, 4, stream=s) == b"\x09" * 4


def test_a_legacy_device_buffer_shared_by_its_descriptor():
    legacy = cumem.Resource.legacy_device(0)
    b = legacy.allocate(4096)
    b.fill(6)
    cumem.Device(0).synchronize()
    run_child(child_legacy, b.get_ipc_descriptor())
