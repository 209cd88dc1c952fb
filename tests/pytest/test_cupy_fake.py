"""cumem.cupy against a small fake CuPy with the allocator interface it uses
(cupy.cuda.memory.CFunctionAllocator / PythonFunctionAllocator,
cupy.cuda.set_allocator, cupy.cuda.Device, get_current_stream), on the fake
memory driver: use_libcumem_allocator returns a MemoryPool whose
used_bytes, total_bytes, free_bytes, n_free_blocks and free_all_blocks say
what libcumem holds in CuPy's terms (the real CuPy is tested by
tests/python/test_allocator_cupy.py on the GPU machine)."""
import ctypes
import sys
import types

import pytest

import cumem


def make_fake_cupy():
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.ModuleType("cupy.cuda")
    cupy.cuda.memory = types.ModuleType("cupy.cuda.memory")
    state = {"allocator": None}

    class CFunctionAllocator:
        # CuPy 14's memory.pyx: void*(*)(void*, size_t, int), void(*)(void*, void*, int).
        def __init__(self, param, malloc_addr, free_addr, owner):
            self.param = param
            self._malloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                            ctypes.c_int)(malloc_addr)
            self._free = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_int)(free_addr)
            self.owner = owner

        def malloc(self, size):
            ptr = self._malloc(self.param, size, 0)
            assert ptr, cumem.last_error_message() if hasattr(cumem, "last_error_message") else ""
            return types.SimpleNamespace(ptr=ptr, free=lambda: self._free(self.param, ptr, 0))

    class PythonFunctionAllocator:
        def __init__(self, malloc, free):
            self._malloc, self._free = malloc, free

        def malloc(self, size):
            ptr = self._malloc(size, 0)
            return types.SimpleNamespace(ptr=ptr, free=lambda: self._free(ptr, 0))

    class Device:
        def __init__(self, device=None):
            self.id = 0 if device is None else device

    def set_allocator(malloc):
        state["allocator"] = malloc

    cupy.cuda.memory.CFunctionAllocator = CFunctionAllocator
    cupy.cuda.memory.PythonFunctionAllocator = PythonFunctionAllocator
    cupy.cuda.memory.OutOfMemoryError = MemoryError
    cupy.cuda.set_allocator = set_allocator
    cupy.cuda.Device = Device
    cupy.cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=0)
    cupy.state = state
    return cupy


@pytest.fixture
def fake_cupy(monkeypatch):
    cupy = make_fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cupy.cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.memory", cupy.cuda.memory)
    import cumem.cupy
    yield cupy


@pytest.mark.device
@pytest.mark.parametrize("make", ["caching", "device"])
def test_memory_pool_in_cupys_terms(fake_cupy, make):
    import cumem.cupy
    base = cumem.Resource.device(0)
    resource = cumem.Resource.caching(base) if make == "caching" else base
    pool = cumem.cupy.use_libcumem_allocator(resource)
    assert isinstance(pool, cumem.cupy.MemoryPool)
    assert fake_cupy.state["allocator"] == pool.allocator.malloc
    assert pool.used_bytes() == 0
    arrays = [pool.malloc(n << 20) for n in (1, 2, 3)]
    assert pool.used_bytes() == 6 << 20
    assert pool.total_bytes() >= pool.used_bytes()
    for a in arrays:
        a.free()
    assert pool.used_bytes() == 0
    if make == "caching":
        # The cache keeps the freed blocks until free_all_blocks.
        assert pool.total_bytes() >= 6 << 20, pool.total_bytes()
        assert pool.free_bytes() == pool.total_bytes()
        assert pool.n_free_blocks() >= 1
        pool.free_all_blocks()
        assert pool.total_bytes() == 0
        assert pool.n_free_blocks() == 0
    else:
        assert pool.n_free_blocks() == 0
        pool.free_all_blocks()
        assert pool.free_bytes() >= 0


@pytest.mark.device
def test_memory_pool_follows_the_framework_resource(fake_cupy):
    import cumem.cupy
    cache = cumem.Resource.caching(cumem.Resource.device(0))
    cumem.set_framework_resource(0, cache)
    try:
        pool = cumem.cupy.use_libcumem_allocator()
        assert pool.resource.handle == cache.handle
        a = pool.malloc(1 << 20)
        assert pool.used_bytes() == cache.statistics()["bytes_in_use"] == 1 << 20
        a.free()
        pool.free_all_blocks()
        assert cache.caching_statistics()["bytes_reserved"] == 0
    finally:
        cumem.set_framework_resource(0, None)
