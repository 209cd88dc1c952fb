"""The Numba EMM plugin (cumem.numba) against a small fake numba-cuda with
the EMM interface's protocol (the real one is tested by test_gpu_numba.py on
the GPU machine): HostOnlyCUDAMemoryManager (allocations, reset,
defer_cleanup), GetIpcHandleMixin, MemoryPointer with a finalizer,
MemoryInfo, set_memory_manager instantiating the plugin with context=None."""
import collections
import contextlib
import importlib
import sys
import types

import pytest

import cumem


def make_fake_numba():
    numba = types.ModuleType("numba")
    # numba-cuda's ctypes binding, as its driver module says (USE_NV_BINDING);
    # numba's own config disagrees on purpose (as it does on the H200).
    numba.config = types.SimpleNamespace(CUDA_USE_NVIDIA_BINDING=True)
    cuda = types.ModuleType("numba.cuda")
    cuda.cudadrv = types.ModuleType("numba.cuda.cudadrv")
    cuda.cudadrv.driver = types.ModuleType("numba.cuda.cudadrv.driver")
    cuda.cudadrv.driver.USE_NV_BINDING = False

    class HostOnlyCUDAMemoryManager:
        def __init__(self, *args, **kwargs):
            self.context = kwargs.get("context")
            self.allocations = {}
            self.deallocations = []

        def reset(self):
            self.allocations.clear()

        @contextlib.contextmanager
        def defer_cleanup(self):
            yield

    class GetIpcHandleMixin:
        def get_ipc_handle(self, memory):
            return ("numba's cuIpcGetMemHandle path", int(memory.handle.value))

    class MemoryPointer:
        def __init__(self, context, pointer, size, owner=None, finalizer=None):
            self.context, self.handle, self.size, self._finalizer = context, pointer, size, finalizer

        def free(self):
            if self._finalizer is not None:
                self._finalizer()
                self._finalizer = None

    def set_memory_manager(plugin):
        if plugin(context=None).interface_version != 1:
            raise RuntimeError("EMM Plugin interface has version mismatch")
        cuda.memory_manager = plugin

    cuda.HostOnlyCUDAMemoryManager = HostOnlyCUDAMemoryManager
    cuda.GetIpcHandleMixin = GetIpcHandleMixin
    cuda.MemoryPointer = MemoryPointer
    cuda.MemoryInfo = collections.namedtuple("MemoryInfo", "free,total")
    cuda.set_memory_manager = set_memory_manager
    numba.cuda = cuda
    return numba


@pytest.fixture
def numba(monkeypatch):
    fake = make_fake_numba()
    monkeypatch.setitem(sys.modules, "numba", fake)
    monkeypatch.setitem(sys.modules, "numba.cuda", fake.cuda)
    monkeypatch.setitem(sys.modules, "numba.cuda.cudadrv", fake.cuda.cudadrv)
    monkeypatch.setitem(sys.modules, "numba.cuda.cudadrv.driver", fake.cuda.cudadrv.driver)
    sys.modules.pop("cumem.numba", None)
    plugin = importlib.import_module("cumem.numba")
    yield fake, plugin
    sys.modules.pop("cumem.numba", None)


def context(ordinal=0):
    return types.SimpleNamespace(device=types.SimpleNamespace(id=ordinal))


def test_the_plugin_is_numbas_and_its_environment_variable_name(numba):
    fake, plugin = numba
    assert plugin._numba_memory_manager is plugin.CumemNumbaManager
    fake.cuda.set_memory_manager(plugin.CumemNumbaManager)
    assert fake.cuda.memory_manager is plugin.CumemNumbaManager
    assert issubclass(plugin.CumemNumbaManager, fake.cuda.HostOnlyCUDAMemoryManager)


def test_without_numba_the_import_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    sys.modules.pop("cumem.numba", None)
    with pytest.raises(ImportError):
        importlib.import_module("cumem.numba")
    sys.modules.pop("cumem.numba", None)


@pytest.mark.device
def test_device_arrays_come_from_the_framework_resource(numba, device, request):
    fake, plugin = numba
    manager = plugin.CumemNumbaManager(context=context(0))
    manager.initialize()
    # cuMemAlloc memory (the fake device's default too), which Numba's IPC shares.
    cumem.set_framework_resource(0, cumem.Resource.legacy_device(device))
    request.addfinalizer(lambda: cumem.set_framework_resource(0, None))
    resource = cumem.framework_resource(0)
    before = resource.statistics()["bytes_in_use"]
    memory = manager.memalloc(1000)
    assert memory.size == 1000 and memory.handle.value != 0
    assert resource.statistics()["bytes_in_use"] == before + 1000
    assert manager.allocations[memory.handle.value].ptr == memory.handle.value
    # The legacy device resource shares through Numba's own IPC.
    assert manager.get_ipc_handle(memory)[0] == "numba's cuIpcGetMemHandle path"
    memory.free()  # Numba's finalizer: freed at once
    assert resource.statistics()["bytes_in_use"] == before
    assert memory.handle.value not in manager.allocations
    free, total = manager.get_memory_info()
    assert total >= free > 0
    assert manager.memalloc(0).size == 0
    # A context reset drops (frees) what is left.
    manager.memalloc(64)
    manager.reset()
    assert resource.statistics()["bytes_in_use"] == before
    with manager.defer_cleanup():
        manager.memalloc(32).free()
    assert resource.statistics()["bytes_in_use"] == before


@pytest.mark.device
def test_pool_memory_is_refused_by_numbas_ipc(numba, device, monkeypatch):
    # The fake device has no pools: its resource is made to say it is one.
    fake, plugin = numba
    manager = plugin.CumemNumbaManager(context=context(0))
    memory = manager.memalloc(16)
    properties = cumem.Resource.properties
    with monkeypatch.context() as m:
        m.setattr(cumem.Resource, "properties", lambda self: dict(properties(self), is_pool=1))
        with pytest.raises(RuntimeError, match="Buffer.get_ipc_descriptor"):
            manager.get_ipc_handle(memory)
    memory.free()
