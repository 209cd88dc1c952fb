"""libcumem as CuPy's allocator (cupy.cuda.memory.CFunctionAllocator, or a
stream-following allocator for graph capture), and its memory in CuPy's
terms (MemoryPool: used_bytes, total_bytes, free_all_blocks, ...)."""
from . import _graph  # noqa: F401  (declares the entry points used below)
from ._lib import cupy_free_address, cupy_malloc_address, lib


class MemoryPool:
    """libcumem's memory under CuPy, with the methods of CuPy's own
    cupy.cuda.MemoryPool that report and release memory: what
    use_libcumem_allocator returns. `resource` is the resource CuPy's
    allocations come from (the one given to use_libcumem_allocator, else
    `device`'s framework resource, asked at each call so that it follows
    cumem.set_framework_resource). `allocator` is the CuPy allocator object
    (its malloc is what cupy.cuda.set_allocator was given)."""

    def __init__(self, allocator, resource=None, device=0):
        self.allocator = allocator
        self._resource = resource
        self._device = device

    def malloc(self, size):
        return self.allocator.malloc(size)

    @property
    def resource(self):
        if self._resource is not None:
            return self._resource
        import cumem
        return cumem.framework_resource(self._device)

    def used_bytes(self):
        """Bytes CuPy's live arrays hold (the resource's bytes in use)."""
        return self.resource.statistics()["bytes_in_use"]

    def total_bytes(self):
        """Bytes the resource holds from the device: a caching adaptor's
        reserved bytes, a pool's reserved memory, else the bytes in use."""
        r = self.resource
        if _is_caching(r):
            return r.caching_statistics()["bytes_reserved"]
        if r.properties()["is_pool"]:
            return r.pool_attributes()["reserved_mem_current"]
        return r.statistics()["bytes_in_use"]

    def free_bytes(self):
        """Bytes held but not in use (total_bytes - used_bytes, at least 0)."""
        return max(self.total_bytes() - self.used_bytes(), 0)

    def n_free_blocks(self):
        """Cached blocks ready to be handed out again (a caching adaptor's,
        from a snapshot of the resource; 0 for the others)."""
        import cumem
        snap = cumem.memory_snapshot(self.resource)
        return sum(1 for seg in snap["segments"] for b in seg["blocks"] if b["state"] == "cached")

    def free_all_blocks(self, stream=None):
        """Gives what is held but unused back to the device: a caching
        adaptor's cached blocks (after waiting for the device), a pool's
        unused memory (after waiting for the device)."""
        import cumem
        r = self.resource
        if _is_caching(r):
            r.trim(0)
        elif r.properties()["is_pool"]:
            cumem.Device(max(r.properties()["device_id"], 0)).synchronize()
            r.pool_trim(0)


def _is_caching(resource):
    import cumem
    try:
        resource.caching_statistics()
        return True
    except cumem.CumemError:
        return False


def use_libcumem_allocator(resource=None, follow_streams=False):
    """Makes libcumem CuPy's allocator.

    By default (follow_streams False) CuPy calls cumem_cupy_malloc/free
    directly (CFunctionAllocator): `resource` (a cumem.Resource, kept alive
    by the allocator) serves every device's allocations, or with None each
    device's framework resource. CuPy passes no stream to these, so libcumem
    allocates and frees on the legacy default stream: not for CUDA graph
    capture (Stream.begin_capture), whose arrays must belong to the graph.

    With follow_streams True, each allocation is ordered on CuPy's current
    stream (cupy.cuda.get_current_stream()) and freed on it, through the
    framework entry point that takes a stream (cumem_torch_alloc, PyTorch's
    signature) and cumem_cupy_free, from each device's framework resource
    (cumem.set_framework_resource; `resource` must then be None). Under a
    capture the arrays made inside become the graph's memory, and an array
    from outside freed inside is freed once the capture ends; a Python call
    per allocation costs about a microsecond more.

    Returns a MemoryPool (above): CuPy's terms for libcumem's memory."""
    import cupy

    if not follow_streams:
        param = resource.handle if resource is not None else 0
        allocator = cupy.cuda.memory.CFunctionAllocator(
            param, cupy_malloc_address, cupy_free_address, resource)
        cupy.cuda.set_allocator(allocator.malloc)
        return MemoryPool(allocator, resource, cupy.cuda.Device().id)
    if resource is not None:
        raise ValueError("follow_streams uses each device's framework resource: "
                         "set it with cumem.set_framework_resource(device, resource)")

    def malloc(size, device_id):
        stream = cupy.cuda.get_current_stream().ptr
        ptr = lib.cumem_torch_alloc(size, device_id, stream)
        if not ptr:
            message = lib.cumem_last_error_message().decode(errors="replace")
            raise cupy.cuda.memory.OutOfMemoryError(size, -1) if "out of memory" in message \
                else MemoryError(f"libcumem: {message}")
        return ptr

    def free(ptr, device_id):
        lib.cumem_cupy_free(None, ptr, device_id)

    allocator = cupy.cuda.memory.PythonFunctionAllocator(malloc, free)
    cupy.cuda.set_allocator(allocator.malloc)
    return MemoryPool(allocator, None, cupy.cuda.Device().id)
