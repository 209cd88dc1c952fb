"""libcumem from Python, through ctypes only (no compiled extension).

The library is found through $CUMEM_LIBRARY, next to this package, or on
the loader's search path. Devices, streams, resources, buffers, copies and
fills, kernels compiled at run time and launched (``Program``,
``launch``), DLPack both ways (``Buffer.__dlpack__`` / ``__dlpack_device__`` and
``from_dlpack``), and the framework allocator hook-up (``cumem.torch``,
``cumem.cupy``). Every failure raises ``CumemError`` with the status and
libcumem's message.
"""
import ctypes

from . import _lib
from ._lib import lib, library_path

__all__ = [
    "CumemError", "Device", "Stream", "Resource", "Buffer", "from_dlpack", "device_count",
    "driver_version", "version", "library_path", "set_framework_resource", "framework_resource",
    "DLDeviceType", "Program", "Library", "Kernel", "launch", "launch_config",
    "kernel_arguments", "nvrtc_version", "VirtualIpcHandle", "ipc_send_virtual",
    "ipc_receive_virtual",
]

_V = ctypes.c_void_p


class CumemError(RuntimeError):
    """A failing libcumem call: ``status`` (int), ``status_name`` and ``message``."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = lib.cumem_status_string(self.status).decode()
        self.message = message
        super().__init__(f"{self.status_name}: {message}")


def _check(status):
    if status != 0:
        raise CumemError(status, lib.cumem_last_error_message().decode(errors="replace"))


def _out(fn, *args):
    out = _V()
    _check(fn(*args, ctypes.byref(out)))
    return out.value


def version():
    return lib.cumem_version()


def driver_version():
    v = ctypes.c_int32()
    _check(lib.cumem_driver_version(ctypes.byref(v)))
    return v.value


def device_count():
    n = ctypes.c_int32()
    _check(lib.cumem_device_count(ctypes.byref(n)))
    return n.value


class DLDeviceType:
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13


MEMORY_KINDS = {0: "host", 1: "device", 2: "pinned", 3: "managed"}  # cumem_memory_kind_t


class _Handle:
    _release = None

    def __init__(self, handle):
        self._handle = handle

    @property
    def handle(self):
        """The C handle (an int), valid while this object lives."""
        if not self._handle:
            raise ValueError(f"this {type(self).__name__} was released")
        return self._handle

    def release(self):
        h, self._handle = getattr(self, "_handle", None), None
        if h:
            type(self)._release(h)

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Device(_Handle):
    _release = staticmethod(lib.cumem_device_release)

    def __init__(self, ordinal=0):
        super().__init__(_out(lib.cumem_device_get, int(ordinal)))
        self.ordinal = int(ordinal)

    def synchronize(self):
        _check(lib.cumem_device_synchronize(self.handle))

    def __repr__(self):
        return f"cumem.Device({self.ordinal})"


def _device(d):
    return d if isinstance(d, Device) else Device(d)


class Stream(_Handle):
    _release = staticmethod(lib.cumem_stream_release)

    def __init__(self, device=0, _handle=None):
        self.device = _device(device)
        super().__init__(_handle or _out(lib.cumem_stream_create, self.device.handle, None))

    @classmethod
    def wrap(cls, device, native):
        """A foreign CUstream (an int), not owned."""
        d = _device(device)
        return cls(d, _out(lib.cumem_stream_wrap, d.handle, _V(int(native))))

    @classmethod
    def legacy_default(cls, device=0):
        d = _device(device)
        return cls(d, _out(lib.cumem_stream_legacy_default, d.handle))

    @property
    def native(self):
        return _out(lib.cumem_stream_native, self.handle) or 0

    def synchronize(self):
        _check(lib.cumem_stream_synchronize(self.handle))

    def wait(self, other):
        _check(lib.cumem_stream_wait_stream(self.handle, other.handle))


def _stream(s):
    return None if s is None else s.handle


class Resource(_Handle):
    _release = staticmethod(lib.cumem_resource_release)

    def __init__(self, handle, keep=()):
        super().__init__(handle)
        self._keep = keep  # what the resource was made from (devices, upstreams)

    @classmethod
    def host(cls, alignment=0):
        """Pageable host memory; alignment 0 is the default, 64."""
        o = _lib.HostResourceOptions(ctypes.sizeof(_lib.HostResourceOptions), 0, alignment)
        return cls(_out(lib.cumem_host_resource_create, ctypes.byref(o)))

    @classmethod
    def device(cls, device=0):
        d = _device(device)
        return cls(_out(lib.cumem_device_resource_create, d.handle, None), (d,))

    @classmethod
    def pinned(cls, device=0):
        d = _device(device)
        return cls(_out(lib.cumem_pinned_resource_create, d.handle, None), (d,))

    @classmethod
    def legacy_pinned(cls, device=0):
        d = _device(device)
        return cls(_out(lib.cumem_legacy_pinned_resource_create, d.handle), (d,))

    @classmethod
    def managed(cls, device=0):
        d = _device(device)
        return cls(_out(lib.cumem_managed_resource_create, d.handle, None), (d,))

    @classmethod
    def caching(cls, upstream, expandable=False, page_size=0):
        """The caching adaptor over `upstream`. expandable: large blocks are pieces of
        per-stream address ranges with pages mapped on demand (device memory only;
        page_size 0: 20 MiB), as PyTorch's expandable_segments:True."""
        if not expandable and not page_size:
            return cls(_out(lib.cumem_caching_resource_create, upstream.handle), (upstream,))
        o = _lib.CachingResourceOptions(ctypes.sizeof(_lib.CachingResourceOptions),
                                        1 if expandable else 0, int(page_size))
        return cls(_out(lib.cumem_caching_resource_create_with_options, upstream.handle,
                        ctypes.byref(o)), (upstream,))

    @classmethod
    def aligned(cls, upstream, alignment):
        """Every allocation starts at a multiple of `alignment` (a power of two up to 1 GiB)."""
        return cls(_out(lib.cumem_aligned_resource_create, upstream.handle, int(alignment)),
                   (upstream,))

    @classmethod
    def limit(cls, upstream, limit_bytes):
        return cls(_out(lib.cumem_limit_resource_create, upstream.handle, int(limit_bytes)),
                   (upstream,))

    def allocate(self, size, stream=None):
        return Buffer(_out(lib.cumem_resource_allocate, self.handle, int(size), _stream(stream)))

    def statistics(self):
        s = _lib.ResourceStatistics(ctypes.sizeof(_lib.ResourceStatistics))
        _check(lib.cumem_resource_get_statistics(self.handle, ctypes.byref(s)))
        return {k: getattr(s, k) for k in
                ("bytes_in_use", "peak_bytes_in_use", "live_allocations", "total_allocations")}

    def reset_peak(self):
        _check(lib.cumem_resource_reset_peak(self.handle))

    def caching_statistics(self):
        """A caching adaptor's own counters (rounded bytes; CumemError otherwise)."""
        s = _lib.CachingStatistics(ctypes.sizeof(_lib.CachingStatistics))
        _check(lib.cumem_caching_resource_get_statistics(self.handle, ctypes.byref(s)))
        return {k: getattr(s, k) for k, _ in _lib.CachingStatistics._fields_[2:]}

    def release_cached(self):
        """A caching adaptor gives every cached block back to its upstream."""
        _check(lib.cumem_caching_resource_release_cached(self.handle))

    def trim(self, keep_bytes=0):
        """A caching adaptor gives cached blocks back until at most keep_bytes stay
        (an expandable one unmaps their pages), then asks its upstream to trim."""
        _check(lib.cumem_caching_resource_trim(self.handle, int(keep_bytes)))

    def properties(self):
        p = _lib.ResourceProperties(ctypes.sizeof(_lib.ResourceProperties))
        _check(lib.cumem_resource_get_properties(self.handle, ctypes.byref(p)))
        return {k: getattr(p, k) for k, _ in p._fields_ if k != "struct_size"}

    # Virtual memory (cuda.core's VirtualMemoryResource; cumem.h "Virtual memory").
    @classmethod
    def virtual_memory(cls, device=0, **options):
        """Buffers that grow and shrink (Buffer.resize). Options, with
        cuda.core's names: location_type ("device", "host", "host_numa"),
        location_id (the NUMA node), granularity ("recommended", "minimum"),
        handle_type (None, "posix_fd", "fabric" or a list), gpu_direct_rdma,
        addr_hint, addr_align, peers (device ordinals), peer_access ("rw",
        "r"); and libcumem's chunk_size and reserve_size (bytes, 0: default)."""
        from . import _virtual
        d = _device(device)
        o, keep = _virtual.options(d, **options)
        handle = _out(lib.cumem_virtual_resource_create, d.handle, ctypes.byref(o))
        del keep  # the peers were copied
        return cls(handle, (d,))

    def virtual_set_access(self, peer, access):
        """`peer`'s access to every buffer, present and future: "rw", "r" or None."""
        from . import _virtual
        _virtual.set_access(self, peer, access)

    def virtual_get_access(self, peer):
        from . import _virtual
        return _virtual.get_access(self, peer)

    def virtual_statistics(self):
        """What a virtual resource maps: granularity, chunk_size, bytes_mapped,
        bytes_reserved, bytes_pending, grows_in_place, grows_moved, shrinks,
        chunks_created, chunks_released."""
        from . import _virtual
        return _virtual.statistics(self)

    def release_pending(self):
        """Waits for the work pending frees and resizes wait for, then releases them."""
        _check(lib.cumem_virtual_resource_release_pending(self.handle))


