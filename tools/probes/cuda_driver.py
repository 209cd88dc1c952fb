"""What the probes share: libcuda through ctypes, a check that exits with
the CUresult of a failed call, and device 0's primary context made current.
Usage (from a probe in this folder): from cuda_driver import cu, check"""
import ctypes

cu = ctypes.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        raise SystemExit(f"{what} failed with CUresult {r}")


check(cu.cuInit(0), "cuInit")
_device = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(_device), 0), "cuDeviceGet")
_context = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(_context), _device), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(_context), "cuCtxSetCurrent")
