"""libcumem from Python, through ctypes only (no compiled extension).

Installed (`pip install .`), the package loads the libcumem.so.1 inside it;
else $CUMEM_LIBRARY (which, when set, is the only file tried), or
libcumem.so.1 from the loader's search path. Devices, streams, events,
resources (every kind and adaptor), buffers, copies and fills, IPC (pools
and buffers shared between processes), kernels compiled at run time and
launched (``Program``, ``launch``), DLPack and the CUDA array interface both
ways, the framework allocator hook-ups (``cumem.torch``, ``cumem.cupy``, the
Numba plugin ``cumem.numba``) and their configuration (``configure``), and
cuda.core interop (``cumem.cuda_core``). Every call that takes a stream
takes a cumem.Stream or any object with ``__cuda_stream__`` (cuda.core,
CuPy, PyTorch streams); every call that takes a device takes a
cumem.Device, an ordinal or cuda.core's Device. Every failure raises
``CumemError`` with the status and libcumem's message.
"""
import ctypes

from . import _graph, _lib
from ._lib import lib, library_path

__all__ = [
    "CumemError", "Device", "Stream", "Resource", "Buffer", "from_dlpack", "device_count",
    "driver_version", "version", "library_path", "set_framework_resource", "framework_resource",
    "DLDeviceType", "Program", "Library", "Kernel", "launch", "launch_config",
    "kernel_arguments", "nvrtc_version", "VirtualIpcHandle", "ipc_send_virtual",
    "ipc_receive_virtual", "Graph",
    "Host", "CopyOptions", "copy_batch", "copy_batch_raw", "prefetch_batch", "discard_batch",
    "discard_prefetch_batch", "batch_statistics",
    "record_memory_history", "memory_snapshot", "dump_snapshot", "to_pytorch",
    "dump_pytorch_snapshot", "statistics_json", "memory_summary",
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

    @property
    def memory_resource(self):
        """The device's memory resource (cuda.core's Device.memory_resource):
        what libcumem (the framework allocators, Device.allocate) uses for the
        device unless told otherwise. Setting None goes back to the default,
        the device's default-pool resource (the same object each time)."""
        return Resource(_out(lib.cumem_device_get_memory_resource, self.handle))

    @memory_resource.setter
    def memory_resource(self, resource):
        _check(lib.cumem_device_set_memory_resource(
            self.handle, resource.handle if resource is not None else None))

    def allocate(self, size, stream=None):
        """`size` bytes from the device's memory resource (cuda.core's Device.allocate)."""
        s = _stream(stream, self.ordinal)
        b = Buffer(_out(lib.cumem_device_allocate, self.handle, int(size), s))
        b._stream = s  # its deallocation stream: kept alive with the buffer
        return b

    def __repr__(self):
        return f"cumem.Device({self.ordinal})"

    # cuda.core's names and the rest of cumem.h's device calls (_device.py).
    @property
    def device_id(self):
        """The ordinal (cuda.core's Device.device_id)."""
        return self.ordinal

    def properties(self):
        """cumem_device_properties_t as a dict (name, uuid, compute_capability, ...)."""
        from . import _device_info
        return _device_info.properties(self)

    def attribute(self, attribute):
        """Any CUdevice_attribute by its number."""
        from . import _device_info
        return _device_info.attribute(self, attribute)

    def set_current(self):
        """Makes the device's primary context current on this thread."""
        from . import _device_info
        _device_info.set_current(self)

    def memory_info(self):
        """(free, total) bytes of device memory."""
        from . import _device_info
        return _device_info.memory_info(self)

    def can_access_peer(self, peer):
        from . import _device_info
        return _device_info.can_access_peer(self, _device(peer))

    def enable_peer_access(self, peer):
        from . import _device_info
        _device_info.enable_peer_access(self, _device(peer))

    def stream_priority_range(self):
        """(least, greatest): greatest is the highest priority, numerically lowest."""
        from . import _device_info
        return _device_info.stream_priority_range(self)

    def create_stream(self, blocking=False, priority=0):
        """A new stream of this device (cuda.core's Device.create_stream)."""
        return Stream(self, blocking=blocking, priority=priority)

    def create_event(self, enable_timing=False, blocking_sync=False, interprocess=False):
        from ._event import Event
        return Event(self, enable_timing, blocking_sync, interprocess)

    @property
    def default_stream(self):
        """The legacy default stream (what libcumem's calls without a stream use)."""
        return Stream.legacy_default(self)


def _device(d):
    """A Device from a Device, an ordinal, or another library's device
    (cuda.core's Device and anything else with an int device_id, CuPy's and
    Numba's with an int id)."""
    if isinstance(d, Device):
        return d
    if isinstance(d, int) and not isinstance(d, bool):
        return Device(d)
    for attribute in ("device_id", "id"):
        ordinal = getattr(d, attribute, None)
        if isinstance(ordinal, int) and not isinstance(ordinal, bool):
            return Device(ordinal)
    raise TypeError(f"a device is a cumem.Device, an ordinal, or an object with an int device_id "
                    f"(cuda.core's Device), not {type(d).__name__}")


class Stream(_Handle):
    _release = staticmethod(lib.cumem_stream_release)

    def __init__(self, device=0, blocking=False, priority=0, _handle=None, _owner=None):
        """A new stream of `device` (non-blocking unless `blocking`, which
        synchronises it with the legacy default stream; priority: lower
        numbers are higher, clamped into the device's range)."""
        self.device = _device(device)
        # A wrapped stream's owner (a cuda.core, CuPy or PyTorch stream
        # object): kept alive as long as this object, and so as long as any
        # buffer that may still queue work on the stream.
        self._owner = _owner
        if _handle is None:
            o = None
            if blocking or priority:
                from . import _device_info
                o = ctypes.byref(_device_info.stream_options(blocking, priority))
            _handle = _out(lib.cumem_stream_create, self.device.handle, o)
        super().__init__(_handle)

    @classmethod
    def wrap(cls, device, native, owner=None):
        """A stream created elsewhere, not owned: `native` is the CUstream (an
        int) or an object with __cuda_stream__ (cuda.core, CuPy, PyTorch
        streams). libcumem never destroys it; the object it came from (that
        one, or `owner`) is kept alive while this Stream and every buffer
        allocated or freed on it live, so its CUstream outlives their use."""
        if hasattr(native, "__cuda_stream__"):
            owner = native if owner is None else owner
            native = _stream_protocol(native)
        d = _device(device)
        return cls(d, _handle=_out(lib.cumem_stream_wrap, d.handle, _V(int(native))), _owner=owner)

    @classmethod
    def legacy_default(cls, device=0):
        d = _device(device)
        return cls(d, _handle=_out(lib.cumem_stream_legacy_default, d.handle))

    @classmethod
    def per_thread_default(cls, device=0):
        """The per-thread default stream (each thread's own)."""
        d = _device(device)
        return cls(d, _handle=_out(lib.cumem_stream_per_thread_default, d.handle))

    @property
    def native(self):
        return _out(lib.cumem_stream_native, self.handle) or 0

    def synchronize(self):
        _check(lib.cumem_stream_synchronize(self.handle))

    def wait(self, other):
        """Work queued here from now waits for `other`: an Event (its last
        record), or a stream (any stream object: the work queued there so far)."""
        from ._event import Event
        if isinstance(other, Event):
            _check(lib.cumem_stream_wait_event(self.handle, other.handle))
            return
        theirs = _stream(other, self.device.ordinal)
        _check(lib.cumem_stream_wait_stream(self.handle, theirs))

    # The stream protocols and the rest of cumem.h's stream calls.
    @property
    def _as_parameter_(self):
        # ctypes passes a Stream as its C handle (so `_stream` may return one).
        return self.handle

    def __cuda_stream__(self):
        """The CUDA stream protocol (version 0, the CUstream): cuda.core, CuPy
        and others take a cumem.Stream wherever they take a stream."""
        return (0, self.native)

    @property
    def priority(self):
        from . import _device_info
        return _device_info.stream_priority(self)

    def query(self):
        """Whether all queued work has finished (never blocks)."""
        from . import _device_info
        return _device_info.stream_query(self)

    @property
    def is_done(self):
        return self.query()

    sync = synchronize  # cuda.core's name

    def record(self, event=None, enable_timing=False):
        """Records `event` (a new one when None) here and returns it."""
        from ._event import Event
        if event is None:
            event = Event(self.device, enable_timing=enable_timing)
        return event.record(self)

    def __repr__(self):
        return f"cumem.Stream(device={self.device.ordinal}, native={self.native:#x})"

    # CUDA graphs (cumem/_graph.py).
    def begin_capture(self, mode="thread_local"):
        """Captures the work queued from now into a CUDA graph; mode "global",
        "thread_local" or "relaxed"."""
        _check(lib.cumem_stream_begin_capture(self.handle, _graph.CAPTURE_MODES[mode]))

    def end_capture_graph(self, auto_free_on_launch=False, use_node_priority=False):
        """Ends the capture (begun here or by anyone) into an executable Graph."""
        o = _graph.graph_options(auto_free_on_launch, use_node_priority)
        return Graph(_out(lib.cumem_stream_end_capture_graph, self.handle, ctypes.byref(o)),
                     self.device)

    def capture_info(self):
        """{'status': 'none'|'active'|'invalidated', 'id': int}, whoever began the capture."""
        return _graph.capture_info(self.handle)


def _stream_protocol(obj):
    """The CUstream (an int) of an object with __cuda_stream__ (a method
    returning (version, handle), or, in cuda.core's first versions, that
    tuple itself)."""
    value = obj.__cuda_stream__
    if callable(value):
        value = value()
    version, native = value
    if version != 0:
        raise TypeError(f"{type(obj).__name__}.__cuda_stream__ has version {version}; libcumem "
                        "knows version 0")
    return int(native)


def _stream_device(obj, default):
    """The device ordinal another library's stream says it belongs to, else `default`."""
    d = getattr(obj, "device", None)
    for candidate in (d, getattr(obj, "device_id", None)):
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            return candidate
        for attribute in ("device_id", "id", "index"):
            ordinal = getattr(candidate, attribute, None)
            if isinstance(ordinal, int) and not isinstance(ordinal, bool):
                return ordinal
    return default() if callable(default) else default


def _stream(s, device=None):
    """A stream argument as a Stream (or None, the legacy default stream):
    a cumem.Stream, or any object with __cuda_stream__ (cuda.core, CuPy,
    PyTorch, Numba streams; a cuda.core GraphBuilder through its stream),
    wrapped so that the object stays alive while the Stream does. `device`
    (an ordinal, or a function giving one) is the device of a foreign
    stream that does not say its own (else device 0)."""
    if s is None or isinstance(s, Stream):
        return s
    if not hasattr(s, "__cuda_stream__") and hasattr(getattr(s, "stream", None), "__cuda_stream__"):
        s = s.stream  # cuda.core's GraphBuilder
    if hasattr(s, "__cuda_stream__"):
        ordinal = _stream_device(s, device if device is not None else 0)
        return Stream.wrap(ordinal if ordinal is not None and ordinal >= 0 else 0, s)
    raise TypeError(f"a stream is a cumem.Stream, an object with __cuda_stream__ (cuda.core, "
                    f"CuPy, PyTorch streams) or None, not {type(s).__name__}; for a raw "
                    "CUstream use cumem.Stream.wrap(device, handle)")


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
    def device(cls, device=0, **pool_options):
        """Stream-ordered device memory (cuda.core's DeviceMemoryResource): the
        device's default pool, or with new_pool=True a pool of its own.
        pool_options: new_pool, release_threshold (bytes kept after a
        synchronisation; 0 keeps all), max_size, ipc_enabled (needs new_pool),
        release_all_unused."""
        from . import _resources
        d = _device(device)
        o = ctypes.byref(_resources.pool_options(**pool_options)) if pool_options else None
        return cls(_out(lib.cumem_device_resource_create, d.handle, o), (d,))

    @classmethod
    def pinned(cls, device=0, **pool_options):
        """Stream-ordered pinned host memory from a host pool (cuda.core's
        PinnedMemoryResource); the options of Resource.device, and
        host_numa_id (a node the system has)."""
        from . import _resources
        d = _device(device)
        o = ctypes.byref(_resources.pool_options(**pool_options)) if pool_options else None
        return cls(_out(lib.cumem_pinned_resource_create, d.handle, o), (d,))

    @classmethod
    def legacy_pinned(cls, device=0):
        d = _device(device)
        return cls(_out(lib.cumem_legacy_pinned_resource_create, d.handle), (d,))

    @classmethod
    def managed(cls, device=0, preferred_location=None, disable_pool=False):
        """Unified memory (cuda.core's ManagedMemoryResource); preferred_location
        a Device, an ordinal or a cumem.Host; disable_pool: cuMemAllocManaged
        even where the driver has a managed pool."""
        from . import _resources
        d = _device(device)
        o = _resources.managed_options(preferred_location, disable_pool)
        return cls(_out(lib.cumem_managed_resource_create, d.handle, ctypes.byref(o)), (d,))

    @classmethod
    def caching(cls, upstream, expandable=False, page_size=0, libcumem_captures_only=False,
                handle_type=None):
        """The caching adaptor over `upstream`. expandable: blocks are pieces of
        per-stream address ranges with pages mapped on demand, small blocks
        (up to 128 KiB) in ranges of their own (device memory only;
        page_size 0: 8 MiB pages for blocks of 16 MiB or more, 2 MiB for the
        others; else every page is page_size bytes), as PyTorch's
        expandable_segments:True.
        libcumem_captures_only: see only CUDA graph captures begun through
        libcumem (no driver call per allocation; captures begun by PyTorch or
        CuPy are then not seen).
        handle_type: with expandable, "posix_fd" makes the blocks shareable
        with other processes (Buffer.get_virtual_ipc_handle(),
        VirtualIpcHandle.of_native()); None (default): not shareable."""
        if handle_type not in (None, "posix_fd"):
            raise ValueError(f"handle_type {handle_type!r} is not None or 'posix_fd'")
        handle_types = 1 if handle_type == "posix_fd" else 0
        if not expandable and not page_size and not libcumem_captures_only and not handle_types:
            return cls(_out(lib.cumem_caching_resource_create, upstream.handle), (upstream,))
        o = _lib.CachingResourceOptions(ctypes.sizeof(_lib.CachingResourceOptions),
                                        1 if expandable else 0, int(page_size),
                                        1 if libcumem_captures_only else 0, int(handle_types))
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

    @classmethod
    def failure_callback(cls, upstream, fn, max_retries=0):
        """The failure-callback adaptor over `upstream` (RMM's
        failure_callback_resource_adaptor): when the upstream is out of memory,
        fn(info) is called with a dict (attempt, size, stream, statistics,
        message); a true result tries the upstream again, at most max_retries
        times per allocation (0: 16). An exception from fn counts as giving up."""
        from . import _batch
        c, key = _batch.failure_callback_struct(fn, max_retries)
        try:
            return cls(_out(lib.cumem_failure_callback_resource_create, upstream.handle,
                            ctypes.byref(c)), (upstream,))
        except CumemError:
            _batch.forget(key)  # no adaptor was made: destroy never runs
            raise

    def allocate(self, size, stream=None):
        """`size` bytes ordered on `stream` (None: the legacy default stream;
        any stream object: a cumem.Stream, a cuda.core, CuPy or PyTorch stream)."""
        s = _stream(stream, self._device_ordinal)
        b = Buffer(_out(lib.cumem_resource_allocate, self.handle, int(size), s))
        b._stream = s  # its deallocation stream: kept alive with the buffer
        return b

    def _device_ordinal(self):
        return max(self.properties()["device_id"], 0)

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

    def release_capture_pool(self, capture_id):
        """The graph(s) of capture `capture_id` are gone: a caching adaptor's
        private pool of that capture gives its memory back."""
        _check(lib.cumem_caching_resource_release_capture_pool(self.handle, int(capture_id)))

    def trim(self, keep_bytes=0):
        """A caching adaptor gives cached blocks back until at most keep_bytes stay
        (an expandable one unmaps their pages), then asks its upstream to trim."""
        _check(lib.cumem_caching_resource_trim(self.handle, int(keep_bytes)))

    # The graph memory resource (cuda.core's GraphMemoryResource): allocates
    # only on capturing streams; the device's graph memory.
    @classmethod
    def graph_memory(cls, device=0):
        d = _device(device)
        return cls(_out(lib.cumem_graph_memory_resource_create, d.handle), (d,))

    def graph_memory_attributes(self):
        return _graph.graph_memory_attributes(self.handle)

    def graph_memory_trim(self):
        _check(lib.cumem_graph_memory_resource_trim(self.handle))

    def graph_memory_reset_highs(self):
        _check(lib.cumem_graph_memory_resource_reset_highs(self.handle))

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
        "r"); and libcumem's chunk_size and reserve_size (bytes, 0: default)
        and nccl_qualified (what NCCL's qualified allocator has and the device
        allows: POSIX fd, FABRIC after its probe, GPUDirect RDMA)."""
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

    # The other kinds and adaptors, pool administration, raw allocation,
    # IPC and cuda.core (_resources.py, _ipc.py, cuda_core.py).
    @classmethod
    def legacy_device(cls, device=0):
        """cuMemAlloc memory, synchronous; shares buffers by legacy IPC."""
        from . import _resources  # noqa: F401  (declares the call)
        d = _device(device)
        return cls(_out(lib.cumem_legacy_device_resource_create, d.handle), (d,))

    @classmethod
    def host_shared(cls, capacity):
        """Host memory other processes can map: one sealed memfd of `capacity`
        bytes, shared with get_allocation_handle; needs no driver."""
        from . import _resources  # noqa: F401
        return cls(_out(lib.cumem_host_shared_resource_create, int(capacity)))

    @classmethod
    def tracking(cls, upstream, capture_backtraces=False):
        """The tracking adaptor: every outstanding allocation with its size and
        stream (and call stack); tracking_report() and tracking_outstanding()."""
        from . import _resources  # noqa: F401
        return cls(_out(lib.cumem_tracking_resource_create, upstream.handle,
                        int(bool(capture_backtraces))), (upstream,))

    def tracking_report(self):
        """A tracking adaptor's report of outstanding allocations (text)."""
        from . import _resources
        return _resources.tracking_report(self)

    def tracking_outstanding(self):
        """A tracking adaptor's (count, bytes) outstanding."""
        from . import _resources
        return _resources.tracking_outstanding(self)

    @classmethod
    def logging(cls, upstream, path=None):
        """The logging adaptor: a CSV line per operation into `path` (None:
        $CUMEM_LOG_FILE), flushed when the resource goes."""
        from . import _resources  # noqa: F401
        return cls(_out(lib.cumem_logging_resource_create, upstream.handle,
                        None if path is None else str(path).encode()), (upstream,))

    @classmethod
    def callback(cls, allocate, deallocate, device=None, memory_kind="host",
                 device_accessible=False, host_accessible=False, stream_ordered=False):
        """A resource made of Python functions (another allocator's):
        allocate(size, stream) returns the address (0 or an exception: out of
        memory), deallocate(ptr, size, stream); stream is the native CUstream
        (0: the legacy default stream). memory_kind "host", "device", "pinned"
        or "managed"; `device` the memory's (None: not tied to one). The
        functions are kept until the resource's last reference goes."""
        from . import _resources
        return _resources.callback_resource(cls, allocate, deallocate, device, memory_kind,
                                            device_accessible, host_accessible, stream_ordered)

    def allocate_raw(self, size, stream=None):
        """The raw pair: an address (an int), freed with deallocate_raw and the same size."""
        from . import _resources
        return _resources.allocate_raw(self, size, _stream(stream, self._device_ordinal))

    def deallocate_raw(self, ptr, size, stream=None):
        from . import _resources
        _resources.deallocate_raw(self, ptr, size, _stream(stream, self._device_ordinal))

    def pool_attributes(self):
        """A pool's attributes (reuse flags, release_threshold, reserved and used memory)."""
        from . import _resources
        return _resources.pool_attributes(self)

    def set_pool_attributes(self, **changes):
        """Sets a pool's reuse flags and release_threshold (those named)."""
        from . import _resources
        _resources.set_pool_attributes(self, **changes)

    def pool_reset_highs(self):
        from . import _resources  # noqa: F401
        _check(lib.cumem_resource_pool_reset_highs(self.handle))

    def pool_trim(self, min_bytes_to_keep=0):
        """Returns a pool's unused memory to the system, keeping at least min_bytes_to_keep."""
        from . import _resources  # noqa: F401
        _check(lib.cumem_resource_pool_trim(self.handle, int(min_bytes_to_keep)))

    def pool_set_access(self, peer, read_write=True):
        """Grants (or revokes) `peer`'s access to a pool's memory."""
        from . import _resources
        _resources.pool_set_access(self, peer, read_write)

    def pool_get_access(self, peer):
        from . import _resources
        return _resources.pool_get_access(self, peer)

    def set_peer_access(self, peer, read_write=True):
        """Grants (or revokes) `peer`'s access to the memory this resource hands
        out, whatever it is: a pool, a virtual-memory resource, an adaptor over
        them (an expandable cache also maps its pages so)."""
        from . import _resources
        _resources.set_peer_access(self, peer, read_write)

    def peer_access(self, peer):
        """Whether `peer` can read and write all the memory this resource hands out."""
        from . import _resources
        return _resources.get_peer_access(self, peer)

    @property
    def pool_native(self):
        """The CUmemoryPool (an int)."""
        from . import _resources  # noqa: F401
        return _out(lib.cumem_resource_pool_native, self.handle) or 0

    def get_allocation_handle(self):
        """Exports an IPC-enabled pool (or a host shared resource) as an
        AllocationHandle (cuda.core's get_allocation_handle)."""
        from . import _ipc
        return _ipc.get_allocation_handle(self)

    @classmethod
    def from_allocation_handle(cls, handle, device=None):
        """Imports another process's pool from its AllocationHandle: a resource
        that opens that pool's buffer descriptors. `device`: the pool's device
        (device memory), the device that maps it (pinned), None (host shared)."""
        from . import _ipc
        return _ipc.resource_from_allocation_handle(cls, handle, device)

    def to_cuda_core(self):
        """This resource as a cuda.core MemoryResource (cumem.cuda_core)."""
        from . import cuda_core
        return cuda_core.memory_resource(self)

    def __repr__(self):
        try:
            p = self.properties()
        except Exception:  # a released resource
            return "cumem.Resource(released)"
        return f"cumem.Resource(kind={p['kind']}, device_id={p['device_id']})"


