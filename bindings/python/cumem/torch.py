"""libcumem as PyTorch's CUDA allocator (torch.cuda.memory.CUDAPluggableAllocator)."""
from ._lib import library_path, torch_alloc_symbol, torch_free_symbol


def use_libcumem_allocator():
    """Makes libcumem PyTorch's CUDA allocator; call it before PyTorch's first
    CUDA allocation (PyTorch refuses to change allocators after that). The
    resource per device is cumem.set_framework_resource's, else the one
    cumem.configure (or $CUMEM_ALLOC_CONF, or the older
    $CUMEM_FRAMEWORK_RESOURCE) describes. Returns the allocator object."""
    import torch

    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        library_path(), torch_alloc_symbol, torch_free_symbol)
    torch.cuda.memory.change_current_allocator(allocator)
    return allocator
