"""IPC (cuda.core's IPCAllocationHandle and IPCBufferDescriptor): a pool
exported as an allocation handle (a file descriptor and the pool's
descriptor), buffers shared by their descriptors, and both sent over Unix
sockets. See cumem.h, "IPC", and the README's IPC trust model."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check, _out, _Handle

_V = ctypes.c_void_p
DESCRIPTOR_SIZE = 160  # CUMEM_IPC_DESCRIPTOR_SIZE
MAX_DESCRIPTORS = 1024  # per message, cumem_ipc_send


class _CDescriptor(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint8 * DESCRIPTOR_SIZE)]


_S = _lib.status_t
_D = ctypes.POINTER(_CDescriptor)
for _name, _res, _args in [
    ("cumem_resource_get_allocation_handle", _S, [_V, _lib.c_void_pp]),
    ("cumem_allocation_handle_release", _S, [_V]),
    ("cumem_allocation_handle_fd", _S, [_V, ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_allocation_handle_dup_fd", _S, [_V, ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_allocation_handle_descriptor", _S, [_V, _D]),
    ("cumem_allocation_handle_from_fd", _S, [_D, ctypes.c_int32, _lib.c_void_pp]),
    ("cumem_allocation_handle_from_pid", _S, [_D, ctypes.c_int32, ctypes.c_int32, _lib.c_void_pp]),
    ("cumem_resource_from_allocation_handle", _S, [_V, _V, _lib.c_void_pp]),
    ("cumem_buffer_get_ipc_descriptor", _S, [_V, _D]),
    ("cumem_buffer_from_ipc_descriptor", _S, [_V, _D, _V, _lib.c_void_pp]),
    ("cumem_ipc_send", _S, [ctypes.c_int32, _V, _D, ctypes.c_uint32]),
    ("cumem_ipc_receive", _S, [ctypes.c_int32, _lib.c_void_pp, _D, ctypes.c_uint32,
                               ctypes.POINTER(ctypes.c_uint32)]),
]:
    _lib._declare(_name, _res, *_args)


def _rebuild_descriptor(data):
    return IpcDescriptor(data)


class IpcDescriptor:
    """A pool's or a buffer's descriptor: 160 plain bytes (bytes(d)), safe to
    copy and send over any channel; libcumem validates every field when it
    is opened (Buffer.from_ipc_descriptor, AllocationHandle.from_fd).

    Descriptors pickle as their bytes, so they travel through
    multiprocessing queues and pipes. Trust: unpickling one only makes the
    object; opening it maps memory of a pool you imported from its
    exporter. A peer that can send you descriptors can name memory of pools
    you imported from it (or from others who shared with you) and nothing
    else; it can send garbage, which is refused, and it can free its memory
    early, after which your mapping may read stale data. Pickle itself is
    not safe against a hostile sender: never unpickle data from a peer you
    do not trust (send bytes(d) and rebuild with IpcDescriptor(data)
    instead); see the README's IPC trust model."""

    __slots__ = ("_bytes",)

    def __init__(self, data):
        data = bytes(data)
        if len(data) != DESCRIPTOR_SIZE:
            raise ValueError(f"an IPC descriptor is {DESCRIPTOR_SIZE} bytes, not {len(data)}")
        self._bytes = data

    def __bytes__(self):
        return self._bytes

    def __eq__(self, other):
        return isinstance(other, IpcDescriptor) and other._bytes == self._bytes

    def __hash__(self):
        return hash(self._bytes)

    def __reduce__(self):
        return (_rebuild_descriptor, (self._bytes,))

    def __repr__(self):
        return f"cumem.IpcDescriptor({self._bytes[:8].hex()}...)"

    def _c(self):
        d = _CDescriptor()
        ctypes.memmove(d.bytes, self._bytes, DESCRIPTOR_SIZE)
        return d

    @classmethod
    def _from_c(cls, d):
        return cls(bytes(d.bytes))


def _rebuild_handle(descriptor, dup):
    return AllocationHandle.from_fd(descriptor, dup.detach())


