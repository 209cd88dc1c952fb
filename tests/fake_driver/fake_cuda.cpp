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
//
// Two libraries are built from this file: fake_cuda (with fake_no_extras.cpp)
// and fake_cuda_vmm (with fake_vmm.cpp), whose extra entry points
// (fake_extra_entry, looked up first) add virtual memory management backed
// by host memory, events and streams that complete when a test says so, and
// a control API for tests (fake_vmm.hpp). $FAKE_CUDA_DEVICE_COUNT (1 to 4,
// default 1) sets how many devices either one reports; the tests' control
// call fake_cuda_set_attribute overrides a device attribute.
#include "fake_cuda.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

// Handles the fake hands out: addresses of private objects, never
// dereferenced by libcumem.
int primary_context_objects[fake::kMaxDevices];
int stream_objects[64];
int event_objects[64];
int streams_created = 0;
int events_created = 0;
thread_local CUcontext current_context = nullptr;

CUcontext primary_context_of(int device) {
  return reinterpret_cast<CUcontext>(&primary_context_objects[device]);
}
bool is_primary_context(CUcontext context) {
  for (int d = 0; d < fake::device_count(); ++d)
    if (context == primary_context_of(d)) return true;
  return false;
}

std::mutex attribute_mutex;
std::map<int, int> attribute_overrides;  // fake_cuda_set_attribute

CUresult CUDAAPI fake_cuGetErrorName(CUresult error, const char** out) {
  switch (error) {
#define FAKE_ERROR_NAME(e) case e: *out = #e; return CUDA_SUCCESS;
    FAKE_ERROR_NAME(CUDA_SUCCESS)
    FAKE_ERROR_NAME(CUDA_ERROR_INVALID_VALUE)
    FAKE_ERROR_NAME(CUDA_ERROR_INVALID_DEVICE)
    FAKE_ERROR_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    FAKE_ERROR_NAME(CUDA_ERROR_NOT_READY)
    FAKE_ERROR_NAME(CUDA_ERROR_NOT_SUPPORTED)
    FAKE_ERROR_NAME(CUDA_ERROR_NOT_PERMITTED)
    FAKE_ERROR_NAME(CUDA_ERROR_INVALID_CONTEXT)
    FAKE_ERROR_NAME(CUDA_ERROR_INVALID_HANDLE)
    FAKE_ERROR_NAME(CUDA_ERROR_UNKNOWN)
#undef FAKE_ERROR_NAME
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
  *count = fake::device_count();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGet(CUdevice* device, int ordinal) {
  if (!fake::valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetName(char* name, int length, CUdevice device) {
  if (!fake::valid_device(device) || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::strncpy(name, "Fake CUDA Device", static_cast<size_t>(length));
  name[length - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                           CUdevice device) {
  if (!fake::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  {
    std::lock_guard<std::mutex> lock(attribute_mutex);
    const auto it = attribute_overrides.find(static_cast<int>(attribute));
    if (it != attribute_overrides.end()) {
      if (it->second < 0) return CUDA_ERROR_INVALID_VALUE;  // an attribute this driver lacks
      *value = it->second;
      return CUDA_SUCCESS;
    }
  }
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
    // Virtual memory: like the H200s, fabric handles are reported (and the
    // VMM fake's cuMemCreate refuses them, as without an IMEX channel).
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *value = 1; break;
    // dma-buf export (the engines fake serves cuMemGetHandleForAddressRange).
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: *value = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (!fake::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  *context = primary_context_of(device);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext* context) {
  *context = current_context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxSetCurrent(CUcontext context) {
  if (context != nullptr && !is_primary_context(context)) return CUDA_ERROR_INVALID_VALUE;
  current_context = context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (!is_primary_context(current_context)) return CUDA_ERROR_INVALID_CONTEXT;
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

// Streams and events are never destroyed (the driver lacks the calls), so
// a fixed pool of handles is enough for a test.
CUresult CUDAAPI fake_cuStreamCreateWithPriority(CUstream* stream, unsigned int, int) {
  if (!is_primary_context(current_context)) return CUDA_ERROR_INVALID_CONTEXT;
  if (streams_created == 64) return CUDA_ERROR_OUT_OF_MEMORY;
  *stream = reinterpret_cast<CUstream>(&stream_objects[streams_created++]);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventCreate(CUevent* event, unsigned int) {
  if (!is_primary_context(current_context)) return CUDA_ERROR_INVALID_CONTEXT;
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

namespace fake {

int device_count() noexcept {
  static const int count = [] {
    const char* env = std::getenv("FAKE_CUDA_DEVICE_COUNT");
    const int n = env ? std::atoi(env) : 1;
    return n < 1 ? 1 : n > kMaxDevices ? kMaxDevices : n;
  }();
  return count;
}

bool valid_device(int ordinal) noexcept { return ordinal >= 0 && ordinal < device_count(); }

int current_device() noexcept {
  for (int d = 0; d < device_count(); ++d)
    if (current_context == primary_context_of(d)) return d;
  return -1;
}

}  // namespace fake

extern "C" {

FAKE_CUDA_EXPORT void fake_cuda_set_attribute(int attribute, int value) {
  std::lock_guard<std::mutex> lock(attribute_mutex);
  if (value == fake::kDefaultAttribute) attribute_overrides.erase(attribute);
  else attribute_overrides[attribute] = value;
}

FAKE_CUDA_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_CUDA_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

// Like the real driver: an unknown symbol is CUDA_SUCCESS with
// CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND and *pfn NULL.
FAKE_CUDA_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                     CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  if (void* extra = fake::extra_entry(symbol)) {
    *pfn = extra;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
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
