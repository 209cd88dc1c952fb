// The CUDA driver, loaded at run time. libcumem never links libcuda: the
// library is dlopen'ed on first use (libcuda.so.1, or $CUMEM_LIBCUDA), every
// entry point is resolved once through cuGetProcAddress with the CUDA version
// whose signature we compiled against, and all calls go through one table.
// Only code in src/ uses this table; nothing outside src/driver/ loads
// symbols.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace cumem::core::driver {

// X(name, version): the entry point `name` with the signature of
// PFN_<name>_v<version>, available from CUDA <version> on.
#define CUMEM_DRIVER_FUNCTIONS(X)            \
  X(cuGetErrorName, 6000)                    \
  X(cuGetErrorString, 6000)                  \
  X(cuDeviceGetCount, 2000)                  \
  X(cuDeviceGet, 2000)                       \
  X(cuDeviceGetName, 2000)                   \
  X(cuDeviceGetUuid, 11040)                  \
  X(cuDeviceTotalMem, 3020)                  \
  X(cuDeviceGetAttribute, 2000)              \
  X(cuDeviceCanAccessPeer, 4000)             \
  X(cuDevicePrimaryCtxRetain, 7000)          \
  X(cuDevicePrimaryCtxRelease, 11000)        \
  X(cuCtxGetCurrent, 4000)                   \
  X(cuCtxSetCurrent, 4000)                   \
  X(cuCtxSynchronize, 2000)                  \
  X(cuCtxEnablePeerAccess, 4000)             \
  X(cuCtxGetStreamPriorityRange, 5050)       \
  X(cuMemGetInfo, 3020)                      \
  X(cuStreamCreateWithPriority, 5050)        \
  X(cuStreamDestroy, 4000)                   \
  X(cuStreamSynchronize, 2000)               \
  X(cuStreamQuery, 2000)                     \
  X(cuStreamWaitEvent, 3020)                 \
  X(cuStreamGetPriority, 5050)               \
  X(cuStreamGetDevice, 12080)                \
  X(cuStreamIsCapturing, 10000)              \
  X(cuStreamBeginCapture, 10010)             \
  X(cuStreamEndCapture, 10000)               \
  X(cuEventCreate, 2000)                     \
  X(cuEventDestroy, 4000)                    \
  X(cuEventRecord, 2000)                     \
  X(cuEventSynchronize, 2000)                \
  X(cuEventQuery, 2000)                      \
  X(cuEventElapsedTime, 12080)               \
  X(cuMemAlloc, 3020)                        \
  X(cuMemFree, 3020)                         \
  X(cuMemAllocFromPoolAsync, 11020)          \
  X(cuMemFreeAsync, 11020)                   \
  X(cuMemPoolCreate, 11020)                  \
  X(cuMemPoolDestroy, 11020)                 \
  X(cuDeviceGetDefaultMemPool, 11020)        \
  X(cuMemGetDefaultMemPool, 13000)           \
  X(cuMemPoolSetAttribute, 11020)            \
  X(cuMemPoolGetAttribute, 11020)            \
  X(cuMemPoolTrimTo, 11020)                  \
  X(cuMemPoolSetAccess, 11020)               \
  X(cuMemPoolGetAccess, 11020)               \
  X(cuMemHostAlloc, 2020)                    \
  X(cuMemFreeHost, 2000)                     \
  X(cuMemAllocManaged, 6000)                 \
  X(cuMemHostRegister, 6050)                 \
  X(cuMemHostUnregister, 4000)               \
  X(cuMemcpyAsync, 4000)                     \
  X(cuMemsetD8Async, 3020)                   \
  X(cuMemsetD16Async, 3020)                  \
  X(cuMemsetD32Async, 3020)                  \
  X(cuPointerGetAttributes, 7000)            \
  X(cuMemPrefetchAsync, 12020)               \
  X(cuMemAdvise, 12020)                      \
  X(cuMemDiscardBatchAsync, 13000)           \
  X(cuLibraryLoadData, 12000)                \
  X(cuLibraryUnload, 12000)                  \
  X(cuLibraryGetKernel, 12000)               \
  X(cuKernelGetAttribute, 12000)             \
  X(cuKernelSetAttribute, 12000)             \
  X(cuLaunchKernelEx, 11060)                 \
  X(cuLibraryGetModule, 12000)              \
  X(cuMemPoolExportToShareableHandle, 11020) \
  X(cuMemPoolImportFromShareableHandle, 11020) \
  X(cuMemPoolExportPointer, 11020)           \
  X(cuMemPoolImportPointer, 11020)           \
  X(cuIpcGetMemHandle, 4010)                 \
  X(cuIpcOpenMemHandle, 11000)               \
  X(cuIpcCloseMemHandle, 4010)               \
  X(cuIpcGetEventHandle, 4010)               \
  X(cuIpcOpenEventHandle, 4010)              \
  X(cuPointerGetAttribute, 4000)             \
  X(cuMemGetAddressRange, 3020)              \
  /* Virtual memory management (src/vmm/). */ \
  X(cuMemGetAllocationGranularity, 10020)    \
  X(cuMemAddressReserve, 10020)              \
  X(cuMemAddressFree, 10020)                 \
  X(cuMemCreate, 10020)                      \
  X(cuMemRelease, 10020)                     \
  X(cuMemMap, 10020)                         \
  X(cuMemUnmap, 10020)                       \
  X(cuMemSetAccess, 10020)                   \
  X(cuMemGetAccess, 10020)                   \
  X(cuMemExportToShareableHandle, 10020)     \
  X(cuMemImportFromShareableHandle, 10020)   \
  X(cuMemGetAllocationPropertiesFromHandle, 10020)     \
  /* stream capture and graphs (src/capture.cpp, src/graph.cpp, */ \
  /* resources/graph_memory_resource.cpp) */ \
  X(cuStreamGetCaptureInfo, 12030)           \
  X(cuThreadExchangeStreamCaptureMode, 10010) \
  X(cuGraphInstantiateWithFlags, 11040)      \
  X(cuGraphUpload, 11010)                    \
  X(cuGraphLaunch, 10000)                    \
  X(cuGraphExecDestroy, 10000)               \
  X(cuGraphDestroy, 10000)                   \
  X(cuMemAllocAsync, 11020)                  \
  X(cuDeviceGetGraphMemAttribute, 11040)     \
  X(cuDeviceSetGraphMemAttribute, 11040)     \
  X(cuDeviceGraphMemTrim, 11040) \
  X(cuMemPrefetchBatchAsync, 13000)          \
  X(cuMemDiscardAndPrefetchBatchAsync, 13000) \
  X(cuMemRangeGetAttribute, 8000)            \
  /* dma-buf export for communication engines (src/dmabuf.cpp) */ \
  X(cuMemGetHandleForAddressRange, 11070)

