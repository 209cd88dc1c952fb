"""The rest of the resources: pool and managed options, the legacy device
and host shared kinds, the tracking, logging and callback adaptors, pool
attributes, and raw allocation. Resource's methods call into here."""
import ctypes
import itertools
import threading

from . import _lib
from ._lib import lib
from . import _check, _out, _stream, _device

_V = ctypes.c_void_p
_S = _lib.status_t


class PoolOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("new_pool", ctypes.c_uint32),
                ("release_threshold", ctypes.c_uint64), ("max_size", ctypes.c_uint64),
                ("ipc_enabled", ctypes.c_uint32), ("release_all_unused", ctypes.c_uint32),
                ("use_host_numa_id", ctypes.c_uint32), ("host_numa_id", ctypes.c_int32)]


class ManagedOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("preferred_location", _lib.Location),
                ("disable_pool", ctypes.c_uint32)]


class PoolAttributes(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("reuse_follow_event_dependencies", ctypes.c_uint32),
                ("reuse_allow_opportunistic", ctypes.c_uint32),
                ("reuse_allow_internal_dependencies", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64) for n in ("release_threshold", "reserved_mem_current",
                                       "reserved_mem_high", "used_mem_current", "used_mem_high")]


# cumem_allocate_fn, cumem_deallocate_fn (cumem_destroy_fn is _lib.DestroyFn).
AllocateFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_size_t, _V, _V, ctypes.POINTER(_V))
DeallocateFn = ctypes.CFUNCTYPE(None, _V, ctypes.c_size_t, _V, _V)


class ResourceCallbacks(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("memory_kind", ctypes.c_int32),
                ("allocate", AllocateFn), ("deallocate", DeallocateFn),
                ("destroy", _lib.DestroyFn), ("user_data", _V),
                ("device_accessible", ctypes.c_uint32), ("host_accessible", ctypes.c_uint32),
                ("stream_ordered", ctypes.c_uint32), ("reserved0", ctypes.c_uint32)]


for _name, _res, _args in [
    ("cumem_device_resource_create", _S, [_V, ctypes.POINTER(PoolOptions), _lib.c_void_pp]),
    ("cumem_pinned_resource_create", _S, [_V, ctypes.POINTER(PoolOptions), _lib.c_void_pp]),
    ("cumem_managed_resource_create", _S, [_V, ctypes.POINTER(ManagedOptions), _lib.c_void_pp]),
    ("cumem_legacy_device_resource_create", _S, [_V, _lib.c_void_pp]),
    ("cumem_host_shared_resource_create", _S, [ctypes.c_uint64, _lib.c_void_pp]),
    ("cumem_tracking_resource_create", _S, [_V, ctypes.c_uint32, _lib.c_void_pp]),
    ("cumem_tracking_resource_report", _S, [_V, ctypes.c_char_p, ctypes.c_size_t,
                                            ctypes.POINTER(ctypes.c_size_t)]),
    ("cumem_tracking_resource_outstanding", _S, [_V, ctypes.POINTER(ctypes.c_uint64),
                                                 ctypes.POINTER(ctypes.c_uint64)]),
    ("cumem_logging_resource_create", _S, [_V, ctypes.c_char_p, _lib.c_void_pp]),
    ("cumem_callback_resource_create", _S, [_V, ctypes.POINTER(ResourceCallbacks),
                                            _lib.c_void_pp]),
    ("cumem_resource_allocate_raw", _S, [_V, ctypes.c_size_t, _V, _lib.c_void_pp]),
    ("cumem_resource_deallocate_raw", _S, [_V, _V, ctypes.c_size_t, _V]),
    ("cumem_resource_pool_get_attributes", _S, [_V, ctypes.POINTER(PoolAttributes)]),
    ("cumem_resource_pool_set_attributes", _S, [_V, ctypes.POINTER(PoolAttributes)]),
    ("cumem_resource_pool_reset_highs", _S, [_V]),
    ("cumem_resource_pool_trim", _S, [_V, ctypes.c_uint64]),
    ("cumem_resource_pool_set_access", _S, [_V, _V, ctypes.c_uint32]),
    ("cumem_resource_pool_get_access", _S, [_V, _V, ctypes.POINTER(ctypes.c_uint32)]),
    ("cumem_resource_set_peer_access", _S, [_V, _V, ctypes.c_uint32]),
    ("cumem_resource_get_peer_access", _S, [_V, _V, ctypes.POINTER(ctypes.c_uint32)]),
    ("cumem_resource_pool_native", _S, [_V, _lib.c_void_pp]),
]:
    _lib._declare(_name, _res, *_args)


def pool_options(new_pool=False, release_threshold=0, max_size=0, ipc_enabled=False,
                 release_all_unused=False, host_numa_id=None):
    """cumem_pool_options_t with cuda.core's and the header's names; libcumem
    checks the combination (max_size and ipc_enabled need new_pool, ...)."""
    o = PoolOptions(ctypes.sizeof(PoolOptions))
    o.new_pool = int(bool(new_pool))
    o.release_threshold = int(release_threshold)
    o.max_size = int(max_size)
    o.ipc_enabled = int(bool(ipc_enabled))
    o.release_all_unused = int(bool(release_all_unused))
    if host_numa_id is not None:
        o.use_host_numa_id, o.host_numa_id = 1, int(host_numa_id)
    return o


def managed_options(preferred_location=None, disable_pool=False):
    from ._batch import to_location
    return ManagedOptions(ctypes.sizeof(ManagedOptions),
                          to_location(preferred_location, allow_none=True),
                          int(bool(disable_pool)))


