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
        _check(lib.cumem_buffer_close(self.handle, _stream(stream, self._ordinal)))

    # Virtual memory (cumem.h "Virtual memory").
    def resize(self, new_size, stream=None):
        """A buffer of a virtual resource now has `new_size` bytes, contents kept
        (cuda.core's modify_allocation); `ptr` may change. Ordered on `stream`
        (None: the deallocation stream)."""
        _check(lib.cumem_buffer_resize(self.handle, int(new_size),
                                       _stream(stream, self._ordinal)))

    def get_dmabuf(self, pcie=False):
        """The buffer's device memory as a DmaBuf (its backing allocation,
        rounded out to host pages, as a dma-buf fd, and the buffer's offset
        in it), for RDMA registration (ibv_reg_dmabuf_mr); pcie: map it
        through PCIe BAR1."""
        from . import _engines
        return _engines.get_dmabuf(self, _engines.DMABUF_MAPPING_PCIE if pcie else 0)

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
                        _stream(stream, d.ordinal)))

    def slice(self, offset, length):
        view = Buffer(_out(lib.cumem_buffer_slice, self.handle, int(offset), int(length)))
        view._parent = self  # which keeps its deallocation stream's owner alive
        return view

    def copy_to(self, dst=None, stream=None):
        """Copies the whole buffer into `dst` (same size); with no `dst`, into a
        new buffer from this buffer's own resource (cuda.core's copy_to), which
        is returned. Returns the destination."""
        s = _stream(stream, self._ordinal)
        if dst is None:
            copy = Buffer(_out(lib.cumem_buffer_copy_to_new, self.handle, s))
            copy._stream = s  # its deallocation stream: kept alive with the buffer
            return copy
        _check(lib.cumem_buffer_copy_to(self.handle, as_buffer(dst).handle, s))
        return dst

    def copy_from(self, src, stream=None):
        _check(lib.cumem_buffer_copy_to(as_buffer(src).handle, self.handle,
                                        _stream(stream, self._ordinal)))

    def fill(self, value, width=1, stream=None):
        _check(lib.cumem_buffer_fill(self.handle, int(value), int(width),
                                     _stream(stream, self._ordinal)))

    # Managed memory (cuda.core's ManagedBuffer): locations are a cumem.Device
    # (or an ordinal) or a cumem.Host.
    def prefetch(self, location, stream=None):
        from ._batch import to_location
        _check(lib.cumem_buffer_prefetch(self.handle, to_location(location),
                                         _stream(stream, self._ordinal)))

    def discard(self, stream=None):
        _check(lib.cumem_buffer_discard(self.handle, _stream(stream, self._ordinal)))

    def discard_prefetch(self, location, stream=None):
        from ._batch import to_location
        _check(lib.cumem_buffer_discard_prefetch(self.handle, to_location(location),
                                                 _stream(stream, self._ordinal)))

    @property
    def last_prefetch_location(self):
        """Where the pages were last asked to go (a Device or Host), or None
        when some never were or they went to different places."""
        from ._batch import from_location
        loc = _lib.Location()
        _check(lib.cumem_buffer_get_last_prefetch_location(self.handle, ctypes.byref(loc)))
        return from_location(loc)

    def _ordinal(self):
        # The device of a foreign stream that does not say its own.
        return max(self.device_id, 0)

    def _wait(self, stream):
        if stream is not None:
            stream.synchronize()
        elif self.device_id >= 0:
            Stream.legacy_default(self.device_id).synchronize()

    def write(self, data, offset=0, stream=None):
        """Copies bytes (any buffer-protocol object) into the buffer at `offset`
        and waits for the copy."""
        stream = _stream(stream, self._ordinal)
        view = memoryview(data).cast("B")
        src = (ctypes.c_char * len(view)).from_buffer_copy(view)
        wrapped = Buffer(_out(lib.cumem_buffer_wrap, ctypes.addressof(src), len(view), None, None))
        try:
            _check(lib.cumem_buffer_copy_region(self.handle, int(offset), wrapped.handle, 0,
                                                len(view), stream))
            self._wait(stream)
        finally:
            wrapped.release()

    def read(self, offset=0, length=None, stream=None):
        """The buffer's bytes (after the work queued on `stream`, or on the
        legacy default stream)."""
        stream = _stream(stream, self._ordinal)
        n = self.size - offset if length is None else int(length)
        dst = (ctypes.c_char * n)()
        wrapped = Buffer(_out(lib.cumem_buffer_wrap, ctypes.addressof(dst), n, None, None))
        try:
            if n:
                _check(lib.cumem_buffer_copy_region(wrapped.handle, 0, self.handle, int(offset),
                                                    n, stream))
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


    # Interoperability, the rest of cumem.h's buffer calls, IPC
    # (_interop.py, _ipc.py, cuda_core.py).
    @property
    def resource(self):
        """The Resource the memory came from, or None (wrapped, registered or
        DLPack memory)."""
        from . import Resource
        h = _out(lib.cumem_buffer_resource, self.handle)
        return Resource(h) if h else None

    @property
    def is_device_accessible(self):
        return bool(self.info().device_accessible)

    @property
    def is_host_accessible(self):
        return bool(self.info().host_accessible)

    def set_deallocation_stream(self, stream):
        """The stream that frees the buffer when it is closed without one or
        released (None: the legacy default stream)."""
        s = _stream(stream, self._ordinal)
        _check(lib.cumem_buffer_set_deallocation_stream(self.handle, s))
        self._stream = s  # retained by libcumem: its owner must stay alive too

    def copy_region(self, dst_offset, src, src_offset, length, stream=None):
        """Copies `length` bytes from src+src_offset into this buffer at dst_offset."""
        _check(lib.cumem_buffer_copy_region(self.handle, int(dst_offset), as_buffer(src).handle,
                                            int(src_offset), int(length),
                                            _stream(stream, self._ordinal)))

    def advise(self, advice, location=None):
        """A usage hint for managed memory: advice "set_read_mostly",
        "unset_read_mostly", "set_preferred_location",
        "unset_preferred_location", "set_accessed_by" or "unset_accessed_by";
        location a Device, an ordinal or a cumem.Host (for the location hints)."""
        from ._batch import to_location
        if advice not in _ADVICE:
            raise ValueError(f"advice {advice!r} is not one of {', '.join(_ADVICE)}")
        _check(lib.cumem_buffer_advise(self.handle, _ADVICE.index(advice) + 1,
                                       to_location(location, allow_none=True)))

    @classmethod
    def from_handle(cls, ptr, size, owner=None):
        """A buffer over memory libcumem does not own (cuda.core's
        Buffer.from_handle): `owner`, if given, is kept alive until libcumem is
        done with the memory. Device and accessibility come from the driver's
        pointer attributes (host memory where the driver does not know ptr)."""
        from . import _interop
        return _interop.wrap(cls, ptr, size, owner=owner)

    @classmethod
    def wrap(cls, ptr, size, release=None, owner=None):
        """As from_handle, and `release(ptr, size)` is called once when libcumem
        is done with the memory (on the thread that closes or drops it last)."""
        from . import _interop
        return _interop.wrap(cls, ptr, size, owner=owner, release=release)

    @classmethod
    def wrap_owned(cls, resource, ptr, size):
        """Takes ownership of memory resource.allocate_raw(size) returned:
        closing frees it through the resource."""
        return cls(_out(lib.cumem_buffer_wrap_owned, resource.handle, _V(int(ptr)) if ptr else None,
                        int(size)))

    @classmethod
    def register_host(cls, device, obj, size=None):
        """Page-locks host memory as a buffer (cuMemHostRegister): `obj` a
        writable buffer-protocol object (kept alive while registered), or an
        address with `size`."""
        from . import _device
        d = _device(device)
        keep = None
        if isinstance(obj, int):
            if size is None:
                raise TypeError("register_host(device, address, size): an address needs its size")
            ptr, n = obj, int(size)
        else:
            view = memoryview(obj).cast("B")
            if view.readonly:
                raise TypeError("register_host needs writable memory")
            keep = (ctypes.c_char * len(view)).from_buffer(view)
            ptr, n = ctypes.addressof(keep), len(view)
        b = cls(_out(lib.cumem_buffer_register_host, d.handle, _V(ptr), n))
        b._keep = (obj, keep)
        return b

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface, version 3 (Numba, CuPy and others read it):
        one-dimensional bytes ("|u1"), and `stream`, the stream the buffer's
        work is ordered on (its deallocation stream, else 1: the legacy
        default stream, where libcumem's calls without a stream run).
        AttributeError for memory no device can access."""
        from . import _interop
        return _interop.interface(self)

    def cuda_array_view(self, dtype="uint8", shape=None, strides=None, read_only=False):
        """An object whose __cuda_array_interface__ shows this buffer with a
        dtype ("float32", ...), shape and strides (in bytes, as the interface
        counts them), e.g. numba.cuda.as_cuda_array(b.cuda_array_view("float32"))."""
        from . import _interop
        return _interop.ArrayView(self, dtype, shape, strides, read_only)

    def get_ipc_descriptor(self):
        """This buffer's IpcDescriptor (a buffer of an IPC-enabled pool, a host
        shared resource or a legacy device resource)."""
        from . import _ipc
        return _ipc.buffer_descriptor(self)

    @classmethod
    def from_ipc_descriptor(cls, resource, descriptor, stream=None):
        """Opens another process's buffer: `resource` imported from its pool
        (Resource.from_allocation_handle) or a legacy device resource. See
        IpcDescriptor for what a descriptor can and cannot do."""
        from . import _ipc
        return _ipc.buffer_from_descriptor(cls, resource, descriptor, stream)

    def to_cuda_core(self):
        """A cuda.core Buffer over this memory (cumem.cuda_core), keeping it alive."""
        from . import cuda_core
        return cuda_core.to_cuda_core(self)

    def __repr__(self):
        try:
            i = self.info()
        except CumemError:
            return "cumem.Buffer(closed)"
        except ValueError:
            return "cumem.Buffer(released)"
        return f"cumem.Buffer(ptr={i.ptr or 0:#x}, size={i.size}, {MEMORY_KINDS[i.memory_kind]})"


_ADVICE = ("set_read_mostly", "unset_read_mostly", "set_preferred_location",
           "unset_preferred_location", "set_accessed_by", "unset_accessed_by")


def as_buffer(obj, stream=None):
    """A libcumem Buffer over `obj`'s memory, without a copy: a cumem Buffer
    (itself), a cuda.core Buffer (the libcumem buffer behind it, or one that
    keeps it alive), an object with __cuda_array_interface__ (Numba, CuPy,
    PyTorch arrays: contiguous ones; libcumem's later work on `stream`, or
    on the legacy default stream, waits for the array's stream), or a DLPack
    exporter (from_dlpack)."""
    from . import _interop
    return _interop.as_buffer(Buffer, obj, stream)


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