// Function pointers; a member is null when the installed driver is older
// than the version it needs. Use call() or require(), not the members, so
// that a missing entry point becomes CUMEM_ERROR_NOT_SUPPORTED.
struct Table {
#define CUMEM_DRIVER_MEMBER(name, version) PFN_##name##_v##version name##_fn = nullptr;
  CUMEM_DRIVER_FUNCTIONS(CUMEM_DRIVER_MEMBER)
#undef CUMEM_DRIVER_MEMBER
  // cuMemcpyBatchAsync changed its signature in CUDA 13.0 (12.8's has a
  // failIdx out-parameter), and a 12.x driver asked for the 13.0 version
  // hands out its own: one of the two is resolved, by the driver's version
  // (resolve_memcpy_batch() in driver.cpp). Call it through memcpy_batch().
  PFN_cuMemcpyBatchAsync_v13000 cuMemcpyBatchAsync_fn = nullptr;
  PFN_cuMemcpyBatchAsync_v12080 cuMemcpyBatchAsync_v12080_fn = nullptr;
  int driver_version = 0;  // e.g. 13000
  bool has_devices = false; // false when cuInit said CUDA_ERROR_NO_DEVICE
};

// The loaded driver; throws Error(no_driver) naming the path tried (every
// later call throws the same error: loading is attempted once).
const Table& get();

// Whether the driver can be loaded, without throwing.
bool available() noexcept;

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a CUresult.
std::string describe(CUresult result);

// Whether `result` leaves the context unusable (a kernel fault).
bool is_sticky(CUresult result) noexcept;

// Throws the Error that matches `result` unless it is CUDA_SUCCESS:
// "<function> failed with CUDA_ERROR_X (text) while <what>".
void check(CUresult result, const char* function, const std::string& what);

// Throws Error(not_supported) naming the function and the CUDA versions.
[[noreturn]] void missing(const char* function, int needed_version);

// The loaded table, or nullptr when there is no driver; never throws.
const Table* get_if_loaded() noexcept;
// The table if an earlier call loaded the driver, else nullptr; never
// loads it (for code that must not make a host-only call load libcuda).
const Table* loaded_already() noexcept;

