"""Loading libcumem.so.1 and declaring the C functions used (ctypes only).

The library: the file $CUMEM_LIBRARY names, when set (only that one); else
the libcumem.so.1 inside the package (an installed wheel's); else
libcumem.so.1 through the loader's search path (a system install)."""
import ctypes
import os

_NAME = "libcumem.so.1"


def _candidates():
    # $CUMEM_LIBRARY, when set, is the only file tried: a library named on
    # purpose and not loadable is an error, not a reason to load another.
    env = os.environ.get("CUMEM_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, _NAME)  # the installed package's own (the wheel's)
    yield _NAME  # the loader's search path


def _load():
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            return lib, path
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("cannot load libcumem (set CUMEM_LIBRARY to its path): " + "; ".join(errors))


lib, _path = _load()


def library_path():
    """The path libcumem was loaded from (what PyTorch's allocator needs)."""
    if os.sep in _path:
        return os.path.abspath(_path)
    # Found on the loader path: ask the dynamic linker where.
    import ctypes.util  # noqa: F401
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rstrip().endswith(_NAME) or ("/" + _NAME) in line:
                    return line.split()[-1]
    except OSError:
        pass
    return _path


c_void_pp = ctypes.POINTER(ctypes.c_void_p)
status_t = ctypes.c_int32


class ResourceStatistics(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                ("bytes_in_use", ctypes.c_uint64), ("peak_bytes_in_use", ctypes.c_uint64),
                ("live_allocations", ctypes.c_uint64), ("total_allocations", ctypes.c_uint64)]


class CachingStatistics(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved0", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64) for n in ("bytes_cached", "bytes_reserved", "peak_bytes_reserved",
                                       "hits", "misses", "stream_reuses", "oom_retries",
                                       "pages_mapped", "pages_unmapped", "capture_pools",
                                       "capture_pool_bytes", "recycles", "recycle_waits")]


class CachingResourceOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("expandable", ctypes.c_uint32),
                ("page_size", ctypes.c_uint64), ("libcumem_captures_only", ctypes.c_uint32),
                ("handle_types", ctypes.c_uint32)]


class ResourceProperties(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_int32),
                ("device_accessible", ctypes.c_uint32), ("host_accessible", ctypes.c_uint32),
                ("device_id", ctypes.c_int32), ("is_stream_ordered", ctypes.c_uint32),
                ("is_pool", ctypes.c_uint32), ("ipc_enabled", ctypes.c_uint32),
                ("is_imported", ctypes.c_uint32)]


class BufferInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("device_id", ctypes.c_int32),
                ("ptr", ctypes.c_void_p), ("size", ctypes.c_uint64),
                ("memory_kind", ctypes.c_int32), ("device_accessible", ctypes.c_uint32),
                ("host_accessible", ctypes.c_uint32), ("is_slice", ctypes.c_uint32),
                ("owns_memory", ctypes.c_uint32), ("reserved0", ctypes.c_uint32)]


class HostResourceOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                ("alignment", ctypes.c_uint64)]


class DlpackOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("dtype_code", ctypes.c_uint8),
                ("dtype_bits", ctypes.c_uint8), ("dtype_lanes", ctypes.c_uint16),
                ("ndim", ctypes.c_int32), ("reserved0", ctypes.c_uint32),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64), ("device_type", ctypes.c_int32),
                ("read_only", ctypes.c_uint32)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("grid", ctypes.c_uint32 * 3),
                ("block", ctypes.c_uint32 * 3), ("shared_memory_bytes", ctypes.c_uint32),
                ("cluster", ctypes.c_uint32 * 3)]


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]


class VirtualResourceOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("location", Location),
                ("granularity", ctypes.c_int32), ("handle_types", ctypes.c_uint32),
                ("gpu_direct_rdma", ctypes.c_uint32), ("address_hint", ctypes.c_uint64),
                ("alignment", ctypes.c_uint64), ("chunk_size", ctypes.c_uint64),
                ("reserve_size", ctypes.c_uint64), ("peers", ctypes.POINTER(ctypes.c_int32)),
                ("peer_count", ctypes.c_uint32), ("peers_read_only", ctypes.c_uint32),
                ("nccl_qualified", ctypes.c_uint32), ("reserved0", ctypes.c_uint32)]