def set_framework_resource(device, resource):
    """The resource cumem_torch_alloc / cumem_cupy_malloc use for `device`
    (None: back to the default)."""
    _check(lib.cumem_framework_set_resource(int(device), resource.handle if resource else None))


def framework_resource(device=0):
    """The resource the framework entry points use for `device` (its
    statistics show the frameworks' allocations)."""
    return Resource(_out(lib.cumem_framework_get_resource, int(device)))


LOG_LEVELS = ("off", "error", "warning", "info", "debug")
_log_callback = None  # keeps the ctypes callback alive while libcumem may call it


def set_log_level(level):
    """Messages at `level` ("off", "error", "warning", "info", "debug") and
    more severe are delivered."""
    if level not in LOG_LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LOG_LEVELS)}")
    _check(lib.cumem_set_log_level(LOG_LEVELS.index(level)))


def log_level():
    v = ctypes.c_int32()
    _check(lib.cumem_get_log_level(ctypes.byref(v)))
    return LOG_LEVELS[v.value]


def set_log_callback(fn):
    """Routes libcumem's messages to fn(level_name, message), called on the
    thread that produced each one (it must not raise); None: back to stderr."""
    global _log_callback
    if fn is None:
        _check(lib.cumem_set_log_callback(_lib.LogCallback(), None))
        _log_callback = None
        return

    def deliver(level, message, _user_data):
        try:
            fn(LOG_LEVELS[level], message.decode("utf-8", "replace"))
        except Exception:  # a callback must not unwind into libcumem
            pass

    callback = _lib.LogCallback(deliver)
    _check(lib.cumem_set_log_callback(callback, None))
    # The old callback stays referenced too: another thread may be in it.
    _log_callback = (callback, _log_callback)


from ._dlpack import Buffer, from_dlpack  # noqa: E402  (needs the names above)
from ._virtual import VirtualIpcHandle, ipc_receive_virtual, ipc_send_virtual  # noqa: E402
from ._program import (  # noqa: E402
    Kernel, Library, Program, kernel_arguments, launch, launch_config, nvrtc_version)
