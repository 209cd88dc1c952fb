"""libcumem as CuPy's allocator (cupy.cuda.memory.CFunctionAllocator)."""
from ._lib import cupy_free_address, cupy_malloc_address


def use_libcumem_allocator(resource=None):
    """Makes libcumem CuPy's allocator: `resource` (a cumem.Resource, kept
    alive by the allocator) serves every device's allocations, or with None
    each device's framework resource. CuPy passes no stream: libcumem
    allocates and frees on the legacy default stream. Returns the
    CFunctionAllocator."""
    import cupy

    param = resource.handle if resource is not None else 0
    allocator = cupy.cuda.memory.CFunctionAllocator(
        param, cupy_malloc_address, cupy_free_address, resource)
    cupy.cuda.set_allocator(allocator.malloc)
    return allocator