class AllocationHandle(_Handle):
    """An exported pool (cuda.core's IPCAllocationHandle): a file descriptor,
    owned by the handle, and the pool's descriptor. Send both to another
    process (ipc_send, or any channel that carries file descriptors), which
    imports the pool with Resource.from_allocation_handle.

    Pickling works inside multiprocessing (a Pool's or a Process's
    arguments, a Queue of a spawn or forkserver context): the file
    descriptor is duplicated into the receiving process by
    multiprocessing.reduction.DupFd. The trust caveat of IpcDescriptor
    applies."""

    _release = staticmethod(lib.cumem_allocation_handle_release)

    @property
    def fd(self):
        """The file descriptor, borrowed: valid while the handle lives; do not close it."""
        fd = ctypes.c_int32()
        _check(lib.cumem_allocation_handle_fd(self.handle, ctypes.byref(fd)))
        return fd.value

    def dup_fd(self):
        """A duplicate of the file descriptor (close-on-exec), yours to close."""
        fd = ctypes.c_int32()
        _check(lib.cumem_allocation_handle_dup_fd(self.handle, ctypes.byref(fd)))
        return fd.value

    @property
    def descriptor(self):
        """The pool's descriptor, to send along with the file descriptor."""
        d = _CDescriptor()
        _check(lib.cumem_allocation_handle_descriptor(self.handle, ctypes.byref(d)))
        return IpcDescriptor._from_c(d)

    @classmethod
    def from_fd(cls, descriptor, fd):
        """A handle from a pool descriptor and a file descriptor received with
        it; on success the handle owns `fd` (on failure the caller still does)."""
        d = _as_descriptor(descriptor)._c()
        return cls(_out(lib.cumem_allocation_handle_from_fd, ctypes.byref(d), int(fd)))

    @classmethod
    def from_pid(cls, descriptor, pid, remote_fd):
        """A handle from a pool descriptor and the number of its file descriptor
        in process `pid` (pidfd_getfd: Linux 5.6+, needs permission to ptrace it).
        `pid` is the exporter's pid in this PID namespace; between containers
        send the handle over a socket (`ipc_send`) instead."""
        d = _as_descriptor(descriptor)._c()
        return cls(_out(lib.cumem_allocation_handle_from_pid, ctypes.byref(d), int(pid),
                        int(remote_fd)))

    def __reduce__(self):
        from multiprocessing.reduction import DupFd
        return (_rebuild_handle, (self.descriptor, DupFd(self.fd)))


def _as_descriptor(d):
    return d if isinstance(d, IpcDescriptor) else IpcDescriptor(d)


def _fileno(sock):
    return sock.fileno() if hasattr(sock, "fileno") else int(sock)


def ipc_send(sock, handle=None, descriptors=()):
    """Sends one message over a connected Unix socket (or its fd): the
    allocation handle's file descriptor and pool descriptor when `handle`
    is given, then the descriptors (at most 1024 in all). Blocks until all
    is sent."""
    descriptors = [_as_descriptor(d) for d in descriptors]
    if len(descriptors) > MAX_DESCRIPTORS:
        raise ValueError(f"ipc_send: {len(descriptors)} descriptors; at most {MAX_DESCRIPTORS} "
                         "a message")
    array = (_CDescriptor * max(len(descriptors), 1))(*(d._c() for d in descriptors))
    _check(lib.cumem_ipc_send(_fileno(sock), handle.handle if handle is not None else None,
                              array if descriptors else None, len(descriptors)))


def ipc_receive(sock, capacity=MAX_DESCRIPTORS):
    """Receives one message sent by ipc_send: (AllocationHandle or None,
    [IpcDescriptor, ...])."""
    array = (_CDescriptor * max(int(capacity), 1))()
    handle = _V()
    count = ctypes.c_uint32()
    _check(lib.cumem_ipc_receive(_fileno(sock), ctypes.byref(handle), array, int(capacity),
                                 ctypes.byref(count)))
    h = AllocationHandle(handle.value) if handle.value else None
    return h, [IpcDescriptor._from_c(array[i]) for i in range(count.value)]


def get_allocation_handle(resource):
    return AllocationHandle(_out(lib.cumem_resource_get_allocation_handle, resource.handle))


def resource_from_allocation_handle(resource_cls, handle, device=None):
    from . import _device
    d = _device(device) if device is not None else None
    h = _out(lib.cumem_resource_from_allocation_handle, d.handle if d else None, handle.handle)
    return resource_cls(h, (d,) if d else ())


def buffer_descriptor(buffer):
    d = _CDescriptor()
    _check(lib.cumem_buffer_get_ipc_descriptor(buffer.handle, ctypes.byref(d)))
    return IpcDescriptor._from_c(d)


def buffer_from_descriptor(buffer_cls, resource, descriptor, stream):
    from . import _stream
    d = _as_descriptor(descriptor)._c()
    s = _stream(stream)
    b = buffer_cls(_out(lib.cumem_buffer_from_ipc_descriptor, resource.handle, ctypes.byref(d), s))
    b._stream = s
    b._resource = resource  # imported resources are kept alive by their buffers anyway
    return b

