"""Virtual memory (cuda.core's VirtualMemoryResource): the options, the
access values and virtual IPC handles. Resource.virtual_memory,
Buffer.resize and the Resource.virtual_* methods call into here."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check, _out, _Handle, _device

# cuda.core's names for the options, as libcumem's values.
LOCATION_TYPES = {"device": 1, "host": 2, "host_numa": 3}
GRANULARITIES = {"recommended": 0, "minimum": 1}
HANDLE_TYPES = {None: 0, "posix_fd": 1, "fabric": 8}
ACCESS = {None: 0, "r": 1, "rw": 3}
ACCESS_NAMES = {v: k for k, v in ACCESS.items()}


def options(device, location_type="device", location_id=0, granularity="recommended",
            handle_type=None, gpu_direct_rdma=False, addr_hint=0, addr_align=0, chunk_size=0,
            reserve_size=0, peers=(), peer_access="rw", nccl_qualified=False):
    """cumem_virtual_resource_options_t from cuda.core's option names.
    handle_type: None, "posix_fd", "fabric" or a list of them."""
    if location_type not in LOCATION_TYPES:
        raise ValueError(f"location_type {location_type!r} is not one of {sorted(LOCATION_TYPES)}")
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity {granularity!r} is not one of {sorted(GRANULARITIES)}")
    if peer_access not in ("rw", "r"):
        raise ValueError(f"peer_access {peer_access!r} is not 'rw' or 'r'")
    kinds = handle_type if isinstance(handle_type, (list, tuple)) else [handle_type]
    bits = 0
    for k in kinds:
        if k not in HANDLE_TYPES:
            raise ValueError(f"handle_type {k!r} is not one of None, 'posix_fd', 'fabric'")
        bits |= HANDLE_TYPES[k]
    o = _lib.VirtualResourceOptions(ctypes.sizeof(_lib.VirtualResourceOptions))
    o.location = _lib.Location(LOCATION_TYPES[location_type],
                               device.ordinal if location_type == "device" else int(location_id))
    o.granularity = GRANULARITIES[granularity]
    o.handle_types = bits
    o.gpu_direct_rdma = 1 if gpu_direct_rdma else 0
    o.address_hint = int(addr_hint)
    o.alignment = int(addr_align)
    o.chunk_size = int(chunk_size)
    o.reserve_size = int(reserve_size)
    ordinals = [p.ordinal if hasattr(p, "ordinal") else int(p) for p in peers]
    keep = (ctypes.c_int32 * len(ordinals))(*ordinals)
    if ordinals:
        o.peers = ctypes.cast(keep, ctypes.POINTER(ctypes.c_int32))
    o.peer_count = len(ordinals)
    o.peers_read_only = 1 if peer_access == "r" else 0
    o.nccl_qualified = 1 if nccl_qualified else 0
    return o, keep


def statistics(resource):
    s = _lib.VirtualStatistics(ctypes.sizeof(_lib.VirtualStatistics))
    _check(lib.cumem_virtual_resource_get_statistics(resource.handle, ctypes.byref(s)))
    return {k: getattr(s, k) for k, _ in _lib.VirtualStatistics._fields_[2:]}


def set_access(resource, peer, access):
    if access not in ACCESS:
        raise ValueError(f"access {access!r} is not 'rw', 'r' or None")
    d = _device(peer)  # alive across the call
    _check(lib.cumem_virtual_resource_set_access(resource.handle, d.handle, ACCESS[access]))


def get_access(resource, peer):
    v = ctypes.c_int32()
    d = _device(peer)  # alive across the call
    _check(lib.cumem_virtual_resource_get_access(resource.handle, d.handle, ctypes.byref(v)))
    return ACCESS_NAMES[v.value]


class VirtualIpcHandle(_Handle):
    """A virtual buffer's chunks as file descriptors (owned) and the
    descriptor that lists them: Buffer.get_virtual_ipc_handle(),
    ipc_receive_virtual(), or from_fds()."""

    _release = staticmethod(lib.cumem_virtual_ipc_handle_release)

    @classmethod
    def from_fds(cls, descriptor, fds):
        """Rebuilds a handle from the descriptor's bytes and the chunks' fds, in
        order; on success the handle owns the fds."""
        data = bytes(descriptor)
        arr = (ctypes.c_int32 * len(fds))(*[int(f) for f in fds])
        return cls(_out(lib.cumem_virtual_ipc_handle_from_fds, data, len(data), arr, len(fds)))

    @classmethod
    def from_pid(cls, descriptor, pid, remote_fds):
        """Rebuilds a handle from the descriptor's bytes and the numbers of the
        chunks' fds in the exporting process `pid` (taken with pidfd_getfd)."""
        data = bytes(descriptor)
        arr = (ctypes.c_int32 * len(remote_fds))(*[int(f) for f in remote_fds])
        return cls(_out(lib.cumem_virtual_ipc_handle_from_pid, data, len(data), int(pid), arr,
                        len(remote_fds)))

    @classmethod
    def of_native(cls, resource, ptr, size=0):
        """The pages of a native allocation `ptr` of `resource` (a virtual
        resource, or an expandable cache made with handle_types), shared as
        `size` bytes (0: all of the block)."""
        return cls(_out(lib.cumem_resource_get_virtual_ipc_handle_native, resource.handle,
                        ctypes.c_void_p(int(ptr)), int(size)))

    @property
    def fds(self):
        """The chunks' file descriptors, borrowed: valid while the handle lives."""
        n = ctypes.c_uint32()
        _check(lib.cumem_virtual_ipc_handle_fd_count(self.handle, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            fd = ctypes.c_int32()
            _check(lib.cumem_virtual_ipc_handle_fd(self.handle, i, ctypes.byref(fd)))
            out.append(fd.value)
        return out

    @property
    def descriptor(self):
        """The descriptor's bytes."""
        n = ctypes.c_size_t()
        _check(lib.cumem_virtual_ipc_handle_descriptor(self.handle, None, 0, ctypes.byref(n)))
        buf = ctypes.create_string_buffer(n.value)
        _check(lib.cumem_virtual_ipc_handle_descriptor(self.handle, buf, n.value, ctypes.byref(n)))
        return buf.raw[:n.value]


def _fileno(sock):
    return sock.fileno() if hasattr(sock, "fileno") else int(sock)


def ipc_send_virtual(sock, handle):
    """Sends a VirtualIpcHandle over a connected Unix socket (or its fd)."""
    _check(lib.cumem_ipc_send_virtual(_fileno(sock), handle.handle))


def ipc_receive_virtual(sock):
    """Receives a VirtualIpcHandle sent by ipc_send_virtual."""
    return VirtualIpcHandle(_out(lib.cumem_ipc_receive_virtual, _fileno(sock)))


__all__ = ["VirtualIpcHandle", "ipc_send_virtual", "ipc_receive_virtual"]
