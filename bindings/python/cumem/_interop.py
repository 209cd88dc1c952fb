"""Memory of other libraries as libcumem buffers and back, without copies:
__cuda_array_interface__ (version 3, with its stream entry) both ways,
Buffer.from_handle / wrap (a pointer and an owner kept alive), and
as_buffer (cuda.core Buffers, CUDA-array-interface and DLPack exporters).
Buffer's methods call into here."""
import ctypes
import itertools
import threading

from . import _lib
from ._lib import lib
from . import _out, Stream, Device

_V = ctypes.c_void_p
# cumem_release_fn: (ptr, size, user_data).
ReleaseFn = ctypes.CFUNCTYPE(None, _V, ctypes.c_size_t, _V)

# The owners (or release functions) of wrapped memory, by the key passed as
# user_data, dropped when libcumem is done with the memory (which may be
# after the Python Buffer is gone: slices and DLPack tensors keep it).
_owners = {}
_owners_lock = threading.Lock()
_keys = itertools.count(1)


@ReleaseFn
def _release_trampoline(ptr, size, user_data):
    with _owners_lock:
        entry = _owners.pop(user_data, None)
    if entry is not None and entry[1] is not None:
        try:
            entry[1](ptr or 0, size)
        except Exception:  # a release function must not unwind into libcumem
            pass


def wrap(buffer_cls, ptr, size, owner=None, release=None):
    """A buffer over [ptr, ptr+size) that libcumem does not own: `owner` is
    kept alive until libcumem is done with the memory, then `release(ptr,
    size)` is called (both optional)."""
    key = next(_keys)
    with _owners_lock:
        _owners[key] = (owner, release)
    try:
        handle = _out(lib.cumem_buffer_wrap, _V(int(ptr)) if ptr else None, int(size),
                      _release_trampoline, key)
    except Exception:
        with _owners_lock:
            _owners.pop(key, None)  # the release function is never called on failure
        raise
    b = buffer_cls(handle)
    return b


# ---- __cuda_array_interface__ --------------------------------------------

# DLPack dtype names as typestr (the CUDA array interface's numpy spelling).
_TYPESTR = {
    "bool": "|b1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
    "float16": "<f2", "float32": "<f4", "float64": "<f8",
    "complex64": "<c8", "complex128": "<c16",
}
_LEGACY, _PER_THREAD = 1, 2  # CU_STREAM_LEGACY, CU_STREAM_PER_THREAD


def producer_stream(buffer):
    """The CUDA array interface's stream entry for a buffer: the native
    stream of its deallocation stream (where it was allocated and its
    stream-ordered work goes), else 1, the legacy default stream, on which
    libcumem's calls without a stream run. Never 0 (the interface forbids
    it)."""
    s = getattr(buffer, "_stream", None)
    parent = getattr(buffer, "_parent", None)
    while s is None and parent is not None:
        s = getattr(parent, "_stream", None)
        parent = getattr(parent, "_parent", None)
    native = s.native if s is not None else 0
    if native in (0, _LEGACY):
        return _LEGACY
    return native


def interface(buffer, typestr="|u1", shape=None, strides=None, read_only=False):
    i = buffer.info()
    if not i.device_accessible:
        raise AttributeError("__cuda_array_interface__ is for memory a device can access; this "
                             f"buffer is {buffer.memory_kind} memory (use __dlpack__ or read())")
    itemsize = int(typestr[2:]) if len(typestr) > 2 else 1
    if shape is None:
        if i.size % itemsize:
            raise ValueError(f"{i.size} bytes are not a whole number of {typestr} items")
        shape = (i.size // itemsize,)
    shape = tuple(int(n) for n in shape)
    count = 1
    for n in shape:
        count *= n
    if strides is None and count * itemsize > i.size:
        raise ValueError(f"shape {shape} of {typestr} needs {count * itemsize} bytes; the buffer "
                         f"has {i.size}")
    return {"shape": shape, "typestr": typestr, "data": (i.ptr or 0, bool(read_only)),
            "version": 3, "strides": None if strides is None else tuple(int(s) for s in strides),
            "descr": [("", typestr)], "stream": producer_stream(buffer)}


class ArrayView:
    """An object whose __cuda_array_interface__ describes a buffer with a
    dtype and shape (Buffer.cuda_array_view); it keeps the buffer alive."""

    def __init__(self, buffer, dtype, shape, strides, read_only):
        if dtype not in _TYPESTR:
            raise ValueError(f"dtype {dtype!r} has no CUDA-array-interface typestr; one of "
                             f"{sorted(_TYPESTR)}")
        self._buffer = buffer
        self.__cuda_array_interface__ = interface(buffer, _TYPESTR[dtype], shape, strides,
                                                  read_only)


def _parse_interface(obj):
    cai = obj.__cuda_array_interface__
    ptr, _read_only = cai["data"]
    typestr = cai["typestr"]
    itemsize = int(typestr[2:])
    shape = tuple(cai["shape"])
    count = 1
    for n in shape:
        count *= n
    strides = cai.get("strides")
    if strides is not None and count > 1:
        # Only compact row-major arrays are one buffer of bytes.
        expected, step = [], itemsize
        for n in reversed(shape):
            expected.append(step)
            step *= n
        expected.reverse()
        if tuple(s for s, n in zip(strides, shape) if n != 1) != \
                tuple(s for s, n in zip(expected, shape) if n != 1):
            raise ValueError(f"the array is not contiguous (strides {tuple(strides)} for shape "
                             f"{shape}); libcumem buffers are contiguous bytes")
    return (ptr or 0), count * itemsize, cai.get("stream"), cai.get("mask")


def _order_after(stream_value, device_id, stream):
    """The CUDA array interface's consumer rule: work queued by libcumem after
    this (on `stream`, or on the legacy default stream) waits for the
    producer's stream."""
    if stream_value is None:
        return
    if stream_value == 0:
        raise ValueError("the array's __cuda_array_interface__ gives stream 0, which the "
                         "interface forbids (1 is the legacy default stream)")
    if device_id < 0:
        return
    dev = Device(device_id)
    ours = stream if stream is not None else Stream.legacy_default(dev)
    theirs = Stream.legacy_default(dev) if stream_value == _LEGACY else \
        Stream.per_thread_default(dev) if stream_value == _PER_THREAD else \
        Stream.wrap(dev, int(stream_value))
    if theirs.native != ours.native:
        ours.wait(theirs)


def as_buffer(buffer_cls, obj, stream=None):
    """A libcumem buffer over `obj`'s memory, without a copy."""
    if isinstance(obj, buffer_cls):
        return obj
    from . import cuda_core
    inner = cuda_core.buffer_of(obj)
    if inner is not None:
        return inner
    if cuda_core.is_cuda_core_buffer(obj):
        return wrap(buffer_cls, int(obj.handle), int(obj.size), owner=obj)
    if hasattr(obj, "__cuda_array_interface__"):
        ptr, nbytes, producer, mask = _parse_interface(obj)
        if mask is not None:
            raise ValueError("masked arrays (a __cuda_array_interface__ with a mask) are not "
                             "taken")
        b = wrap(buffer_cls, ptr, nbytes, owner=obj)
        from . import _stream
        _order_after(producer, b.device_id, _stream(stream, b.device_id))
        return b
    if hasattr(obj, "__dlpack__"):
        from ._dlpack import from_dlpack
        return from_dlpack(obj)
    raise TypeError(f"cannot view a {type(obj).__name__} as a libcumem buffer: give a cumem "
                    "Buffer, a cuda.core Buffer, an object with __cuda_array_interface__ or "
                    "__dlpack__")
