"""CUDA graphs: capture status, executable graphs (``Graph``), and the graph
memory resource's attributes (see cumem.h, "CUDA graphs")."""
import ctypes

from . import _lib
from ._lib import lib

CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}  # cumem_capture_mode_t
CAPTURE_STATUSES = ("none", "active", "invalidated")  # cumem_capture_status_t


class CaptureInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("status", ctypes.c_int32),
                ("id", ctypes.c_uint64)]


class GraphOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("auto_free_on_launch", ctypes.c_uint32),
                ("use_node_priority", ctypes.c_uint32)]


class GraphMemoryAttributes(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved0", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64) for n in ("reserved_mem_current", "reserved_mem_high",
                                       "used_mem_current", "used_mem_high")]


_V = ctypes.c_void_p
_S = _lib.status_t
for _name, _res, _args in [
    ("cumem_stream_begin_capture", _S, [_V, ctypes.c_int32]),
    ("cumem_stream_end_capture", _S, [_V, _lib.c_void_pp]),
    ("cumem_stream_get_capture_info", _S, [_V, ctypes.POINTER(CaptureInfo)]),
    ("cumem_stream_end_capture_graph", _S, [_V, ctypes.POINTER(GraphOptions), _lib.c_void_pp]),
    ("cumem_graph_instantiate", _S, [_V, _V, ctypes.POINTER(GraphOptions), _lib.c_void_pp]),
    ("cumem_graph_release", _S, [_V]),
    ("cumem_graph_launch", _S, [_V, _V]),
    ("cumem_graph_upload", _S, [_V, _V]),
    ("cumem_graph_native", _S, [_V, _lib.c_void_pp]),
    ("cumem_graph_capture_id", _S, [_V, ctypes.POINTER(ctypes.c_uint64)]),
    ("cumem_graph_memory_resource_create", _S, [_V, _lib.c_void_pp]),
    ("cumem_graph_memory_resource_get_attributes", _S,
     [_V, ctypes.POINTER(GraphMemoryAttributes)]),
    ("cumem_graph_memory_resource_trim", _S, [_V]),
    ("cumem_graph_memory_resource_reset_highs", _S, [_V]),
    # The framework entry points CuPy's stream-following allocator calls.
    ("cumem_torch_alloc", _V, [ctypes.c_size_t, ctypes.c_int, _V]),
    ("cumem_cupy_free", None, [_V, _V, ctypes.c_int]),
]:
    _lib._declare(_name, _res, *_args)


def graph_options(auto_free_on_launch=False, use_node_priority=False):
    return GraphOptions(ctypes.sizeof(GraphOptions), int(bool(auto_free_on_launch)),
                        int(bool(use_node_priority)))


def capture_info(stream_handle):
    """{'status': 'none'|'active'|'invalidated', 'id': int} of a stream handle
    (None: the legacy default stream, which never captures)."""
    from . import _check
    info = CaptureInfo(ctypes.sizeof(CaptureInfo))
    _check(lib.cumem_stream_get_capture_info(stream_handle, ctypes.byref(info)))
    return {"status": CAPTURE_STATUSES[info.status], "id": info.id}


def graph_memory_attributes(resource_handle):
    from . import _check
    a = GraphMemoryAttributes(ctypes.sizeof(GraphMemoryAttributes))
    _check(lib.cumem_graph_memory_resource_get_attributes(resource_handle, ctypes.byref(a)))
    return {k: getattr(a, k) for k, _ in GraphMemoryAttributes._fields_[2:]}