def tracking_report(resource):
    n = ctypes.c_size_t()
    _check(lib.cumem_tracking_resource_report(resource.handle, None, 0, ctypes.byref(n)))
    buf = ctypes.create_string_buffer(n.value + 1)
    _check(lib.cumem_tracking_resource_report(resource.handle, buf, n.value + 1, ctypes.byref(n)))
    return buf.value.decode("utf-8", "replace")


def tracking_outstanding(resource):
    count, nbytes = ctypes.c_uint64(), ctypes.c_uint64()
    _check(lib.cumem_tracking_resource_outstanding(resource.handle, ctypes.byref(count),
                                                   ctypes.byref(nbytes)))
    return count.value, nbytes.value


# The callback resource: one pair of C trampolines for every resource, the
# Python functions found by the key passed as user_data and dropped by the
# destroy trampoline when the resource's last reference goes (buffers keep
# a resource alive past its Python object).
_callbacks = {}
_callbacks_lock = threading.Lock()
_keys = itertools.count(1)
MEMORY_KIND_VALUES = {"host": 0, "device": 1, "pinned": 2, "managed": 3}


@AllocateFn
def _allocate_trampoline(size, stream, user_data, out_ptr):
    entry = _callbacks.get(user_data)
    if entry is None:
        return 1
    try:
        ptr = entry[0](size, stream or 0)
    except Exception:  # must not unwind into libcumem: out of memory
        return 1
    if not ptr:
        return 1
    out_ptr[0] = int(ptr)
    return 0


@DeallocateFn
def _deallocate_trampoline(ptr, size, stream, user_data):
    entry = _callbacks.get(user_data)
    if entry is None:
        return
    try:
        entry[1](ptr or 0, size, stream or 0)
    except Exception:  # nothing to report it to: libcumem's log has the free
        pass


@_lib.DestroyFn
def _destroy_trampoline(user_data):
    with _callbacks_lock:
        _callbacks.pop(user_data, None)


def callback_resource(resource_cls, allocate, deallocate, device, memory_kind, device_accessible,
                      host_accessible, stream_ordered):
    if memory_kind not in MEMORY_KIND_VALUES:
        raise ValueError(f"memory_kind {memory_kind!r} is not one of "
                         f"{', '.join(MEMORY_KIND_VALUES)}")
    key = next(_keys)
    with _callbacks_lock:
        _callbacks[key] = (allocate, deallocate)
    c = ResourceCallbacks(ctypes.sizeof(ResourceCallbacks), MEMORY_KIND_VALUES[memory_kind],
                          _allocate_trampoline, _deallocate_trampoline, _destroy_trampoline, key,
                          int(bool(device_accessible)), int(bool(host_accessible)),
                          int(bool(stream_ordered)), 0)
    d = _device(device) if device is not None else None
    try:
        handle = _out(lib.cumem_callback_resource_create, d.handle if d else None, ctypes.byref(c))
    except Exception:
        with _callbacks_lock:
            _callbacks.pop(key, None)  # no resource was made: destroy never runs
        raise
    return resource_cls(handle, (d,) if d else ())


def allocate_raw(resource, size, stream):
    s = _stream(stream)
    return _out(lib.cumem_resource_allocate_raw, resource.handle, int(size), s) or 0


def deallocate_raw(resource, ptr, size, stream):
    s = _stream(stream)
    _check(lib.cumem_resource_deallocate_raw(resource.handle, _V(int(ptr)) if ptr else None,
                                             int(size), s))


def pool_attributes(resource):
    a = PoolAttributes(ctypes.sizeof(PoolAttributes))
    _check(lib.cumem_resource_pool_get_attributes(resource.handle, ctypes.byref(a)))
    return {k: (bool(getattr(a, k)) if k.startswith("reuse_") else getattr(a, k))
            for k, _ in PoolAttributes._fields_[1:]}


def set_pool_attributes(resource, **changes):
    """Reads the pool's attributes, changes those named, and sets them (the
    three reuse flags and release_threshold can be set)."""
    settable = ("reuse_follow_event_dependencies", "reuse_allow_opportunistic",
                "reuse_allow_internal_dependencies", "release_threshold")
    for k in changes:
        if k not in settable:
            raise ValueError(f"pool attribute {k!r} cannot be set; these can: "
                             f"{', '.join(settable)}")
    a = PoolAttributes(ctypes.sizeof(PoolAttributes))
    _check(lib.cumem_resource_pool_get_attributes(resource.handle, ctypes.byref(a)))
    for k, v in changes.items():
        setattr(a, k, int(v))
    _check(lib.cumem_resource_pool_set_attributes(resource.handle, ctypes.byref(a)))


def pool_set_access(resource, peer, read_write):
    d = _device(peer)
    _check(lib.cumem_resource_pool_set_access(resource.handle, d.handle, int(bool(read_write))))


def set_peer_access(resource, peer, read_write):
    d = _device(peer)
    _check(lib.cumem_resource_set_peer_access(resource.handle, d.handle, int(bool(read_write))))


def get_peer_access(resource, peer):
    d = _device(peer)
    v = ctypes.c_uint32()
    _check(lib.cumem_resource_get_peer_access(resource.handle, d.handle, ctypes.byref(v)))
    return bool(v.value)


def pool_get_access(resource, peer):
    d = _device(peer)
    v = ctypes.c_uint32()
    _check(lib.cumem_resource_pool_get_access(resource.handle, d.handle, ctypes.byref(v)))
    return bool(v.value)