// Whether the driver has cuMemcpyBatchAsync in either signature.
inline bool has_memcpy_batch(const Table& t) noexcept {
  return t.cuMemcpyBatchAsync_fn || t.cuMemcpyBatchAsync_v12080_fn;
}
// cuMemcpyBatchAsync through whichever signature the driver has (check
// has_memcpy_batch first); `fail_index` gets the failing copy's index where
// the driver says (12.8's signature), else SIZE_MAX.
CUresult memcpy_batch(const Table& t, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                      size_t count, CUmemcpyAttributes* attrs, size_t* attr_indices,
                      size_t num_attrs, CUstream stream, size_t* fail_index) noexcept;

// Logs a failed cleanup call whose result nobody can be given (see
// CUMEM_CU_CLEANUP): at warning, or debug for CUDA_ERROR_DEINITIALIZED
// (the driver shut down first at process exit); nothing without a driver.
void report_cleanup(CUresult result, const char* function, const char* what) noexcept;

// Runs fn(table) when the driver is loaded (see CUMEM_CU_QUIET).
template <class Fn>
CUresult quiet_call(Fn&& fn) noexcept {
  const Table* t = get_if_loaded();
  return t ? fn(*t) : CUDA_ERROR_NOT_INITIALIZED;
}

}  // namespace cumem::core::driver

// CUMEM_CU(cuMemAlloc, (&ptr, size), "allocating 4 bytes"): calls the entry
// point through the table and checks the result; a missing entry point is
// CUMEM_ERROR_NOT_SUPPORTED. `what` is only evaluated on failure, so hot
// paths build no message strings.
#define CUMEM_CU(name, args, what)                                              \
  do {                                                                          \
    const auto& cumem_drv_ = ::cumem::core::driver::get();                            \
    if (!cumem_drv_.name##_fn)                                                  \
      ::cumem::core::driver::missing(#name, ::cumem::core::driver::version_of_##name);      \
    const CUresult cumem_result_ = cumem_drv_.name##_fn args;                   \
    if (cumem_result_ != CUDA_SUCCESS) ::cumem::core::driver::check(cumem_result_, #name, what); \
  } while (0)

// CUMEM_CU_RESULT(cuStreamQuery, (s)): the raw CUresult, for calls whose
// non-success results are answers (CUDA_ERROR_NOT_READY, ...).
#define CUMEM_CU_RESULT(name, args)                                         \
  ([&]() -> CUresult {                                                      \
    const auto& cumem_drv_ = ::cumem::core::driver::get();                        \
    if (!cumem_drv_.name##_fn)                                              \
      ::cumem::core::driver::missing(#name, ::cumem::core::driver::version_of_##name);  \
    return cumem_drv_.name##_fn args;                                       \
  }())

// CUMEM_CU_QUIET(cuStreamDestroy, (s)): for destructors and cleanup, which
// cannot report: never throws; CUDA_ERROR_NOT_INITIALIZED without a driver,
// CUDA_ERROR_NOT_SUPPORTED when the driver lacks the entry point.
#define CUMEM_CU_QUIET(name, args) (::cumem::core::driver::quiet_call([&](const auto& cumem_drv_) { \
    return cumem_drv_.name##_fn ? cumem_drv_.name##_fn args : CUDA_ERROR_NOT_SUPPORTED;           \
  }))

// CUMEM_CU_CLEANUP(cuStreamDestroy, (s), "destroying a stream"): as QUIET
// (written out: `name` must be pasted before cuda.h's macros expand it),
// and a failure goes to the log (report_cleanup). `what` is a C string.
#define CUMEM_CU_CLEANUP(name, args, what)                                          \
  do {                                                                              \
    const CUresult cumem_cleanup_ = ::cumem::core::driver::quiet_call(              \
        [&](const auto& cumem_drv_) {                                               \
          return cumem_drv_.name##_fn ? cumem_drv_.name##_fn args                   \
                                      : CUDA_ERROR_NOT_SUPPORTED;                   \
        });                                                                         \
    if (cumem_cleanup_ != CUDA_SUCCESS)                                             \
      ::cumem::core::driver::report_cleanup(cumem_cleanup_, #name, what);           \
  } while (0)

namespace cumem::core::driver {
#define CUMEM_DRIVER_VERSION_OF(name, version) inline constexpr int version_of_##name = version;
CUMEM_DRIVER_FUNCTIONS(CUMEM_DRIVER_VERSION_OF)
#undef CUMEM_DRIVER_VERSION_OF
}  // namespace cumem::core::driver
