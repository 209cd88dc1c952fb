"""Programs compiled with NVRTC, their loaded libraries, kernels, and launch."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check, _out, _stream, _device, _Handle

_V = ctypes.c_void_p


def nvrtc_version():
    """NVRTC's (major, minor), loading it if needed (CumemError
    CUMEM_ERROR_NO_COMPILER where it cannot be loaded). Needs no GPU."""
    major, minor = ctypes.c_int32(), ctypes.c_int32()
    _check(lib.cumem_nvrtc_version(ctypes.byref(major), ctypes.byref(minor)))
    return major.value, minor.value


class ProgramOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("code_type", ctypes.c_int32),
                ("arch", ctypes.c_char_p), ("options", ctypes.POINTER(ctypes.c_char_p)),
                ("name_expressions", ctypes.POINTER(ctypes.c_char_p)), ("name", ctypes.c_char_p),
                ("num_options", ctypes.c_uint32), ("num_name_expressions", ctypes.c_uint32)]


class KernelAttributes(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32)] + [
        (n, ctypes.c_int32) for n in ("max_threads_per_block", "shared_size_bytes",
                                      "const_size_bytes", "local_size_bytes", "num_regs",
                                      "ptx_version", "binary_version",
                                      "max_dynamic_shared_size_bytes")]


_CODE_TYPES = ("cubin", "ptx")  # cumem_code_type_t
_S = _lib.status_t
for _name, _res, _args in [
    ("cumem_program_compile", _S, [_V, ctypes.c_char_p, ctypes.POINTER(ProgramOptions),
                                   _lib.c_void_pp]),
    ("cumem_program_code", _S, [_V, _lib.c_void_pp, ctypes.POINTER(ctypes.c_size_t)]),
    ("cumem_program_lowered_name", _S, [_V, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]),
    ("cumem_library_load_data", _S, [_V, ctypes.c_char_p, ctypes.c_size_t, _lib.c_void_pp]),
    ("cumem_kernel_get_attributes", _S, [_V, ctypes.POINTER(KernelAttributes)]),
    ("cumem_kernel_native", _S, [_V, _lib.c_void_pp]),
]:
    _lib._declare(_name, _res, *_args)


def _strings(values, what):
    values = [v if isinstance(v, bytes) else str(v).encode() for v in values]
    return (ctypes.c_char_p * max(len(values), 1))(*values), len(values)


def program_options(arch=None, options=(), name_expressions=(), name=None, code_type="cubin"):
    """cumem_program_options_t (and what must stay alive while it is used)."""
    if code_type not in _CODE_TYPES:
        raise ValueError(f"code_type {code_type!r} is not one of {', '.join(_CODE_TYPES)}")
    if isinstance(options, (str, bytes)) or isinstance(name_expressions, (str, bytes)):
        raise TypeError("options and name_expressions are sequences of strings")
    o = ProgramOptions(ctypes.sizeof(ProgramOptions), _CODE_TYPES.index(code_type))
    opts, n_opts = _strings(options, "options")
    names, n_names = _strings(name_expressions, "name_expressions")
    o.arch = arch.encode() if arch else None
    o.options = ctypes.cast(opts, ctypes.POINTER(ctypes.c_char_p)) if n_opts else None
    o.num_options = n_opts
    o.name_expressions = ctypes.cast(names, ctypes.POINTER(ctypes.c_char_p)) if n_names else None
    o.num_name_expressions = n_names
    o.name = name.encode() if name else None
    return o, (opts, names)


class Program(_Handle):
    """CUDA C++ compiled for one device (cumem_program_compile)."""

    _release = staticmethod(lib.cumem_program_release)

    def __init__(self, handle, device):
        super().__init__(handle)
        self.device = device

    @classmethod
    def compile(cls, device, source, *, arch=None, options=(), name_expressions=(), name=None,
                code_type="cubin"):
        """Compiles `source` (str) for `device` (a Device, an ordinal or a
        cuda.core Device). arch: NVRTC's spelling ("sm_90", "compute_90";
        None: the device's); options: extra NVRTC flags ("-std=c++17",
        "-DN=4"); name_expressions: templates to instantiate and name
        ("scale<float>", see lowered_name); name: the program's name in
        messages; code_type "cubin" (default) or "ptx". Compile errors raise
        CumemError CUMEM_ERROR_COMPILATION with the compiler's log."""
        d = _device(device)
        if not (arch or options or name_expressions or name) and code_type == "cubin":
            return cls(_out(lib.cumem_program_compile, d.handle, source.encode(), None), d)
        o, keep = program_options(arch, options, name_expressions, name, code_type)
        handle = _out(lib.cumem_program_compile, d.handle, source.encode(), ctypes.byref(o))
        del keep  # copied by libcumem
        return cls(handle, d)

    @property
    def code(self):
        """The compiled code (cubin, or PTX with its terminating NUL), as bytes."""
        ptr, n = _V(), ctypes.c_size_t()
        _check(lib.cumem_program_code(self.handle, ctypes.byref(ptr), ctypes.byref(n)))
        return ctypes.string_at(ptr.value, n.value) if n.value else b""

    def lowered_name(self, name_expression):
        """The mangled name of a name expression given at compile time
        (CumemError CUMEM_ERROR_NOT_FOUND for one that was not)."""
        out = ctypes.c_char_p()
        _check(lib.cumem_program_lowered_name(self.handle, name_expression.encode(),
                                              ctypes.byref(out)))
        return out.value.decode()

    @property
    def log(self):
        """The compiler's warnings ("" when there were none)."""
        out = ctypes.c_char_p()
        _check(lib.cumem_program_log(self.handle, ctypes.byref(out)))
        return (out.value or b"").decode(errors="replace")

    def load(self):
        """The compiled code loaded for the device, as a Library."""
        return Library(_out(lib.cumem_program_load, self.handle), self, self.device)


