"""Buffers, and DLPack through PyCapsules made and read with ctypes.pythonapi."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check, _out, _stream, _Handle, Device, Stream, DLDeviceType, MEMORY_KINDS
from . import device_count

_V = ctypes.c_void_p


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", _V), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", _V), ("strides", _V), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, _V)


class _Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", _V),
                ("deleter", _V), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


class _Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", _V), ("deleter", _V)]


# Capsule names must outlive their capsules: module-level bytes.
_VERSIONED = b"dltensor_versioned"
_LEGACY = b"dltensor"
_USED_VERSIONED = b"used_dltensor_versioned"
_USED_LEGACY = b"used_dltensor"

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [_V, ctypes.c_char_p, _V]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [_V, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = _V
_api.PyCapsule_GetPointer.argtypes = [_V, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _run_deleter(ptr, versioned):
    m = (_Versioned if versioned else _Legacy).from_address(ptr)
    if m.deleter:
        _Deleter(m.deleter)(ptr)


@ctypes.PYFUNCTYPE(None, _V)
def _capsule_destructor(capsule):
    # A capsule nobody consumed still owns its tensor (DLPack's rule).
    for name, versioned in ((_VERSIONED, True), (_LEGACY, False)):
        if _api.PyCapsule_IsValid(capsule, name):
            _run_deleter(_api.PyCapsule_GetPointer(capsule, name), versioned)
            return


_DESTRUCTOR = ctypes.cast(_capsule_destructor, _V)

_DTYPES = {
    "bool": (6, 8), "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
    "complex64": (5, 64), "complex128": (5, 128),
}


def _dtype(dtype):
    if dtype is None:
        return (1, 8, 1)
    if isinstance(dtype, str):
        if dtype not in _DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; one of {sorted(_DTYPES)} or (code, bits, lanes)")
        return _DTYPES[dtype] + (1,)
    code, bits, lanes = dtype
    return (int(code), int(bits), int(lanes))


class Buffer(_Handle):
    """Memory from a resource, or a DLPack tensor's memory (from_dlpack)."""

    _release = staticmethod(lib.cumem_buffer_release)

    def info(self):
        i = _lib.BufferInfo(ctypes.sizeof(_lib.BufferInfo))
        _check(lib.cumem_buffer_get_info(self.handle, ctypes.byref(i)))
        return i

    @property
    def ptr(self):
        return self.info().ptr or 0

    @property
    def size(self):
        return self.info().size

    @property
    def device_id(self):
        return self.info().device_id

    @property
    def memory_kind(self):
        """'host', 'device', 'pinned' or 'managed'."""
        return MEMORY_KINDS[self.info().memory_kind]

    @property
    def is_closed(self):
        b = ctypes.c_uint32()
        _check(lib.cumem_buffer_is_closed(self.handle, ctypes.byref(b)))
        return bool(b.value)

    def close(self, stream=None):
        _check(lib.cumem_buffer_close(self.handle, _stream(stream)))

    # Virtual memory (cumem.h "Virtual memory").
    def resize(self, new_size, stream=None):
        """A buffer of a virtual resource now has `new_size` bytes, contents kept
        (cuda.core's modify_allocation); `ptr` may change. Ordered on `stream`
        (None: the deallocation stream)."""
        _check(lib.cumem_buffer_resize(self.handle, int(new_size), _stream(stream)))

    def get_virtual_ipc_handle(self):
        """This virtual buffer's chunks as file descriptors, for another process."""
        from ._virtual import VirtualIpcHandle
        return VirtualIpcHandle(_out(lib.cumem_buffer_get_virtual_ipc_handle, self.handle))

    @classmethod
    def from_virtual_ipc_handle(cls, device, handle, stream=None):
        """Maps another process's virtual buffer on `device`."""
        from . import _device
        d = _device(device)  # alive across the call
        return cls(_out(lib.cumem_buffer_from_virtual_ipc_handle, d.handle, handle.handle,
                        _stream(stream)))

    def slice(self, offset, length):
        view = Buffer(_out(lib.cumem_buffer_slice, self.handle, int(offset), int(length)))
        view._parent = self  # which keeps its deallocation stream's owner alive
        return view

    def copy_to(self, dst=None, stream=None):
        """Copies the whole buffer into `dst` (same size); with no `dst`, into a
        new buffer from this buffer's own resource (cuda.core's copy_to), which
        is returned. Returns the destination."""
        if dst is None:
            return Buffer(_out(lib.cumem_buffer_copy_to_new, self.handle, _stream(stream)))
        _check(lib.cumem_buffer_copy_to(self.handle, dst.handle, _stream(stream)))
        return dst

    def copy_from(self, src, stream=None):
        _check(lib.cumem_buffer_copy_to(src.handle, self.handle, _stream(stream)))

    def fill(self, value, width=1, stream=None):
        _check(lib.cumem_buffer_fill(self.handle, int(value), int(width), _stream(stream)))

    # Managed memory (cuda.core's ManagedBuffer): locations are a cumem.Device
    # (or an ordinal) or a cumem.Host.
    def prefetch(self, location, stream=None):
        from ._batch import to_location
        _check(lib.cumem_buffer_prefetch(self.handle, to_location(location), _stream(stream)))

    def discard(self, stream=None):
        _check(lib.cumem_buffer_discard(self.handle, _stream(stream)))

    def discard_prefetch(self, location, stream=None):
        from ._batch import to_location
        _check(lib.cumem_buffer_discard_prefetch(self.handle, to_location(location),
                                                 _stream(stream)))

    @property
    def last_prefetch_location(self):
        """Where the pages were last asked to go (a Device or Host), or None
        when some never were or they went to different places."""
        from ._batch import from_location
        loc = _lib.Location()
        _check(lib.cumem_buffer_get_last_prefetch_location(self.handle, ctypes.byref(loc)))
        return from_location(loc)

    def _wait(self, stream):
        if stream is not None:
            stream.synchronize()
        elif self.device_id >= 0:
            Stream.legacy_default(self.device_id).synchronize()

    def write(self, data, offset=0, stream=None):
        """Copies bytes (any buffer-protocol object) into the buffer at `offset`
        and waits for the copy."""
        view = memoryview(data).cast("B")
        src = (ctypes.c_char * len(view)).from_buffer_copy(view)
        wrapped = Buffer(_out(lib.cumem_buffer_wrap, ctypes.addressof(src), len(view), None, None))
        try:
            _check(lib.cumem_buffer_copy_region(self.handle, int(offset), wrapped.handle, 0,
                                                len(view), _stream(stream)))
            self._wait(stream)
        finally:
            wrapped.release()

    def read(self, offset=0, length=None, stream=None):
        """The buffer's bytes (after the work queued on `stream`, or on the
        legacy default stream)."""
        n = self.size - offset if length is None else int(length)
        dst = (ctypes.c_char * n)()
        wrapped = Buffer(_out(lib.cumem_buffer_wrap, ctypes.addressof(dst), n, None, None))
        try:
            if n:
                _check(lib.cumem_buffer_copy_region(wrapped.handle, 0, self.handle, int(offset),
                                                    n, _stream(stream)))
            self._wait(stream)
        finally:
            wrapped.release()
        return dst.raw

    # ---- DLPack -------------------------------------------------------

    def __dlpack_device__(self):
        i = self.info()
        return {0: (DLDeviceType.kDLCPU, 0), 1: (DLDeviceType.kDLCUDA, max(i.device_id, 0)),
                2: (DLDeviceType.kDLCUDAHost, max(i.device_id, 0)),
                3: (DLDeviceType.kDLCUDAManaged, max(i.device_id, 0))}[i.memory_kind]

    def to_dlpack(self, dtype=None, shape=None, strides=None, byte_offset=0, device_type=0,
                  read_only=False, versioned=True):
        """A DLPack capsule of this buffer ('dltensor_versioned', or 'dltensor'
        with versioned=False): by default 1-D uint8, else the dtype (a name
        such as 'float32' or (code, bits, lanes)), shape and strides (in
        elements) given, validated by libcumem against the buffer's size."""
        o = _lib.DlpackOptions(ctypes.sizeof(_lib.DlpackOptions))
        o.dtype_code, o.dtype_bits, o.dtype_lanes = _dtype(dtype)
        keep = []
        if shape is not None:
            shape = tuple(int(s) for s in shape)
            arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            keep.append(arr)
            o.ndim, o.shape = len(shape), ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            strides = tuple(int(s) for s in strides)
            arr = (ctypes.c_int64 * max(len(strides), 1))(*strides)
            keep.append(arr)
            o.strides = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        o.byte_offset = int(byte_offset)
        o.device_type = int(device_type)
        o.read_only = 1 if read_only else 0
        if versioned:
            ptr = _out(lib.cumem_buffer_to_dlpack, self.handle, ctypes.byref(o))
            return _api.PyCapsule_New(ptr, _VERSIONED, _DESTRUCTOR)
        ptr = _out(lib.cumem_buffer_to_dlpack_legacy, self.handle, ctypes.byref(o))
        return _api.PyCapsule_New(ptr, _LEGACY, _DESTRUCTOR)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("libcumem buffers are exported without copies (copy=True asked)")
        device_type = 0
        if dl_device is not None and tuple(dl_device)[0] != self.__dlpack_device__()[0]:
            device_type = int(tuple(dl_device)[0])
        natural = self.__dlpack_device__()
        kind = device_type or natural[0]
        if kind == DLDeviceType.kDLCPU:
            self._ready_for_host()
        elif stream is not None and stream != -1 and kind in (DLDeviceType.kDLCUDA,
                                                               DLDeviceType.kDLCUDAManaged):
            self._order_before(int(stream), natural[1])
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        try:
            return self.to_dlpack(device_type=device_type, versioned=versioned)
        except CumemError as e:
            if device_type:
                raise BufferError(str(e)) from e
            raise

    def dlpack_view(self, **options):
        """An object whose __dlpack__ exports this buffer with `options` (those
        of to_dlpack: dtype, shape, strides, byte_offset, device_type,
        read_only), for from_dlpack of libraries that take only an object."""
        return _View(self, options)

    def _ready_for_host(self):
        # DLPack: the producer makes the data ready for its consumer. A CPU
        # consumer reads pinned or managed memory on the host, after any
        # GPU work on it: libcumem does not know which streams that work
        # used, so the device (for pinned memory, every device) is waited for.
        i = self.info()
        if MEMORY_KINDS[i.memory_kind] not in ("pinned", "managed"):
            return  # host memory: libcumem's work on it is synchronous
        ordinals = [i.device_id] if i.device_id >= 0 else range(device_count())
        for d in ordinals:
            Device(d).synchronize()

    @staticmethod
    def _order_before(consumer, device_id):
        # libcumem's calls without a stream run on the legacy default stream;
        # the consumer's stream waits for it (0/1/2 already synchronise with it).
        if consumer in (0, 1, 2):
            return
        dev = Device(device_id)
        theirs = Stream.wrap(dev, consumer)
        legacy = Stream.legacy_default(dev)
        theirs.wait(legacy)


