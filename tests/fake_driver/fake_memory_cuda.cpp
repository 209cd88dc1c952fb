// A fake CUDA driver whose memory is host memory, for host tests of what
// libcumem queues on the driver: copies (cuMemcpyAsync and
// cuMemcpyBatchAsync, both signatures), managed memory with prefetches,
// discards and the last prefetch location, streams and the events that
// order them. Its copies really copy (memcpy), so tests check the bytes that
// arrive; it checks the arguments of the batch calls as the real driver
// documents them (the legacy default stream refused, attribute indices
// starting at 0 and increasing, a valid source access order), and logs
// every call that queues work (fake_memory.hpp) so that tests see which
// path libcumem took. Loaded code and libcumem's batch copy kernels are in
// fake_copy_kernel.cpp.
//
// Environment, read at cuInit:
//   FAKE_CUDA_VERSION   the driver version it reports (default 13000); from
//                       12080 to 12999 it serves cuMemcpyBatchAsync with
//                       CUDA 12.8's signature (failIdx), below 12080 none;
//                       the managed batch calls and the _TYPE/_ID range
//                       attributes only from 13000.
//   FAKE_CUDA_NO_BATCH  set: no batch entry point at all, whatever the version.
//   FAKE_CUDA_COPY_KERNEL  loaded code and the copy kernels (fake_copy_kernel.cpp).
// One device, without memory pools (so its device resource is cuMemAlloc's),
// with managed memory and concurrent managed access.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "fake_copy_kernel.hpp"
#include "fake_memory.hpp"

namespace {

FakeMemoryState state;
int driver_version = 13000;
bool no_batch = false;

int primary_context_object;
const CUcontext primary_context = reinterpret_cast<CUcontext>(&primary_context_object);
thread_local CUcontext current_context = nullptr;

constexpr size_t kPage = 4096;

enum class Kind { device, pinned, managed };
struct Allocation {
  size_t size = 0;
  Kind kind = Kind::device;
  // Managed memory: the last prefetch location of each page (type 0: none).
  std::vector<std::pair<int, int>> last_prefetch;
};
std::map<uintptr_t, Allocation> allocations;  // guarded by state.mutex

std::string stream_name(CUstream s) {
  if (s == nullptr || s == CU_STREAM_LEGACY) return "legacy";
  if (s == CU_STREAM_PER_THREAD) return "ptds";
  char text[32];
  std::snprintf(text, sizeof text, "%p", static_cast<void*>(s));
  return text;
}

void log_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(state.mutex);
  state.log.push_back(line);
}

bool in_context() { return current_context == primary_context; }

// The allocation holding [p, p + n), or null (state.mutex held).
Allocation* find(uintptr_t p, size_t n, uintptr_t* base) {
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return nullptr;
  --it;
  if (p + n > it->first + it->second.size) return nullptr;
  *base = it->first;
  return &it->second;
}

// Managed allocations one after the other, without a gap, while the test
// asks for it (FakeMemoryState::adjacent_managed): never freed.
alignas(256) char managed_arena[4 << 20];
size_t managed_arena_used = 0;  // guarded by state.mutex
bool in_arena(uintptr_t p) {
  const auto base = reinterpret_cast<uintptr_t>(managed_arena);
  return p >= base && p < base + sizeof managed_arena;
}

void* allocate(size_t size, Kind kind) {
  const size_t rounded = (size + 255) / 256 * 256;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (kind == Kind::managed && state.adjacent_managed) {
      if (managed_arena_used + rounded > sizeof managed_arena) return nullptr;
      p = managed_arena + managed_arena_used;
      managed_arena_used += rounded;
    }
  }
  if (!p) p = std::aligned_alloc(256, rounded);
  if (!p) return nullptr;
  std::memset(p, 0xCD, size);
  std::lock_guard<std::mutex> lock(state.mutex);
  Allocation a;
  a.size = size;
  a.kind = kind;
  if (kind == Kind::managed) a.last_prefetch.assign((size + kPage - 1) / kPage, {0, 0});
  allocations[reinterpret_cast<uintptr_t>(p)] = std::move(a);
  return p;
}