class Graph(_Handle):
    """An executable CUDA graph (Stream.end_capture_graph, or instantiate)."""
    _release = staticmethod(lib.cumem_graph_release)

    def __init__(self, handle, device):
        super().__init__(handle)
        self.device = device

    @classmethod
    def instantiate(cls, device, native_graph, auto_free_on_launch=False,
                    use_node_priority=False):
        """Instantiates a CUgraph (an int); the CUgraph stays the caller's."""
        d = _device(device)
        o = _graph.graph_options(auto_free_on_launch, use_node_priority)
        return cls(_out(lib.cumem_graph_instantiate, d.handle, _V(int(native_graph)),
                        ctypes.byref(o)), d)

    def launch(self, stream=None):
        _check(lib.cumem_graph_launch(self.handle, _stream(stream, self.device.ordinal)))

    def upload(self, stream=None):
        _check(lib.cumem_graph_upload(self.handle, _stream(stream, self.device.ordinal)))

    @property
    def native(self):
        """The CUgraphExec (an int)."""
        return _out(lib.cumem_graph_native, self.handle)

    @property
    def capture_id(self):
        """The id of the capture it came from (0: instantiated from a CUgraph)."""
        v = ctypes.c_uint64()
        _check(lib.cumem_graph_capture_id(self.handle, ctypes.byref(v)))
        return v.value