class VirtualStatistics(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved0", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64) for n in ("granularity", "chunk_size", "bytes_mapped",
                                       "bytes_reserved", "bytes_pending", "grows_in_place",
                                       "grows_moved", "shrinks", "chunks_created",
                                       "chunks_released")]


class CopyOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("src_access_order", ctypes.c_int32),
                ("src_location_hint", Location), ("dst_location_hint", Location),
                ("overlap_mode", ctypes.c_int32)]


class BatchStatistics(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("driver_copy_batch", ctypes.c_uint32),
                ("driver_prefetch_batch", ctypes.c_uint32),
                ("driver_discard_batch", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64) for n in ("copy_batches", "copy_batches_looped", "copies",
                                       "copies_looped", "prefetch_batches",
                                       "prefetch_batches_looped", "prefetches", "discard_batches",
                                       "discards", "copy_batches_by_kernel",
                                       "copies_by_kernel")]


class FailureInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("attempt", ctypes.c_uint32),
                ("size", ctypes.c_uint64), ("stream", ctypes.c_void_p),
                ("statistics", ctypes.POINTER(ResourceStatistics)), ("message", ctypes.c_char_p)]


# cumem_failure_callback_fn and cumem_destroy_fn.
FailureCallbackFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(FailureInfo), ctypes.c_void_p)
DestroyFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class FailureCallback(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("max_retries", ctypes.c_uint32),
                ("callback", FailureCallbackFn), ("destroy", DestroyFn),
                ("user_data", ctypes.c_void_p)]


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


