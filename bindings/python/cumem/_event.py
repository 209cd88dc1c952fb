"""Events (cuda.core's Event): record on a stream, wait, time, and share
with another process (an interprocess event's 64-byte handle)."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check, _out, _stream, _device, _Handle

_V = ctypes.c_void_p


class EventOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("enable_timing", ctypes.c_uint32),
                ("blocking_sync", ctypes.c_uint32), ("interprocess", ctypes.c_uint32)]


class IpcEventHandle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint8 * 64)]


_S = _lib.status_t
for _name, _res, _args in [
    ("cumem_event_create", _S, [_V, ctypes.POINTER(EventOptions), _lib.c_void_pp]),
    ("cumem_event_release", _S, [_V]),
    ("cumem_event_record", _S, [_V, _V]),
    ("cumem_event_synchronize", _S, [_V]),
    ("cumem_event_query", _S, [_V, ctypes.POINTER(ctypes.c_uint32)]),
    ("cumem_event_elapsed_ms", _S, [_V, _V, ctypes.POINTER(ctypes.c_float)]),
    ("cumem_event_native", _S, [_V, _lib.c_void_pp]),
    ("cumem_event_get_ipc_handle", _S, [_V, ctypes.POINTER(IpcEventHandle)]),
    ("cumem_event_from_ipc_handle", _S, [_V, ctypes.POINTER(IpcEventHandle), _lib.c_void_pp]),
    ("cumem_stream_wait_event", _S, [_V, _V]),
]:
    _lib._declare(_name, _res, *_args)


class Event(_Handle):
    """A CUDA event of `device` (cuda.core's Event): enable_timing for
    elapsed times, blocking_sync to sleep rather than spin in synchronize,
    interprocess to share it with another process (get_ipc_handle; needs
    enable_timing False)."""

    _release = staticmethod(lib.cumem_event_release)

    def __init__(self, device=0, enable_timing=False, blocking_sync=False, interprocess=False,
                 _handle=None):
        self.device = _device(device)
        if _handle is None:
            o = EventOptions(ctypes.sizeof(EventOptions), int(bool(enable_timing)),
                             int(bool(blocking_sync)), int(bool(interprocess)))
            _handle = _out(lib.cumem_event_create, self.device.handle, ctypes.byref(o))
        super().__init__(_handle)

    def record(self, stream=None):
        """Records the work queued so far on `stream` (None: the legacy default
        stream; any stream object, see cumem.Stream)."""
        s = _stream(stream, self.device.ordinal)
        _check(lib.cumem_event_record(self.handle, s))
        return self

    def synchronize(self):
        _check(lib.cumem_event_synchronize(self.handle))

    sync = synchronize  # cuda.core's name

    @property
    def is_done(self):
        """Whether the recorded work has finished (never blocks)."""
        done = ctypes.c_uint32()
        _check(lib.cumem_event_query(self.handle, ctypes.byref(done)))
        return bool(done.value)

    def elapsed_ms(self, end):
        """Milliseconds from this event to `end` (both recorded, completed and
        made with enable_timing)."""
        ms = ctypes.c_float()
        _check(lib.cumem_event_elapsed_ms(self.handle, end.handle, ctypes.byref(ms)))
        return ms.value

    def __sub__(self, start):
        """end - start: the milliseconds between them (cuda.core's spelling)."""
        return start.elapsed_ms(self)

    @property
    def native(self):
        """The CUevent (an int), valid while this object lives."""
        return _out(lib.cumem_event_native, self.handle) or 0

    def get_ipc_handle(self):
        """The 64 bytes another process opens with Event.from_ipc_handle (an
        event made with interprocess=True)."""
        h = IpcEventHandle()
        _check(lib.cumem_event_get_ipc_handle(self.handle, ctypes.byref(h)))
        return bytes(h.bytes)

    @classmethod
    def from_ipc_handle(cls, device, handle):
        """Opens another process's interprocess event on `device` from its 64 bytes."""
        data = bytes(handle)
        if len(data) != 64:
            raise ValueError(f"an event's IPC handle is 64 bytes, not {len(data)}")
        h = IpcEventHandle()
        ctypes.memmove(h.bytes, data, 64)
        d = _device(device)
        return cls(d, _handle=_out(lib.cumem_event_from_ipc_handle, d.handle, ctypes.byref(h)))

    def __repr__(self):
        return f"cumem.Event(device={self.device.ordinal})"
