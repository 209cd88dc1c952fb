"""What communication engines use (cumem.h "Communication engines"): a
buffer's memory as a dma-buf file descriptor for RDMA registration, and the
unmap notifications a registration cache subscribes to."""
import ctypes
import os
import threading

from . import _lib
from ._lib import lib
from . import _check

_V = ctypes.c_void_p
_S = _lib.status_t

#: cumem_buffer_get_dmabuf's flag: map the dma-buf through PCIe BAR1.
DMABUF_MAPPING_PCIE = 0x1

#: cumem_unmap_reason_t, by value.
UNMAP_REASONS = {1: "virtual", 2: "cache_release", 3: "free", 4: "pool_trim", 5: "pool_destroy"}


class _CDmabuf(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("fd", ctypes.c_int32),
                ("offset", ctypes.c_uint64), ("length", ctypes.c_uint64),
                ("address", ctypes.c_uint64), ("device_id", ctypes.c_int32),
                ("whole_allocation", ctypes.c_uint32)]


class _CUnmapEvent(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reason", ctypes.c_int32),
                ("address", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("resource_id", ctypes.c_uint64), ("device_id", ctypes.c_int32),
                ("reserved0", ctypes.c_uint32)]


# cumem_unmap_callback_t: (event, user_data).
UnmapCallback = ctypes.CFUNCTYPE(None, ctypes.POINTER(_CUnmapEvent), ctypes.c_void_p)

for _name, _res, _args in [
    ("cumem_buffer_get_dmabuf", _S, [_V, ctypes.c_uint32, ctypes.POINTER(_CDmabuf)]),
    ("cumem_unmap_subscribe", _S, [UnmapCallback, _V, ctypes.POINTER(ctypes.c_uint64)]),
    ("cumem_unmap_unsubscribe", _S, [ctypes.c_uint64]),
]:
    _lib._declare(_name, _res, *_args)


class DmaBuf:
    """A buffer's memory as a dma-buf: ``fd`` (owned: closed by close(), at
    the end of a ``with`` block or when collected; ``detach()`` hands it
    over), ``offset`` of the buffer in the fd's range, ``length`` of the
    range, ``address`` of its first byte, ``device_id`` and
    ``whole_allocation``."""

    def __init__(self, c):
        self.fd = c.fd
        self.offset = c.offset
        self.length = c.length
        self.address = c.address
        self.device_id = c.device_id
        self.whole_allocation = bool(c.whole_allocation)

    def detach(self):
        """The fd, now the caller's to close."""
        fd, self.fd = self.fd, -1
        return fd

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"DmaBuf(fd={self.fd}, offset={self.offset}, length={self.length}, "
                f"address=0x{self.address:x}, device_id={self.device_id}, "
                f"whole_allocation={self.whole_allocation})")


def get_dmabuf(buffer, flags=0):
    d = _CDmabuf(ctypes.sizeof(_CDmabuf))
    _check(lib.cumem_buffer_get_dmabuf(buffer.handle, int(flags), ctypes.byref(d)))
    return DmaBuf(d)


class UnmapSubscription:
    """A subscription made by subscribe_unmap; unsubscribe() (or the end of
    a ``with`` block) ends it."""

    def __init__(self, fn):
        def deliver(event, _user_data):
            e = event.contents
            try:
                fn({"reason": UNMAP_REASONS.get(e.reason, e.reason), "address": e.address,
                    "size": e.size, "resource_id": e.resource_id, "device_id": e.device_id})
            except Exception:  # a callback must not unwind into libcumem
                pass

        self._callback = UnmapCallback(deliver)  # kept alive while subscribed
        v = ctypes.c_uint64()
        _check(lib.cumem_unmap_subscribe(self._callback, None, ctypes.byref(v)))
        self.id = v.value
        with _live_lock:
            _live[self.id] = self

    def unsubscribe(self):
        if not self.id:
            return
        _check(lib.cumem_unmap_unsubscribe(self.id))
        with _live_lock:
            _live.pop(self.id, None)
        self.id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unsubscribe()


# Subscriptions stay alive (their ctypes callback with them) until unsubscribed.
_live = {}
_live_lock = threading.Lock()


def subscribe_unmap(fn):
    """Calls fn(event) before libcumem gives device memory back, where a
    registration cache must drop what it registered: event is a dict with
    "reason" ("virtual", "cache_release", "free", "pool_trim",
    "pool_destroy"), "address" and "size" (0 and 0 for a pool: the range is
    not known), "resource_id" and "device_id". Called on the thread that
    frees, possibly inside a libcumem call that holds the resource's lock:
    fn must not call cumem (it may unsubscribe). Returns an
    UnmapSubscription."""
    return UnmapSubscription(fn)
