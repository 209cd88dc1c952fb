"""libcumem as CuPy's allocator (cupy.cuda.memory.CFunctionAllocator, or a
stream-following allocator for graph capture)."""
from . import _graph  # noqa: F401  (declares the entry points used below)
from ._lib import cupy_free_address, cupy_malloc_address, lib


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

    Returns the CuPy allocator object."""
    import cupy

    if not follow_streams:
        param = resource.handle if resource is not None else 0
        allocator = cupy.cuda.memory.CFunctionAllocator(
            param, cupy_malloc_address, cupy_free_address, resource)
        cupy.cuda.set_allocator(allocator.malloc)
        return allocator
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
    return allocator