CUresult release(uintptr_t p, Kind kind) {
  std::lock_guard<std::mutex> lock(state.mutex);
  auto it = allocations.find(p);
  if (it == allocations.end() || it->second.kind != kind) return CUDA_ERROR_INVALID_VALUE;
  allocations.erase(it);
  if (!in_arena(p)) std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

// The real driver refuses the legacy default stream for batch calls.
bool batch_stream_ok(CUstream s) { return s != nullptr && s != CU_STREAM_LEGACY; }

// Checks a run-index array as the batch calls document it.
bool runs_ok(const size_t* indices, size_t runs, size_t count) {
  if (runs == 0 || runs > count || indices[0] != 0) return false;
  for (size_t k = 1; k < runs; ++k)
    if (indices[k] <= indices[k - 1] || indices[k] >= count) return false;
  return true;
}

// Records a prefetch of [p, p + n) to `location` (managed memory only).
CUresult prefetch_range(CUdeviceptr p, size_t n, CUmemLocation location) {
  if (location.type < CU_MEM_LOCATION_TYPE_DEVICE ||
      location.type > CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
    return CUDA_ERROR_INVALID_VALUE;
  if (location.type == CU_MEM_LOCATION_TYPE_DEVICE && location.id != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(state.mutex);
  uintptr_t base = 0;
  Allocation* a = find(static_cast<uintptr_t>(p), n, &base);
  if (!a || a->kind != Kind::managed) return CUDA_ERROR_INVALID_VALUE;
  const size_t first = (static_cast<uintptr_t>(p) - base) / kPage;
  const size_t last = (static_cast<uintptr_t>(p) - base + n - 1) / kPage;
  const int id = location.type == CU_MEM_LOCATION_TYPE_HOST ? 0 : location.id;
  for (size_t i = first; i <= last; ++i) a->last_prefetch[i] = {location.type, id};
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGetErrorName(CUresult error, const char** out) {
  switch (error) {
    case CUDA_SUCCESS: *out = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *out = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *out = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *out = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT: *out = "CUDA_ERROR_INVALID_CONTEXT"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE: *out = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_FOUND: *out = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *out = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: *out = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return CUDA_SUCCESS;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      *out = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
      return CUDA_SUCCESS;
    default: *out = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI fake_cuGetErrorString(CUresult error, const char** out) {
  const char* name = nullptr;
  if (fake_cuGetErrorName(error, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *out = "an error of the fake memory driver";
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
CUresult CUDAAPI fake_cuDeviceGetName(char* name, int length, CUdevice) {
  std::snprintf(name, static_cast<size_t>(length), "Fake Memory Device");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGetUuid(CUuuid* uuid, CUdevice) {
  std::memset(uuid, 0x42, sizeof *uuid);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t{16} << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  *context = primary_context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext* context) {
  *context = current_context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxSetCurrent(CUcontext context) {
  if (context != nullptr && context != primary_context) return CUDA_ERROR_INVALID_VALUE;
  current_context = context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxSynchronize() {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  log_line("sync context");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *free_bytes = size_t{8} << 30;
  *total_bytes = size_t{16} << 30;
  return CUDA_SUCCESS;
}

// Streams and events: distinct small objects, never used as memory.
CUresult CUDAAPI fake_cuStreamCreateWithPriority(CUstream* stream, unsigned int, int) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  *stream = reinterpret_cast<CUstream>(new int(0));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamDestroy(CUstream stream) {
  delete reinterpret_cast<int*>(stream);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamSynchronize(CUstream stream) {
  log_line("sync stream=" + stream_name(stream));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamQuery(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI fake_cuStreamGetPriority(CUstream, int* priority) {
  *priority = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  std::lock_guard<std::mutex> lock(state.mutex);
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  for (void* s : state.capturing)
    if (s == static_cast<void*>(stream)) *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamWaitEvent(CUstream stream, CUevent, unsigned int) {
  log_line("wait stream=" + stream_name(stream));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventCreate(CUevent* event, unsigned int) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  *event = reinterpret_cast<CUevent>(new int(0));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventDestroy(CUevent event) {
  delete reinterpret_cast<int*>(event);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventRecord(CUevent, CUstream stream) {
  log_line("record stream=" + stream_name(stream));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult CUDAAPI fake_cuEventElapsedTime(float* ms, CUevent, CUevent) {
  *ms = 1.0f;  // no clock here: timings on the fake mean nothing
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventQuery(CUevent) { return CUDA_SUCCESS; }

CUresult CUDAAPI fake_cuMemAlloc(CUdeviceptr* ptr, size_t size) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  void* p = allocate(size, Kind::device);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemFree(CUdeviceptr ptr) {
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto it = allocations.find(static_cast<uintptr_t>(ptr));
    if (it != allocations.end() && it->second.kind == Kind::managed) {
      allocations.erase(it);
      if (!in_arena(static_cast<uintptr_t>(ptr))) std::free(reinterpret_cast<void*>(ptr));
      return CUDA_SUCCESS;
    }
  }
  return release(static_cast<uintptr_t>(ptr), Kind::device);
}
CUresult CUDAAPI fake_cuMemHostAlloc(void** ptr, size_t size, unsigned int) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  *ptr = allocate(size, Kind::pinned);
  return *ptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI fake_cuMemFreeHost(void* ptr) {
  return release(reinterpret_cast<uintptr_t>(ptr), Kind::pinned);
}
CUresult CUDAAPI fake_cuMemAllocManaged(CUdeviceptr* ptr, size_t size, unsigned int) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  void* p = allocate(size, Kind::managed);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
// The allocation holding dptr, as the real driver reports it.
CUresult CUDAAPI fake_cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  std::lock_guard<std::mutex> lock(state.mutex);
  state.address_range_queries += 1;
  uintptr_t start = 0;
  Allocation* a = find(static_cast<uintptr_t>(dptr), 1, &start);
  if (!a) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = static_cast<CUdeviceptr>(start);
  if (size) *size = a->size;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t n, CUstream s) {
  std::memset(reinterpret_cast<void*>(p), value, n);
  log_line("memset stream=" + stream_name(s));
  return CUDA_SUCCESS;
}

// The wider fills: `n` elements, at an address aligned to their width (the
// driver refuses another with CUDA_ERROR_INVALID_VALUE).
template <class T>
CUresult fill_wide(CUdeviceptr p, T value, size_t n, CUstream s) {
  if (p % sizeof(T) != 0) return CUDA_ERROR_INVALID_VALUE;
  T* to = reinterpret_cast<T*>(p);
  for (size_t i = 0; i < n; ++i) to[i] = value;
  log_line("memset stream=" + stream_name(s));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemsetD16Async(CUdeviceptr p, unsigned short value, size_t n, CUstream s) {
  return fill_wide<unsigned short>(p, value, n, s);
}
CUresult CUDAAPI fake_cuMemsetD32Async(CUdeviceptr p, unsigned int value, size_t n, CUstream s) {
  return fill_wide<unsigned int>(p, value, n, s);
}

CUresult CUDAAPI fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  log_line("memcpy stream=" + stream_name(s));
  return CUDA_SUCCESS;
}

CUresult memcpy_batch(const char* which, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                      size_t count, CUmemcpyAttributes* attrs, size_t* attr_indices,
                      size_t num_attrs, size_t* fail_index, CUstream stream) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!batch_stream_ok(stream) || count == 0 || !runs_ok(attr_indices, num_attrs, count))
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; k < num_attrs; ++k)
    if (attrs[k].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
        attrs[k].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
      return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if ((!dsts[i] || !srcs[i]) && sizes[i] > 0) {
      if (fail_index) *fail_index = i;
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::memcpy(reinterpret_cast<void*>(dsts[i]), reinterpret_cast<const void*>(srcs[i]),
                sizes[i]);
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  state.last_attr_indices.assign(attr_indices, attr_indices + num_attrs);
  state.last_attrs.clear();
  for (size_t k = 0; k < num_attrs; ++k) {
    FakeCopyAttributes a;
    a.src_access_order = attrs[k].srcAccessOrder;
    a.src_hint_type = attrs[k].srcLocHint.type;
    a.src_hint_id = attrs[k].srcLocHint.id;
    a.dst_hint_type = attrs[k].dstLocHint.type;
    a.dst_hint_id = attrs[k].dstLocHint.id;
    a.flags = attrs[k].flags;
    state.last_attrs.push_back(a);
  }
  state.log.push_back(std::string(which) + " stream=" + stream_name(stream) +
                      " copies=" + std::to_string(count) + " attrs=" + std::to_string(num_attrs));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemcpyBatchAsync_v13000(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                size_t* sizes, size_t count,
                                                CUmemcpyAttributes* attrs, size_t* attr_indices,
                                                size_t num_attrs, CUstream stream) {
  return memcpy_batch("memcpy_batch", dsts, srcs, sizes, count, attrs, attr_indices, num_attrs,
                      nullptr, stream);
}
CUresult CUDAAPI fake_cuMemcpyBatchAsync_v12080(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                size_t* sizes, size_t count,
                                                CUmemcpyAttributes* attrs, size_t* attr_indices,
                                                size_t num_attrs, size_t* fail_index,
                                                CUstream stream) {
  if (!fail_index) return CUDA_ERROR_INVALID_VALUE;  // 12.8's needs it
  return memcpy_batch("memcpy_batch_12080", dsts, srcs, sizes, count, attrs, attr_indices,
                      num_attrs, fail_index, stream);
}

CUresult CUDAAPI fake_cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation location,
                                         unsigned int flags, CUstream s) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = prefetch_range(p, n, location);
  if (r == CUDA_SUCCESS) log_line("prefetch stream=" + stream_name(s));
  return r;
}

CUresult prefetch_batch(const char* which, CUdeviceptr* ptrs, size_t* sizes, size_t count,
                        CUmemLocation* locs, size_t* loc_indices, size_t num_locs,
                        unsigned long long flags, CUstream s) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!batch_stream_ok(s) || flags != 0 || count == 0 || !runs_ok(loc_indices, num_locs, count))
    return CUDA_ERROR_INVALID_VALUE;
  size_t run = 0;
  for (size_t i = 0; i < count; ++i) {
    while (run + 1 < num_locs && loc_indices[run + 1] <= i) ++run;
    const CUresult r = prefetch_range(ptrs[i], sizes[i], locs[run]);
    if (r != CUDA_SUCCESS) return r;
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  state.last_location_indices.assign(loc_indices, loc_indices + num_locs);
  state.last_locations.clear();
  for (size_t k = 0; k < num_locs; ++k) state.last_locations.push_back({locs[k].type, locs[k].id});
  state.log.push_back(std::string(which) + " stream=" + stream_name(s) +
                      " buffers=" + std::to_string(count) + " locations=" +
                      std::to_string(num_locs));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemPrefetchBatchAsync(CUdeviceptr* ptrs, size_t* sizes, size_t count,
                                              CUmemLocation* locs, size_t* loc_indices,
                                              size_t num_locs, unsigned long long flags,
                                              CUstream s) {
  return prefetch_batch("prefetch_batch", ptrs, sizes, count, locs, loc_indices, num_locs, flags,
                        s);
}
CUresult CUDAAPI fake_cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr* ptrs, size_t* sizes,
                                                        size_t count, CUmemLocation* locs,
                                                        size_t* loc_indices, size_t num_locs,
                                                        unsigned long long flags, CUstream s) {
  return prefetch_batch("discard_prefetch_batch", ptrs, sizes, count, locs, loc_indices, num_locs,
                        flags, s);
}
CUresult CUDAAPI fake_cuMemDiscardBatchAsync(CUdeviceptr* ptrs, size_t* sizes, size_t count,
                                             unsigned long long flags, CUstream s) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!batch_stream_ok(s) || flags != 0 || count == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state.mutex);
  for (size_t i = 0; i < count; ++i) {
    uintptr_t base = 0;
    Allocation* a = find(static_cast<uintptr_t>(ptrs[i]), sizes[i], &base);
    if (!a || a->kind != Kind::managed) return CUDA_ERROR_INVALID_VALUE;
  }
  state.log.push_back("discard_batch stream=" + stream_name(s) +
                      " buffers=" + std::to_string(count));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemRangeGetAttribute(void* data, size_t size,
                                             CUmem_range_attribute attribute, CUdeviceptr p,
                                             size_t n) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  const bool typed = attribute == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE ||
                     attribute == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID;
  if (attribute != CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION && !typed)
    return CUDA_ERROR_INVALID_VALUE;
  if (typed && driver_version < 13000) return CUDA_ERROR_INVALID_VALUE;
  if (size != 4) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state.mutex);
  uintptr_t base = 0;
  Allocation* a = find(static_cast<uintptr_t>(p), n, &base);
  if (!a || a->kind != Kind::managed || n == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t first = (static_cast<uintptr_t>(p) - base) / kPage;
  const size_t last = (static_cast<uintptr_t>(p) - base + n - 1) / kPage;
  std::pair<int, int> where = a->last_prefetch[first];
  for (size_t i = first; i <= last; ++i)
    if (a->last_prefetch[i] != where) where = {0, 0};
  int value = 0;
  if (attribute == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE)
    value = where.first;
  else if (attribute == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID)
    value = where.second;
  else  // before CUDA 13: a device, CU_DEVICE_CPU for any host location, or invalid
    value = where.first == CU_MEM_LOCATION_TYPE_DEVICE ? where.second
            : where.first == 0                        ? CU_DEVICE_INVALID
                                                      : CU_DEVICE_CPU;
  std::memcpy(data, &value, sizeof value);
  return CUDA_SUCCESS;
}

struct Entry {
  const char* name;
  void* function;
  int since;  // the driver version that has it
};

#define FAKE_ENTRY(name, version, since) \
  Entry { #name, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&fake_##name)), since }
const Entry served[] = {
    FAKE_ENTRY(cuGetErrorName, 6000, 0),
    FAKE_ENTRY(cuGetErrorString, 6000, 0),
    FAKE_ENTRY(cuDeviceGetCount, 2000, 0),
    FAKE_ENTRY(cuDeviceGet, 2000, 0),
    FAKE_ENTRY(cuDeviceGetName, 2000, 0),
    FAKE_ENTRY(cuDeviceGetUuid, 11040, 0),
    FAKE_ENTRY(cuDeviceTotalMem, 3020, 0),
    FAKE_ENTRY(cuDeviceGetAttribute, 2000, 0),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain, 7000, 0),
    FAKE_ENTRY(cuDevicePrimaryCtxRelease, 11000, 0),
    FAKE_ENTRY(cuCtxGetCurrent, 4000, 0),
    FAKE_ENTRY(cuCtxSetCurrent, 4000, 0),
    FAKE_ENTRY(cuCtxSynchronize, 2000, 0),
    FAKE_ENTRY(cuCtxGetStreamPriorityRange, 5050, 0),
    FAKE_ENTRY(cuMemGetInfo, 3020, 0),
    FAKE_ENTRY(cuStreamCreateWithPriority, 5050, 0),
    FAKE_ENTRY(cuStreamDestroy, 4000, 0),
    FAKE_ENTRY(cuStreamSynchronize, 2000, 0),
    FAKE_ENTRY(cuStreamQuery, 2000, 0),
    FAKE_ENTRY(cuStreamGetPriority, 5050, 0),
    FAKE_ENTRY(cuStreamIsCapturing, 10000, 0),
    FAKE_ENTRY(cuStreamWaitEvent, 3020, 0),
    FAKE_ENTRY(cuEventCreate, 2000, 0),
    FAKE_ENTRY(cuEventDestroy, 4000, 0),
    FAKE_ENTRY(cuEventRecord, 2000, 0),
    FAKE_ENTRY(cuEventSynchronize, 2000, 0),
    FAKE_ENTRY(cuEventQuery, 2000, 0),
    FAKE_ENTRY(cuEventElapsedTime, 12080, 0),
    FAKE_ENTRY(cuMemAlloc, 3020, 0),
    FAKE_ENTRY(cuMemFree, 3020, 0),
    FAKE_ENTRY(cuMemHostAlloc, 2020, 0),
    FAKE_ENTRY(cuMemFreeHost, 2000, 0),
    FAKE_ENTRY(cuMemAllocManaged, 6000, 0),
    FAKE_ENTRY(cuMemGetAddressRange, 3020, 0),
    FAKE_ENTRY(cuMemsetD8Async, 3020, 0),
    FAKE_ENTRY(cuMemsetD16Async, 3020, 0),
    FAKE_ENTRY(cuMemsetD32Async, 3020, 0),
    FAKE_ENTRY(cuMemcpyAsync, 4000, 0),
    FAKE_ENTRY(cuMemPrefetchAsync, 12020, 0),
    FAKE_ENTRY(cuMemRangeGetAttribute, 8000, 0),
    FAKE_ENTRY(cuMemPrefetchBatchAsync, 13000, 13000),
    FAKE_ENTRY(cuMemDiscardBatchAsync, 13000, 13000),
    FAKE_ENTRY(cuMemDiscardAndPrefetchBatchAsync, 13000, 13000),
};
#undef FAKE_ENTRY

bool is_batch(const char* symbol) {
  return std::strstr(symbol, "Batch") != nullptr;
}

}  // namespace

namespace fake_memory {

FakeMemoryState& state() { return ::state; }
bool in_context() { return ::in_context(); }
std::string stream_name(CUstream s) { return ::stream_name(s); }
bool kernel_reachable(uintptr_t p, size_t n) {
  std::lock_guard<std::mutex> lock(::state.mutex);
  uintptr_t base = 0;
  return find(p, n, &base) != nullptr;  // every kind the fake allocates is device-accessible
}

}  // namespace fake_memory

extern "C" {

__attribute__((visibility("default"))) FakeMemoryState* fake_memory_state() { return &state; }

CUresult CUDAAPI cuInit(unsigned int flags) {
  if (const char* v = std::getenv("FAKE_CUDA_VERSION")) driver_version = std::atoi(v);
  no_batch = std::getenv("FAKE_CUDA_NO_BATCH") != nullptr;
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  if (const char* v = std::getenv("FAKE_CUDA_VERSION")) driver_version = std::atoi(v);
  *version = driver_version;
  return CUDA_SUCCESS;
}

// As the real driver does: the newest version of a symbol at or below the
// one asked for that this driver has (for cuMemcpyBatchAsync: 12.8's
// signature on a 12.x driver, whatever version is asked for).
CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t,
                                     CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (no_batch && is_batch(symbol)) return CUDA_SUCCESS;
  if (void* f = fake_memory::copy_kernel_entry(symbol)) {
    *pfn = f;
  } else if (std::strcmp(symbol, "cuMemcpyBatchAsync") == 0) {
    if (driver_version >= 13000 && version >= 13000)
      *pfn = reinterpret_cast<void*>(
          static_cast<PFN_cuMemcpyBatchAsync_v13000>(&fake_cuMemcpyBatchAsync_v13000));
    else if (driver_version >= 12080 && version >= 12080)
      *pfn = reinterpret_cast<void*>(
          static_cast<PFN_cuMemcpyBatchAsync_v12080>(&fake_cuMemcpyBatchAsync_v12080));
  } else {
    for (const Entry& e : served)
      if (std::strcmp(e.name, symbol) == 0 && driver_version >= e.since) *pfn = e.function;
  }
  if (*pfn && status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // extern "C"
