"""The driver's virtual-memory structures the probes pass through ctypes
(CUmemLocation, CUmemAllocationProp, CUmemAccessDesc), and the two the
probes use: pinned device memory of a device, read-write for it."""
import ctypes


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


def device_memory(device=0):
    """CUmemAllocationProp of pinned device memory on `device`."""
    prop = Prop()
    prop.type = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location = Location(1, device)  # CU_MEM_LOCATION_TYPE_DEVICE
    return prop


def read_write(device=0):
    """CUmemAccessDesc: read-write for `device`."""
    return AccessDesc(Location(1, device), 3)  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
