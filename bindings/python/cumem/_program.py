"""Programs compiled with NVRTC, their loaded libraries, kernels, and launch."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check, _out, _stream, _device, _Handle


def nvrtc_version():
    """NVRTC's (major, minor), loading it if needed (CumemError
    CUMEM_ERROR_NO_COMPILER where it cannot be loaded). Needs no GPU."""
    major, minor = ctypes.c_int32(), ctypes.c_int32()
    _check(lib.cumem_nvrtc_version(ctypes.byref(major), ctypes.byref(minor)))
    return major.value, minor.value


class Program(_Handle):
    """CUDA C++ compiled for one device (cumem_program_compile)."""

    _release = staticmethod(lib.cumem_program_release)

    def __init__(self, handle, device):
        super().__init__(handle)
        self.device = device

    @classmethod
    def compile(cls, device, source):
        """Compiles `source` (str) for `device` (a Device or an ordinal) with
        the default options (the device's architecture, cubin). Compile
        errors raise CumemError CUMEM_ERROR_COMPILATION with the compiler's
        log."""
        d = _device(device)
        return cls(_out(lib.cumem_program_compile, d.handle, source.encode(), None), d)

    @property
    def log(self):
        """The compiler's warnings ("" when there were none)."""
        out = ctypes.c_char_p()
        _check(lib.cumem_program_log(self.handle, ctypes.byref(out)))
        return (out.value or b"").decode(errors="replace")

    def load(self):
        """The compiled code loaded for the device, as a Library."""
        return Library(_out(lib.cumem_program_load, self.handle), self)


class Library(_Handle):
    """Loaded code (cumem_program_load); kernels come from it by name."""

    _release = staticmethod(lib.cumem_library_release)

    def __init__(self, handle, keep=None):
        super().__init__(handle)
        self._keep = keep

    def get_kernel(self, name):
        """The kernel `name` (CumemError CUMEM_ERROR_NOT_FOUND if absent)."""
        return Kernel(_out(lib.cumem_library_get_kernel, self.handle, name.encode()), self)


class Kernel(_Handle):
    _release = staticmethod(lib.cumem_kernel_release)

    def __init__(self, handle, library):
        super().__init__(handle)
        self.library = library


def _dims(value, what):
    dims = (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} takes 1 to 3 dimensions, got {len(dims)}")
    return dims + (1,) * (3 - len(dims))


def launch_config(grid, block, shared_memory_bytes=0):
    """A cumem_launch_config_t from the library's defaults (cumem_launch_config_init)
    with `grid` and `block` (an int or 1 to 3 ints each) set."""
    config = _lib.LaunchConfig()
    lib.cumem_launch_config_init(ctypes.byref(config))
    config.grid[:] = _dims(grid, "grid")
    config.block[:] = _dims(block, "block")
    config.shared_memory_bytes = int(shared_memory_bytes)
    return config


def kernel_arguments(args):
    """The ctypes values for `args`: a Buffer gives its pointer (void*);
    ctypes scalars (c_float, c_size_t, c_void_p, ...) are taken as they
    are. Plain Python ints and floats are refused (TypeError): their C type
    must be said, as the kernel's parameters have one."""
    from ._dlpack import Buffer  # noqa: PLC0415 (Buffer needs this package first)
    values = []
    for i, a in enumerate(args):
        if isinstance(a, Buffer):
            values.append(ctypes.c_void_p(_out(lib.cumem_buffer_ptr, a.handle)))
        elif isinstance(a, ctypes._SimpleCData):
            values.append(a)
        else:
            raise TypeError(f"kernel argument {i} is a {type(a).__name__}: give a Buffer or a "
                            "ctypes value of the parameter's C type (ctypes.c_float(1.0), ...)")
    return values


def launch(kernel, stream, grid, block, *args, shared_memory_bytes=0):
    """Launches `kernel` on `stream` (None: the legacy default stream) with
    `grid` and `block` and the arguments (kernel_arguments)."""
    config = launch_config(grid, block, shared_memory_bytes)
    values = kernel_arguments(args)
    pointers = (ctypes.c_void_p * max(len(values), 1))(
        *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    _check(lib.cumem_launch(kernel.handle, _stream(stream, kernel.library.device_ordinal), ctypes.byref(config), pointers,
                            len(values)))
