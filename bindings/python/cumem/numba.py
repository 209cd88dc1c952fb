"""libcumem as Numba's device memory manager (an External Memory Management
plugin, numba-cuda's EMM interface version 1, as RMM's RMMNumbaManager is).

    NUMBA_CUDA_MEMORY_MANAGER=cumem.numba python3 script.py

or, before Numba makes its first CUDA context:

    from numba import cuda
    import cumem.numba
    cuda.set_memory_manager(cumem.numba.CumemNumbaManager)

Device arrays are allocated from each device's framework resource
(cumem.framework_resource: the one cumem.set_framework_resource gave, else
as cumem.configure or $CUMEM_ALLOC_CONF say), on the legacy default stream,
which orders them with Numba's default stream and its blocking streams
(cuda.stream()); work on other streams must be synchronised before an
array is dropped, as with Numba's own allocator. A dropped array is freed
at once (stream-ordered); defer_cleanup() defers only Numba's host
allocations (pinned and mapped memory, which Numba keeps managing).
get_ipc_handle works for memory that cuIpcGetMemHandle can share (a
framework resource of cumem.Resource.legacy_device); pool memory is shared
with libcumem's own IPC (Buffer.get_ipc_descriptor) instead.
"""
import ctypes

from numba import cuda  # noqa: F401  (numba.cuda first: the EMM classes below)

import cumem

try:  # numba-cuda: the EMM classes are in numba.cuda
    from numba.cuda import GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer
except ImportError:  # older numba keeps some in numba.cuda.cudadrv.driver
    from numba.cuda.cudadrv.driver import (GetIpcHandleMixin, HostOnlyCUDAMemoryManager,
                                           MemoryInfo, MemoryPointer)

__all__ = ["CumemNumbaManager"]


def _uses_nvidia_binding():
    """Whether Numba's driver works with cuda.bindings' types. numba-cuda
    decided it in its driver module (USE_NV_BINDING); its newest versions
    have only that binding and no flag, while numba's own
    config.CUDA_USE_NVIDIA_BINDING still says 0 (seen on the H200)."""
    from numba.cuda.cudadrv import driver
    return bool(getattr(driver, "USE_NV_BINDING", True))


def _pointer(address):
    """The pointer type Numba's driver binding uses."""
    if _uses_nvidia_binding():
        from cuda.bindings.driver import CUdeviceptr
        return CUdeviceptr(address)
    return ctypes.c_uint64(address)


def _make_finalizer(address, allocations):
    def finalizer():
        # At exit, Context.reset() may have cleared the allocations before
        # the arrays' finalizers run (as RMM's plugin notes): nothing to do.
        buffer = allocations.pop(address, None) if allocations else None
        if buffer is not None:
            buffer.release()
    return finalizer


class CumemNumbaManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """Numba EMM plugin: device memory from libcumem (see the module's doc)."""

    def initialize(self):
        # Nothing to prepare: libcumem makes each device's resource on first use.
        pass

    def _ordinal(self):
        return int(self.context.device.id)

    def memalloc(self, size):
        if size == 0:  # no memory, and no key to file it under
            return MemoryPointer(self.context, _pointer(0), 0)
        resource = cumem.framework_resource(self._ordinal())
        buffer = resource.allocate(int(size))
        address = buffer.ptr
        # self.allocations belongs to the host-only manager and is cleared
        # on a context reset (which releases the buffers in it).
        self.allocations[address] = buffer
        return MemoryPointer(self.context, _pointer(address), size,
                             finalizer=_make_finalizer(address, self.allocations))

    def get_ipc_handle(self, memory):
        address = int(memory.handle) if not hasattr(memory.handle, "value") else memory.handle.value
        buffer = self.allocations.get(address)
        resource = buffer.resource if isinstance(buffer, cumem.Buffer) else None
        if resource is not None and resource.properties()["is_pool"]:
            raise RuntimeError(
                "libcumem pool memory cannot be shared with cuIpcGetMemHandle (Numba's IPC); "
                "share it with libcumem's IPC (cumem.Buffer.get_ipc_descriptor), or give the "
                "framework a cumem.Resource.legacy_device resource for Numba's IPC")
        return super().get_ipc_handle(memory)

    def get_memory_info(self):
        free, total = cumem.Device(self._ordinal()).memory_info()
        return MemoryInfo(free=free, total=total)

    @property
    def interface_version(self):
        return 1


# NUMBA_CUDA_MEMORY_MANAGER=cumem.numba makes Numba read this.
_numba_memory_manager = CumemNumbaManager
