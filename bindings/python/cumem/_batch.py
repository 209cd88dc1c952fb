"""Copies at scale and the rest of cuda.core 1.3: locations (``Host``), batch
copies (``copy_batch``, ``CopyOptions``), batched managed-memory operations
(``prefetch_batch``, ``discard_batch``, ``discard_prefetch_batch``), their
statistics, and the failure-callback adaptor's trampolines."""
import ctypes
import itertools
import threading

from . import _lib
from ._lib import lib
from . import _check, _stream, Device

_V = ctypes.c_void_p

# cumem_location_type_t
_NONE, _DEVICE, _HOST, _HOST_NUMA, _HOST_NUMA_CURRENT = range(5)


class Host:
    """The host as a location (cuda.core's Host): any node, ``Host(numa_id=n)``
    for a NUMA node, ``Host.numa_current()`` for the calling thread's node."""

    def __init__(self, numa_id=None):
        self.numa_id = None if numa_id is None else int(numa_id)
        self.is_numa_current = False

    @classmethod
    def numa_current(cls):
        h = cls()
        h.is_numa_current = True
        return h

    def __eq__(self, other):
        return (isinstance(other, Host) and other.numa_id == self.numa_id
                and other.is_numa_current == self.is_numa_current)

    def __hash__(self):
        return hash((self.numa_id, self.is_numa_current))

    def __repr__(self):
        if self.is_numa_current:
            return "cumem.Host.numa_current()"
        return "cumem.Host()" if self.numa_id is None else f"cumem.Host(numa_id={self.numa_id})"


def to_location(where, allow_none=False):
    """A Device (or ordinal), Host or None as a cumem_location_t."""
    if where is None:
        if not allow_none:
            raise TypeError("a location is needed: a cumem.Device, a device ordinal or a cumem.Host")
        return _lib.Location(_NONE, 0)
    if isinstance(where, Device):
        return _lib.Location(_DEVICE, where.ordinal)
    if isinstance(where, bool) or not isinstance(where, (int, Host)):
        raise TypeError(f"a location is a cumem.Device, a device ordinal or a cumem.Host, "
                        f"not {type(where).__name__}")
    if isinstance(where, int):
        return _lib.Location(_DEVICE, where)
    if where.is_numa_current:
        return _lib.Location(_HOST_NUMA_CURRENT, 0)
    if where.numa_id is not None:
        return _lib.Location(_HOST_NUMA, where.numa_id)
    return _lib.Location(_HOST, 0)


def from_location(location):
    """A cumem_location_t as a Device, Host or None."""
    if location.type == _DEVICE:
        return Device(location.id)
    if location.type == _HOST:
        return Host()
    if location.type == _HOST_NUMA:
        return Host(numa_id=location.id)
    if location.type == _HOST_NUMA_CURRENT:
        return Host.numa_current()
    return None


_ACCESS_ORDERS = ("stream", "during_api_call", "any")  # cumem_copy_src_access_order_t
_OVERLAP_MODES = ("default", "prefer_overlap_with_compute")  # cumem_copy_overlap_mode_t


class CopyOptions:
    """Options of one batch copy (cuda.core's CopyOptions): src_access_order
    'stream' (default), 'during_api_call' or 'any'; location hints (a Device,
    an ordinal, a Host or None); overlap_mode 'default' or
    'prefer_overlap_with_compute'."""

    __slots__ = ("src_access_order", "src_location_hint", "dst_location_hint", "overlap_mode")

    def __init__(self, src_access_order="stream", src_location_hint=None, dst_location_hint=None,
                 overlap_mode="default"):
        if src_access_order not in _ACCESS_ORDERS:
            raise ValueError(f"invalid src_access_order {src_access_order!r}; one of "
                             f"{', '.join(_ACCESS_ORDERS)}")
        if overlap_mode not in _OVERLAP_MODES:
            raise ValueError(f"invalid overlap_mode {overlap_mode!r}; one of "
                             f"{', '.join(_OVERLAP_MODES)}")
        self.src_access_order = src_access_order
        self.src_location_hint = src_location_hint
        self.dst_location_hint = dst_location_hint
        self.overlap_mode = overlap_mode

    def _to_c(self):
        return _lib.CopyOptions(ctypes.sizeof(_lib.CopyOptions),
                                _ACCESS_ORDERS.index(self.src_access_order),
                                to_location(self.src_location_hint, allow_none=True),
                                to_location(self.dst_location_hint, allow_none=True),
                                _OVERLAP_MODES.index(self.overlap_mode))


def _options(options, n):
    """(array, count) for cumem_copy_batch: None, one CopyOptions, or one each."""
    if options is None:
        return None, 0
    if isinstance(options, CopyOptions):
        options = [options]
    options = list(options)
    if len(options) not in (1, n):
        raise ValueError(f"copy_batch: {len(options)} options for {n} copies; give one, or one "
                         f"per copy")
    array = (_lib.CopyOptions * len(options))(*(o._to_c() for o in options))
    return array, len(options)


def _sizes(values, n, name):
    if values is None:
        return None
    values = list(values)
    if len(values) != n:
        raise ValueError(f"copy_batch: {name} has {len(values)} entries for {n} copies")
    return (ctypes.c_size_t * n)(*values)


def _handles(buffers, what):
    if hasattr(buffers, "handle"):
        raise TypeError(f"{what}: pass a sequence of buffers; for one buffer use its own method")
    buffers = list(buffers)
    return buffers, (_V * max(len(buffers), 1))(*(b.handle for b in buffers))


