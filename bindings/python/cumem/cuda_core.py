"""libcumem with cuda.core (NVIDIA's cuda.core 1.x, imported only when used).

    import cumem.cuda_core
    mr = cumem.cuda_core.caching_memory_resource(dev)   # a cuda.core MemoryResource
    buf = mr.allocate(1 << 20, stream=stream)          # a cuda.core Buffer
    cumem.as_buffer(buf)                               # the libcumem buffer behind it

- memory_resource(resource) makes any cumem.Resource a cuda.core
  MemoryResource: allocate(size, stream=...) returns a cuda.core Buffer
  (Buffer.from_handle with this resource as its memory resource, so that
  closing it calls deallocate), deallocate(ptr, size, stream=...) frees on
  the stream, and is_device_accessible, is_host_accessible, is_managed and
  device_id are the resource's properties.
- Streams: every libcumem call that takes a stream takes a cuda.core Stream
  (or GraphBuilder's stream, or anything with __cuda_stream__), and every
  call that takes a device takes a cuda.core Device.
- Buffers: cumem.as_buffer(cuda_core_buffer) is a libcumem buffer over the
  same memory (the very buffer for memory from memory_resource, else a
  wrapped one that keeps the cuda.core Buffer alive); Buffer.to_cuda_core()
  is the other way (a cuda.core Buffer that keeps the libcumem buffer
  alive, or the original one).
"""
import threading

_adapter_class = None
_adapter_lock = threading.Lock()


def _core():
    try:
        import cuda.core as core
    except ImportError as e:
        raise ImportError("cumem.cuda_core needs cuda.core (pip install cuda-core)") from e
    return core


def _adapter():
    """The MemoryResource subclass, made on first use (cuda.core is optional)."""
    global _adapter_class
    with _adapter_lock:
        if _adapter_class is None:
            _adapter_class = _make_adapter_class(_core())
        return _adapter_class


def _from_handle(core, ptr, size, mr, stream):
    # cuda.core 1.x records the deallocation stream at creation (stream=);
    # earlier versions take none.
    try:
        return core.Buffer.from_handle(ptr, size, mr=mr, stream=stream)
    except TypeError:
        return core.Buffer.from_handle(ptr, size, mr=mr)


def _make_adapter_class(core):
    import cumem

    class MemoryResource(core.MemoryResource):
        """A libcumem resource as a cuda.core MemoryResource (see cumem.cuda_core)."""

        def __init__(self, resource):
            self._resource = resource
            props = resource.properties()
            self._device_accessible = bool(props["device_accessible"])
            self._host_accessible = bool(props["host_accessible"])
            self._device_id = int(props["device_id"])
            self._managed = False
            self._live = {}  # pointer -> the libcumem Buffer behind a cuda.core Buffer
            self._lock = threading.Lock()

        @property
        def resource(self):
            """The cumem.Resource behind this memory resource."""
            return self._resource

        def allocate(self, size, stream=None):
            b = self._resource.allocate(int(size), stream)
            self._managed = self._managed or b.memory_kind == "managed"
            ptr = b.ptr
            if ptr:
                with self._lock:
                    self._live[ptr] = b
            else:
                b.release()  # size 0 holds no memory
            return _from_handle(core, ptr, int(size), self, stream)

        def deallocate(self, ptr, size, stream=None):
            ptr = int(ptr)
            with self._lock:
                b = self._live.pop(ptr, None)
            if b is None:
                if ptr == 0:
                    return
                raise ValueError(f"pointer {ptr:#x} was not allocated by this libcumem memory "
                                 "resource, or was freed already")
            try:
                b.close(stream)
            finally:
                b.release()

        def buffer_of(self, ptr):
            """The libcumem Buffer at `ptr`, while it is allocated (else None)."""
            with self._lock:
                return self._live.get(int(ptr))

        @property
        def is_device_accessible(self):
            return self._device_accessible

        @property
        def is_host_accessible(self):
            return self._host_accessible

        @property
        def is_managed(self):
            return self._managed

        @property
        def device_id(self):
            return self._device_id

        def __repr__(self):
            return f"cumem.cuda_core.MemoryResource({self._resource!r})"

    MemoryResource.__module__ = __name__
    del cumem
    return MemoryResource


def memory_resource(resource):
    """`resource` (a cumem.Resource) as a cuda.core MemoryResource."""
    return _adapter()(resource)


def caching_memory_resource(device=0, **options):
    """The caching adaptor over `device`'s memory resource (a cuda.core Device
    or an ordinal), as a cuda.core MemoryResource: what `dev.memory_resource`
    is to cuda.core, with libcumem's cache in front. `options` are those of
    cumem.Resource.caching (expandable, page_size)."""
    import cumem
    d = cumem._device(device)
    return memory_resource(cumem.Resource.caching(d.memory_resource, **options))


def is_cuda_core_buffer(obj):
    """Whether `obj` is a cuda.core Buffer (False when cuda.core is not imported)."""
    import sys
    core = sys.modules.get("cuda.core")
    return core is not None and isinstance(obj, core.Buffer)


def buffer_of(obj):
    """For a cuda.core Buffer allocated by memory_resource: its libcumem
    Buffer. None for anything else."""
    if not is_cuda_core_buffer(obj) or _adapter_class is None:
        return None
    mr = obj.memory_resource
    if isinstance(mr, _adapter_class):
        return mr.buffer_of(int(obj.handle))
    return None


def to_cuda_core(buffer):
    """A libcumem Buffer as a cuda.core Buffer over the same memory, keeping
    it alive (no memory resource: closing the cuda.core Buffer frees nothing;
    the libcumem buffer frees its memory when it is closed or released)."""
    return _core().Buffer.from_handle(buffer.ptr, buffer.size, owner=buffer)