class _View:
    def __init__(self, buffer, options):
        self._buffer, self._options = buffer, options

    def __dlpack_device__(self):
        t = self._options.get("device_type", 0)
        d = self._buffer.__dlpack_device__()
        return (t, 0 if t == DLDeviceType.kDLCPU else d[1]) if t else d

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("libcumem buffers are exported without copies (copy=True asked)")
        dev = self.__dlpack_device__()
        if dev[0] == DLDeviceType.kDLCPU:
            self._buffer._ready_for_host()
        elif stream is not None and stream != -1 and dev[0] in (DLDeviceType.kDLCUDA,
                                                                DLDeviceType.kDLCUDAManaged):
            Buffer._order_before(int(stream), dev[1])
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return self._buffer.to_dlpack(versioned=versioned, **self._options)


from . import CumemError  # noqa: E402


def from_dlpack(obj, allow_read_only=False):
    """A libcumem buffer over the memory of any DLPack exporter (an object
    with __dlpack__, or a capsule). The buffer calls the tensor's deleter
    when it is closed or released. Only compact row-major tensors are taken.
    A refused tensor stays the capsule's (its deleter runs when the capsule
    goes)."""
    if hasattr(obj, "__dlpack__"):
        kwargs = {}
        dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        if dev[0] in (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged):
            kwargs["stream"] = 1  # libcumem uses the legacy default stream
        try:
            capsule = obj.__dlpack__(max_version=(1, 1), **kwargs)
        except TypeError:  # an exporter before the versioned protocol
            capsule = obj.__dlpack__(**kwargs)
    else:
        capsule = obj
    raw = ctypes.c_void_p(id(capsule))  # a borrowed PyObject*, alive while `capsule` is
    if _api.PyCapsule_IsValid(raw, _VERSIONED):
        ptr = _api.PyCapsule_GetPointer(raw, _VERSIONED)
        handle = _out(lib.cumem_buffer_from_dlpack, ptr, 1 if allow_read_only else 0)
        _api.PyCapsule_SetName(capsule, _USED_VERSIONED)
    elif _api.PyCapsule_IsValid(raw, _LEGACY):
        ptr = _api.PyCapsule_GetPointer(raw, _LEGACY)
        handle = _out(lib.cumem_buffer_from_dlpack_legacy, ptr)
        _api.PyCapsule_SetName(capsule, _USED_LEGACY)
    else:
        raise TypeError("not a DLPack capsule ('dltensor' or 'dltensor_versioned', unused)")
    return Buffer(handle)