class Library(_Handle):
    """Loaded code (cumem_program_load, load_data); kernels come from it by name."""

    _release = staticmethod(lib.cumem_library_release)

    def __init__(self, handle, keep=None, device=None):
        super().__init__(handle)
        self._keep = keep
        self.device = device

    @property
    def device_ordinal(self):
        return self.device.ordinal if self.device is not None else 0

    @classmethod
    def load_data(cls, device, image):
        """Loads precompiled cubin, PTX (NUL-terminated) or fatbin bytes for `device`."""
        d = _device(device)
        data = bytes(image)
        return cls(_out(lib.cumem_library_load_data, d.handle, data, len(data)), None, d)

    def get_kernel(self, name):
        """The kernel `name` (CumemError CUMEM_ERROR_NOT_FOUND if absent)."""
        return Kernel(_out(lib.cumem_library_get_kernel, self.handle, name.encode()), self)


class Kernel(_Handle):
    _release = staticmethod(lib.cumem_kernel_release)

    def __init__(self, handle, library):
        super().__init__(handle)
        self.library = library

    def attributes(self):
        """The kernel's attributes on its device (registers, shared memory, ...) as a dict."""
        a = KernelAttributes(ctypes.sizeof(KernelAttributes))
        _check(lib.cumem_kernel_get_attributes(self.handle, ctypes.byref(a)))
        return {k: getattr(a, k) for k, _ in KernelAttributes._fields_[1:]}

    @property
    def native(self):
        """The CUkernel (an int)."""
        return _out(lib.cumem_kernel_native, self.handle) or 0


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


def _is_cuda_core_buffer(obj):
    from .cuda_core import is_cuda_core_buffer
    return is_cuda_core_buffer(obj)


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
        elif hasattr(a, "__cuda_array_interface__"):  # Numba, CuPy, PyTorch arrays
            values.append(ctypes.c_void_p(a.__cuda_array_interface__["data"][0]))
        elif _is_cuda_core_buffer(a):
            values.append(ctypes.c_void_p(int(a.handle)))
        else:
            raise TypeError(f"kernel argument {i} is a {type(a).__name__}: give a Buffer (or an "
                            "array with __cuda_array_interface__, a cuda.core Buffer) or a ctypes "
                            "value of the parameter's C type (ctypes.c_float(1.0), ...)")
    return values


def launch(kernel, stream, grid, block, *args, shared_memory_bytes=0):
    """Launches `kernel` on `stream` (None: the legacy default stream) with
    `grid` and `block` and the arguments (kernel_arguments)."""
    config = launch_config(grid, block, shared_memory_bytes)
    values = kernel_arguments(args)
    pointers = (ctypes.c_void_p * max(len(values), 1))(
        *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    s = _stream(stream, kernel.library.device_ordinal)
    _check(lib.cumem_launch(kernel.handle, s, ctypes.byref(config), pointers,
                            len(values)))
