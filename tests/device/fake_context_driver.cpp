// A fake CUDA driver (loaded by libcumem through $CUMEM_LIBCUDA) that
// counts each device's primary-context retains and releases, for the host
// test of a device's count (test_device_context_host.cpp): one device, and
// only the calls that getting and releasing a device make.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <cstring>

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace {

int context_object;
const CUcontext context = reinterpret_cast<CUcontext>(&context_object);
thread_local CUcontext current = nullptr;
std::atomic<long> retains{0}, releases{0};
std::atomic<long> held{0};       // retains not released yet
std::atomic<long> unmatched{0};  // releases that found none held

CUresult CUDAAPI fake_cuGetErrorName(CUresult, const char** out) {
  *out = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuGetErrorString(CUresult, const char** out) {
  *out = "fake error";
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
CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  retains.fetch_add(1);
  held.fetch_add(1);
  *ctx = context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDevicePrimaryCtxRelease(CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  releases.fetch_add(1);
  if (held.fetch_sub(1) <= 0) unmatched.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = current;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxSetCurrent(CUcontext ctx) {
  current = ctx;
  return CUDA_SUCCESS;
}

struct Entry {
  const char* name;
  void* function;
};
#define FAKE_ENTRY(name, version) \
  Entry { #name, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&fake_##name)) }
const Entry served[] = {
    FAKE_ENTRY(cuGetErrorName, 6000),
    FAKE_ENTRY(cuGetErrorString, 6000),
    FAKE_ENTRY(cuDeviceGetCount, 2000),
    FAKE_ENTRY(cuDeviceGet, 2000),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain, 7000),
    FAKE_ENTRY(cuDevicePrimaryCtxRelease, 11000),
    FAKE_ENTRY(cuCtxGetCurrent, 4000),
    FAKE_ENTRY(cuCtxSetCurrent, 4000),
};
#undef FAKE_ENTRY

}  // namespace

extern "C" {

// The test's view: retains and releases so far, the retains held now, and
// the releases that found none held.
struct FakeContextCounts {
  long retains, releases, held, unmatched;
};
FAKE_EXPORT FakeContextCounts fake_context_counts() {
  return FakeContextCounts{retains.load(), releases.load(), held.load(), unmatched.load()};
}

FAKE_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
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
