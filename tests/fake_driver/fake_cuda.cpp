// A fake CUDA driver library for tests (loaded by libcumem through
// $CUMEM_LIBCUDA): a CUDA 13.0 driver with one device that serves a minimal
// working set of entry points through cuGetProcAddress_v2 and deliberately
// lacks others, as an old or cut-down driver would. libcumem must turn every
// missing entry point into CUMEM_ERROR_NOT_SUPPORTED, and never call one
// from cleanup code (releasing a stream, event or device).
//
// Only cuInit, cuDriverGetVersion and cuGetProcAddress_v2 are exported by
// name, which is all libcumem looks up with dlsym; everything else is served
// through cuGetProcAddress_v2, exactly as the real driver does.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstring>

namespace {

// Handles the fake hands out: addresses of private objects, never
// dereferenced by libcumem.
int primary_context_object;
int stream_objects[64];
int event_objects[64];
int streams_created = 0;
int events_created = 0;
const CUcontext primary_context = reinterpret_cast<CUcontext>(&primary_context_object);
thread_local CUcontext current_context = nullptr;

CUresult CUDAAPI fake_cuGetErrorName(CUresult error, const char** out) {
  switch (error) {
    case CUDA_SUCCESS: *out = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *out = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *out = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *out = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    default: *out = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI fake_cuGetErrorString(CUresult error, const char** out) {
  const char* name = nullptr;
  if (fake_cuGetErrorName(error, &name) != CUDA_SUCCESS) {
    *out = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = "an error of the fake CUDA driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetName(char* name, int length, CUdevice device) {
  if (device != 0 || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::strncpy(name, "Fake CUDA Device", static_cast<size_t>(length));
  name[length - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                           CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {  // an H100-like device
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
      *value = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *value = -1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  *context = primary_context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext* context) {
  *context = current_context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxSetCurrent(CUcontext context) {
  if (context != nullptr && context != primary_context) return CUDA_ERROR_INVALID_VALUE;
  current_context = context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (current_context != primary_context) return CUDA_ERROR_INVALID_CONTEXT;
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

// Streams and events are never destroyed (the driver lacks the calls), so
// a fixed pool of handles is enough for a test.
CUresult CUDAAPI fake_cuStreamCreateWithPriority(CUstream* stream, unsigned int, int) {
  if (current_context != primary_context) return CUDA_ERROR_INVALID_CONTEXT;
  if (streams_created == 64) return CUDA_ERROR_OUT_OF_MEMORY;
  *stream = reinterpret_cast<CUstream>(&stream_objects[streams_created++]);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventCreate(CUevent* event, unsigned int) {
  if (current_context != primary_context) return CUDA_ERROR_INVALID_CONTEXT;
  if (events_created == 64) return CUDA_ERROR_OUT_OF_MEMORY;
  *event = reinterpret_cast<CUevent>(&event_objects[events_created++]);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

struct Entry {
  const char* name;
  void* function;
};

// The entry points served. The static_cast to the PFN type libcumem uses
// (src/driver/driver.hpp) checks each signature at compile time.
#define FAKE_ENTRY(name, version) \
  Entry { #name, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&fake_##name)) }
const Entry served[] = {
    FAKE_ENTRY(cuGetErrorName, 6000),
    FAKE_ENTRY(cuGetErrorString, 6000),
    FAKE_ENTRY(cuDeviceGetCount, 2000),
    FAKE_ENTRY(cuDeviceGet, 2000),
    FAKE_ENTRY(cuDeviceGetName, 2000),
    FAKE_ENTRY(cuDeviceGetAttribute, 2000),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain, 7000),
    FAKE_ENTRY(cuCtxGetCurrent, 4000),
    FAKE_ENTRY(cuCtxSetCurrent, 4000),
    FAKE_ENTRY(cuCtxGetStreamPriorityRange, 5050),
    FAKE_ENTRY(cuStreamCreateWithPriority, 5050),
    FAKE_ENTRY(cuEventCreate, 2000),
    FAKE_ENTRY(cuStreamSynchronize, 2000),
    // Deliberately absent, among all others: cuDevicePrimaryCtxRelease,
    // cuStreamDestroy, cuEventDestroy, cuDeviceGetDefaultMemPool,
    // cuMemPoolCreate.
};
#undef FAKE_ENTRY

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

// Like the real driver: an unknown symbol is CUDA_SUCCESS with
// CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND and *pfn NULL.
CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                     CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  for (const Entry& e : served) {
    if (std::strcmp(e.name, symbol) == 0) {
      *pfn = e.function;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_SUCCESS;
}

}  // extern "C"