V = ctypes.c_void_p
_S = status_t
# cumem_log_callback_t: (level, message, user_data).
LogCallback = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p)
for _name, _res, _args in [
    ("cumem_version", ctypes.c_uint32, []),
    ("cumem_status_string", ctypes.c_char_p, [_S]),
    ("cumem_last_error_message", ctypes.c_char_p, []),
    ("cumem_driver_version", _S, [ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_device_count", _S, [ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_device_get", _S, [ctypes.c_int32, c_void_pp]),
    ("cumem_device_release", _S, [V]),
    ("cumem_device_synchronize", _S, [V]),
    ("cumem_stream_create", _S, [V, V, c_void_pp]),
    ("cumem_stream_wrap", _S, [V, V, c_void_pp]),
    ("cumem_stream_legacy_default", _S, [V, c_void_pp]),
    ("cumem_stream_release", _S, [V]),
    ("cumem_stream_native", _S, [V, c_void_pp]),
    ("cumem_stream_synchronize", _S, [V]),
    ("cumem_stream_wait_stream", _S, [V, V]),
    ("cumem_host_resource_create", _S, [ctypes.POINTER(HostResourceOptions), c_void_pp]),
    ("cumem_device_resource_create", _S, [V, V, c_void_pp]),
    ("cumem_pinned_resource_create", _S, [V, V, c_void_pp]),
    ("cumem_legacy_pinned_resource_create", _S, [V, c_void_pp]),
    ("cumem_managed_resource_create", _S, [V, V, c_void_pp]),
    ("cumem_caching_resource_create", _S, [V, c_void_pp]),
    ("cumem_caching_resource_get_statistics", _S, [V, ctypes.POINTER(CachingStatistics)]),
    ("cumem_caching_resource_release_cached", _S, [V]),
    ("cumem_caching_resource_trim", _S, [V, ctypes.c_uint64]),
    ("cumem_caching_resource_release_capture_pool", _S, [V, ctypes.c_uint64]),
    ("cumem_caching_resource_create_with_options", _S,
     [V, ctypes.POINTER(CachingResourceOptions), c_void_pp]),
    ("cumem_set_log_callback", _S, [LogCallback, V]),
    ("cumem_set_log_level", _S, [ctypes.c_int32]),
    ("cumem_get_log_level", _S, [ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_aligned_resource_create", _S, [V, ctypes.c_uint64, c_void_pp]),
    ("cumem_limit_resource_create", _S, [V, ctypes.c_uint64, c_void_pp]),
    ("cumem_resource_release", _S, [V]),
    ("cumem_resource_retain", _S, [V]),
    ("cumem_resource_allocate", _S, [V, ctypes.c_size_t, V, c_void_pp]),
    ("cumem_resource_get_statistics", _S, [V, ctypes.POINTER(ResourceStatistics)]),
    ("cumem_resource_get_properties", _S, [V, ctypes.POINTER(ResourceProperties)]),
    ("cumem_resource_reset_peak", _S, [V]),
    ("cumem_buffer_release", _S, [V]),
    ("cumem_buffer_get_info", _S, [V, ctypes.POINTER(BufferInfo)]),
    ("cumem_buffer_close", _S, [V, V]),
    ("cumem_buffer_is_closed", _S, [V, ctypes.POINTER(ctypes.c_uint32)]),
    ("cumem_buffer_copy_to", _S, [V, V, V]),
    ("cumem_buffer_copy_region", _S, [V, ctypes.c_size_t, V, ctypes.c_size_t, ctypes.c_size_t, V]),
    ("cumem_buffer_fill", _S, [V, ctypes.c_uint32, ctypes.c_uint32, V]),
    ("cumem_buffer_slice", _S, [V, ctypes.c_size_t, ctypes.c_size_t, c_void_pp]),
    ("cumem_buffer_wrap", _S, [V, ctypes.c_size_t, V, V, c_void_pp]),
    ("cumem_buffer_to_dlpack", _S, [V, ctypes.POINTER(DlpackOptions), c_void_pp]),
    ("cumem_buffer_to_dlpack_legacy", _S, [V, ctypes.POINTER(DlpackOptions), c_void_pp]),
    ("cumem_buffer_from_dlpack", _S, [V, ctypes.c_uint32, c_void_pp]),
    ("cumem_buffer_from_dlpack_legacy", _S, [V, c_void_pp]),
    ("cumem_framework_set_resource", _S, [ctypes.c_int32, V]),
    ("cumem_framework_get_resource", _S, [ctypes.c_int32, c_void_pp]),
    ("cumem_buffer_ptr", _S, [V, c_void_pp]),
    ("cumem_nvrtc_version", _S, [ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_program_compile", _S, [V, ctypes.c_char_p, V, c_void_pp]),
    ("cumem_program_release", _S, [V]),
    ("cumem_program_log", _S, [V, ctypes.POINTER(ctypes.c_char_p)]),
    ("cumem_program_load", _S, [V, c_void_pp]),
    ("cumem_library_release", _S, [V]),
    ("cumem_library_get_kernel", _S, [V, ctypes.c_char_p, c_void_pp]),
    ("cumem_kernel_release", _S, [V]),
    ("cumem_launch_config_init", None, [ctypes.POINTER(LaunchConfig)]),
    ("cumem_launch", _S, [V, V, ctypes.POINTER(LaunchConfig), ctypes.POINTER(V), ctypes.c_uint32]),
    # Virtual memory (_virtual.py).
    ("cumem_virtual_resource_create", _S, [V, ctypes.POINTER(VirtualResourceOptions), c_void_pp]),
    ("cumem_buffer_resize", _S, [V, ctypes.c_size_t, V]),
    ("cumem_virtual_resource_set_access", _S, [V, V, ctypes.c_int32]),
    ("cumem_virtual_resource_get_access", _S, [V, V, ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_virtual_resource_get_statistics", _S, [V, ctypes.POINTER(VirtualStatistics)]),
    ("cumem_virtual_resource_release_pending", _S, [V]),
    ("cumem_buffer_get_virtual_ipc_handle", _S, [V, c_void_pp]),
    ("cumem_virtual_ipc_handle_release", _S, [V]),
    ("cumem_virtual_ipc_handle_fd_count", _S, [V, ctypes.POINTER(ctypes.c_uint32)]),
    ("cumem_virtual_ipc_handle_fd", _S, [V, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32)]),
    ("cumem_virtual_ipc_handle_descriptor", _S, [V, V, ctypes.c_size_t,
                                                 ctypes.POINTER(ctypes.c_size_t)]),
    ("cumem_virtual_ipc_handle_from_fds", _S, [V, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int32),
                                               ctypes.c_uint32, c_void_pp]),
    ("cumem_resource_get_virtual_ipc_handle_native", _S, [V, V, ctypes.c_size_t, c_void_pp]),
    ("cumem_resource_get_ipc_descriptor_native", _S, [V, V, ctypes.c_size_t, V]),
    ("cumem_virtual_ipc_handle_from_pid", _S, [V, ctypes.c_size_t, ctypes.c_int32,
                                               ctypes.POINTER(ctypes.c_int32), ctypes.c_uint32,
                                               c_void_pp]),
    ("cumem_ipc_send_virtual", _S, [ctypes.c_int32, V]),
    ("cumem_ipc_receive_virtual", _S, [ctypes.c_int32, c_void_pp]),
    ("cumem_buffer_from_virtual_ipc_handle", _S, [V, V, V, c_void_pp]),
    # Copies at scale and the rest of cuda.core 1.3.
    ("cumem_device_get_memory_resource", _S, [V, c_void_pp]),
    ("cumem_device_set_memory_resource", _S, [V, V]),
    ("cumem_device_allocate", _S, [V, ctypes.c_size_t, V, c_void_pp]),
    ("cumem_failure_callback_resource_create", _S, [V, ctypes.POINTER(FailureCallback), c_void_pp]),
    ("cumem_buffer_copy_to_new", _S, [V, V, c_void_pp]),
    ("cumem_buffer_prefetch", _S, [V, Location, V]),
    ("cumem_buffer_discard", _S, [V, V]),
    ("cumem_buffer_discard_prefetch", _S, [V, Location, V]),
    ("cumem_buffer_get_last_prefetch_location", _S, [V, ctypes.POINTER(Location)]),
    ("cumem_copy_batch", _S, [V, ctypes.c_size_t, ctypes.POINTER(V), ctypes.POINTER(ctypes.c_size_t),
                              ctypes.POINTER(V), ctypes.POINTER(ctypes.c_size_t),
                              ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(CopyOptions),
                              ctypes.c_size_t]),
    ("cumem_copy_batch_raw", _S, [V, ctypes.c_size_t, ctypes.POINTER(V),
                                  ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(V),
                                  ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t),
                                  ctypes.POINTER(CopyOptions), ctypes.c_size_t]),
    ("cumem_prefetch_batch", _S, [V, ctypes.c_size_t, ctypes.POINTER(V), ctypes.POINTER(Location),
                                  ctypes.c_size_t]),
    ("cumem_discard_batch", _S, [V, ctypes.c_size_t, ctypes.POINTER(V)]),
    ("cumem_discard_prefetch_batch", _S, [V, ctypes.c_size_t, ctypes.POINTER(V),
                                          ctypes.POINTER(Location), ctypes.c_size_t]),
    ("cumem_batch_get_statistics", _S, [ctypes.POINTER(BatchStatistics)]),
    # The rest of the buffer and stream calls (issue 25: complete bindings).
    ("cumem_buffer_resource", _S, [V, c_void_pp]),
    ("cumem_buffer_set_deallocation_stream", _S, [V, V]),
    ("cumem_buffer_advise", _S, [V, ctypes.c_int32, Location]),
    ("cumem_buffer_wrap_owned", _S, [V, V, ctypes.c_size_t, c_void_pp]),
    ("cumem_buffer_register_host", _S, [V, V, ctypes.c_size_t, c_void_pp]),
    ("cumem_stream_per_thread_default", _S, [V, c_void_pp]),
]:
    _declare(_name, _res, *_args)

# The framework entry points' addresses, for CuPy's CFunctionAllocator.
torch_alloc_symbol = "cumem_torch_alloc"
torch_free_symbol = "cumem_torch_free"
cupy_malloc_address = ctypes.cast(lib.cumem_cupy_malloc, ctypes.c_void_p).value
cupy_free_address = ctypes.cast(lib.cumem_cupy_free, ctypes.c_void_p).value