def copy_batch(stream, srcs, dsts, *, options=None, sizes=None, src_offsets=None,
               dst_offsets=None):
    """Copies srcs[i] into dsts[i], all in one batch ordered on `stream`
    (cuda.core's copy_batch; None: the legacy default stream). Without
    `sizes`, whole buffers past their offsets, of equal length; `options` is
    None, one CopyOptions for every copy, or one per copy."""
    srcs, src_handles = _handles(srcs, "copy_batch")
    dsts, dst_handles = _handles(dsts, "copy_batch")
    n = len(srcs)
    if len(dsts) != n:
        raise ValueError(f"copy_batch: {n} sources but {len(dsts)} destinations")
    array, count = _options(options, n)
    _check(lib.cumem_copy_batch(_stream(stream), n, dst_handles, _sizes(dst_offsets, n, "dst_offsets"),
                                src_handles, _sizes(src_offsets, n, "src_offsets"),
                                _sizes(sizes, n, "sizes"), array, count))


def copy_batch_raw(stream, dsts, srcs, sizes, *, options=None, dst_offsets=None,
                   src_offsets=None):
    """The same over raw pointers (ints): sizes[i] bytes from srcs[i] +
    src_offsets[i] to dsts[i] + dst_offsets[i]."""
    dsts, srcs = list(dsts), list(srcs)
    n = len(dsts)
    if len(srcs) != n:
        raise ValueError(f"copy_batch_raw: {len(srcs)} sources but {n} destinations")
    array, count = _options(options, n)
    _check(lib.cumem_copy_batch_raw(_stream(stream), n, (_V * max(n, 1))(*dsts),
                                    _sizes(dst_offsets, n, "dst_offsets"),
                                    (_V * max(n, 1))(*srcs), _sizes(src_offsets, n, "src_offsets"),
                                    _sizes(sizes, n, "sizes"), array, count))


def _locations(locations, n):
    if locations is None or isinstance(locations, (Device, Host, int)):
        locations = [locations]
    locations = list(locations)
    if len(locations) not in (1, n):
        raise ValueError(f"{len(locations)} locations for {n} buffers; give one, or one each")
    return (_lib.Location * len(locations))(*(to_location(l) for l in locations)), len(locations)


def prefetch_batch(stream, buffers, locations):
    """Prefetches managed buffers in one batch (cuda.core's prefetch_batch):
    one location for all, or one each."""
    buffers, handles = _handles(buffers, "prefetch_batch")
    array, count = _locations(locations, len(buffers))
    _check(lib.cumem_prefetch_batch(_stream(stream), len(buffers), handles, array, count))


def discard_batch(stream, buffers):
    """Discards the contents of managed buffers in one batch (CUDA 13+)."""
    buffers, handles = _handles(buffers, "discard_batch")
    _check(lib.cumem_discard_batch(_stream(stream), len(buffers), handles))


def discard_prefetch_batch(stream, buffers, locations):
    """Discards managed buffers and prefetches their pages (CUDA 13+)."""
    buffers, handles = _handles(buffers, "discard_prefetch_batch")
    array, count = _locations(locations, len(buffers))
    _check(lib.cumem_discard_prefetch_batch(_stream(stream), len(buffers), handles, array, count))


def batch_statistics():
    """How batches went in this process (cumem_batch_get_statistics), as a dict."""
    s = _lib.BatchStatistics(ctypes.sizeof(_lib.BatchStatistics))
    _check(lib.cumem_batch_get_statistics(ctypes.byref(s)))
    return {name: (bool(getattr(s, name)) if name.startswith("driver_") else getattr(s, name))
            for name, _ in _lib.BatchStatistics._fields_[1:]}


# The failure-callback adaptor: one C trampoline for every adaptor, and the
# Python functions by the key passed as user_data, dropped by the destroy
# trampoline when the adaptor's last reference goes (which may be after the
# Python Resource object is gone: buffers keep the adaptor alive).
_callbacks = {}
_callbacks_lock = threading.Lock()
_keys = itertools.count(1)
_RETRY, _FAIL = 1, 0


def _statistics_dict(s):
    return {k: getattr(s, k) for k in
            ("bytes_in_use", "peak_bytes_in_use", "live_allocations", "total_allocations")}


@_lib.FailureCallbackFn
def _failure_trampoline(info, user_data):
    fn = _callbacks.get(user_data)
    if fn is None:
        return _FAIL
    i = info.contents
    try:
        retry = fn({"attempt": i.attempt, "size": i.size, "stream": i.stream or 0,
                    "statistics": _statistics_dict(i.statistics.contents),
                    "message": i.message.decode("utf-8", "replace")})
    except Exception:  # must not unwind into libcumem: giving up
        return _FAIL
    return _RETRY if retry else _FAIL


@_lib.DestroyFn
def _destroy_trampoline(user_data):
    with _callbacks_lock:
        _callbacks.pop(user_data, None)


def failure_callback_struct(fn, max_retries):
    """The cumem_failure_callback_t for `fn`, registered until the adaptor goes."""
    key = next(_keys)
    with _callbacks_lock:
        _callbacks[key] = fn
    c = _lib.FailureCallback(ctypes.sizeof(_lib.FailureCallback), int(max_retries),
                             _failure_trampoline, _destroy_trampoline, key)
    return c, key


def forget(key):
    """Drops a callback whose adaptor was never made."""
    with _callbacks_lock:
        _callbacks.pop(key, None)
