"""libcumem as PyTorch's CUDA allocator.

Two ways, chosen by use_libcumem_allocator():
- the extension (`_cumem_torch.so`, built where PyTorch's C++ headers are
  found): libcumem behind PyTorch's whole allocator interface
  (c10::cuda::CUDACachingAllocator::CUDAAllocator), so that
  torch.cuda.memory_stats(), memory_summary(), empty_cache(), CUDA graphs
  and torch.compile(mode="reduce-overhead"), MemPool, recordStream, memory
  fractions and the memory history and snapshots all work;
- torch.cuda.memory.CUDAPluggableAllocator over cumem_torch_alloc/free:
  allocation and free only (PyTorch refuses the rest), for installs
  without the extension."""
import ctypes
import os

from ._lib import library_path, torch_alloc_symbol, torch_free_symbol

_EXTENSION = "_cumem_torch.so"
_extension = None


def extension_path():
    """Where the extension is: $CUMEM_TORCH_EXTENSION when set, else next to
    libcumem.so.1 (the wheel), else in a build folder beside it
    (bindings/python/torch_extension); None when none is found."""
    env = os.environ.get("CUMEM_TORCH_EXTENSION")
    if env:
        return env
    base = os.path.dirname(library_path())
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (here, base, os.path.join(base, "bindings", "python", "torch_extension")):
        path = os.path.join(folder, _EXTENSION)
        if os.path.exists(path):
            return path
    return None


def _load_extension():
    global _extension
    if _extension is None:
        import torch  # noqa: F401  (loads libc10 and libc10_cuda, which the extension needs)

        path = extension_path()
        if path is None:
            raise ImportError("libcumem's PyTorch extension (_cumem_torch.so) is not installed: "
                              "build libcumem where torch is importable, or pass pluggable=True")
        ext = ctypes.CDLL(path)
        ext.cumem_torch_allocator_install.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        ext.cumem_torch_allocator_install.restype = ctypes.c_int
        ext.cumem_torch_allocator_is_installed.argtypes = []
        ext.cumem_torch_allocator_is_installed.restype = ctypes.c_int
        _extension = ext
    return _extension


def has_extension():
    """Whether the extension can be loaded here (torch imported, the file found)."""
    try:
        _load_extension()
        return True
    except (ImportError, OSError):
        return False


def is_complete_allocator():
    """Whether the extension (the complete allocator) is PyTorch's allocator now."""
    return _extension is not None and bool(_extension.cumem_torch_allocator_is_installed())


def use_libcumem_allocator(pluggable=None):
    """Makes libcumem PyTorch's CUDA allocator; call it before PyTorch's first
    CUDA allocation (PyTorch refuses to change allocators after that).

    pluggable None (default): the extension where it is found, else
    CUDAPluggableAllocator; False: the extension, or ImportError; True:
    CUDAPluggableAllocator. The resource per device is
    cumem.set_framework_resource's, else the one cumem.configure (or
    $CUMEM_ALLOC_CONF, or the older $CUMEM_FRAMEWORK_RESOURCE) describes,
    read at each device's first allocation. Returns "extension" or the
    CUDAPluggableAllocator object."""
    import torch

    if pluggable is not True:
        try:
            ext = _load_extension()
        except (ImportError, OSError):
            if pluggable is False:
                raise
        else:
            message = ctypes.create_string_buffer(1024)
            if ext.cumem_torch_allocator_install(message, len(message)) != 0:
                raise RuntimeError(message.value.decode(errors="replace"))
            return "extension"
    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        library_path(), torch_alloc_symbol, torch_free_symbol)
    torch.cuda.memory.change_current_allocator(allocator)
    return allocator
