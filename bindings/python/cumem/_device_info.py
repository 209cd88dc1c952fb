"""The rest of cumem.h's device and stream calls: device properties and
attributes, memory info, peers, priorities, stream options and queries.
Device's and Stream's methods call into here."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check

_V = ctypes.c_void_p
_S = _lib.status_t
_I = ctypes.POINTER(ctypes.c_int32)
_U = ctypes.POINTER(ctypes.c_uint32)


class DeviceProperties(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("ordinal", ctypes.c_int32),
                ("name", ctypes.c_char * 256), ("uuid", ctypes.c_uint8 * 16),
                ("compute_capability_major", ctypes.c_int32),
                ("compute_capability_minor", ctypes.c_int32),
                ("total_memory", ctypes.c_uint64), ("multiprocessor_count", ctypes.c_int32),
                ("memory_pools_supported", ctypes.c_uint32), ("ipc_handle_types", ctypes.c_uint32),
                ("managed_memory", ctypes.c_uint32), ("concurrent_managed_access", ctypes.c_uint32),
                ("virtual_memory_management", ctypes.c_uint32), ("host_numa_id", ctypes.c_int32),
                ("pci_domain_id", ctypes.c_int32), ("pci_bus_id", ctypes.c_int32),
                ("pci_device_id", ctypes.c_int32), ("max_threads_per_block", ctypes.c_int32),
                ("max_shared_memory_per_block_optin", ctypes.c_int32),
                ("cluster_launch", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                ("fabric_export_supported", ctypes.c_uint32),
                ("dma_buf_supported", ctypes.c_uint32)]


class StreamOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("blocking", ctypes.c_uint32),
                ("priority", ctypes.c_int32), ("priority_mode", ctypes.c_int32)]


for _name, _res, _args in [
    ("cumem_device_get_properties", _S, [_V, ctypes.POINTER(DeviceProperties)]),
    ("cumem_device_get_attribute", _S, [_V, ctypes.c_int32, _I]),
    ("cumem_device_set_current", _S, [_V]),
    ("cumem_device_memory_info", _S, [_V, ctypes.POINTER(ctypes.c_uint64),
                                      ctypes.POINTER(ctypes.c_uint64)]),
    ("cumem_device_can_access_peer", _S, [_V, _V, _U]),
    ("cumem_device_enable_peer_access", _S, [_V, _V]),
    ("cumem_device_stream_priority_range", _S, [_V, _I, _I]),
    ("cumem_stream_priority", _S, [_V, _I]),
    ("cumem_stream_query", _S, [_V, _U]),
]:
    _lib._declare(_name, _res, *_args)

_BOOLS = ("memory_pools_supported", "managed_memory", "concurrent_managed_access",
          "virtual_memory_management", "cluster_launch", "fabric_export_supported",
          "dma_buf_supported")


def properties(device):
    p = DeviceProperties(ctypes.sizeof(DeviceProperties))
    _check(lib.cumem_device_get_properties(device.handle, ctypes.byref(p)))
    out = {}
    for name, _ in DeviceProperties._fields_[1:]:
        if name.startswith("reserved"):
            continue
        value = getattr(p, name)
        if name == "name":
            value = value.decode("utf-8", "replace")
        elif name == "uuid":
            value = bytes(value)
        elif name in _BOOLS:
            value = bool(value)
        out[name] = value
    out["compute_capability"] = (p.compute_capability_major, p.compute_capability_minor)
    return out


def attribute(device, number):
    v = ctypes.c_int32()
    _check(lib.cumem_device_get_attribute(device.handle, int(number), ctypes.byref(v)))
    return v.value


def set_current(device):
    _check(lib.cumem_device_set_current(device.handle))


def memory_info(device):
    free, total = ctypes.c_uint64(), ctypes.c_uint64()
    _check(lib.cumem_device_memory_info(device.handle, ctypes.byref(free), ctypes.byref(total)))
    return free.value, total.value


def can_access_peer(device, peer):
    v = ctypes.c_uint32()
    _check(lib.cumem_device_can_access_peer(device.handle, peer.handle, ctypes.byref(v)))
    return bool(v.value)


def enable_peer_access(device, peer):
    _check(lib.cumem_device_enable_peer_access(device.handle, peer.handle))


def stream_priority_range(device):
    least, greatest = ctypes.c_int32(), ctypes.c_int32()
    _check(lib.cumem_device_stream_priority_range(device.handle, ctypes.byref(least),
                                                  ctypes.byref(greatest)))
    return least.value, greatest.value


def stream_options(blocking, priority):
    return StreamOptions(ctypes.sizeof(StreamOptions), int(bool(blocking)), int(priority), 0)


def stream_priority(stream):
    v = ctypes.c_int32()
    _check(lib.cumem_stream_priority(stream.handle, ctypes.byref(v)))
    return v.value


def stream_query(stream):
    v = ctypes.c_uint32()
    _check(lib.cumem_stream_query(stream.handle, ctypes.byref(v)))
    return bool(v.value)