def set_framework_resource(device, resource):
    """The resource cumem_torch_alloc / cumem_cupy_malloc use for `device`
    (None: back to the default, the device's memory resource unless
    $CUMEM_FRAMEWORK_RESOURCE says 'caching')."""
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
from ._batch import (  # noqa: E402
    CopyOptions, Host, batch_statistics, copy_batch, copy_batch_raw, discard_batch,
    discard_prefetch_batch, prefetch_batch)
from ._program import (  # noqa: E402
    Kernel, Library, Program, kernel_arguments, launch, launch_config, nvrtc_version)
from ._snapshot import (  # noqa: E402
    dump_pytorch_snapshot, dump_snapshot, memory_snapshot, memory_summary, record_memory_history,
    statistics_json, to_pytorch)

# Issue 25: complete bindings, other libraries' objects, configuration.
from ._event import Event  # noqa: E402
from ._ipc import AllocationHandle, IpcDescriptor, ipc_receive, ipc_send  # noqa: E402
from ._program import ProgramOptions  # noqa: E402
from ._dlpack import as_buffer  # noqa: E402
from ._config import configure  # noqa: E402
# Issue 23: communication engines.
from ._engines import DmaBuf, UnmapSubscription, subscribe_unmap  # noqa: E402


def get_include():
    """The folder holding cumem/cumem.h (and the other headers) of an
    installed package, for extensions built against libcumem; None in a
    source tree (use its include/)."""
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
    return path if os.path.isdir(path) else None


__all__ += ["Event", "AllocationHandle", "IpcDescriptor", "ipc_send", "ipc_receive",
            "as_buffer", "configure", "set_log_level", "log_level", "set_log_callback",
            "get_include", "DmaBuf", "UnmapSubscription", "subscribe_unmap"]
