// The engines extras of the fake driver (fake_cuda_engines = fake_cuda.cpp +
// fake_vmm.cpp + this file): memory pools, cuMemAlloc, cuMemHostAlloc and
// managed memory backed by host memory, cuMemGetAddressRange, and dma-buf
// export (cuMemGetHandleForAddressRange), so that the host suite runs
// libcumem's dma-buf export and unmap notifications over every kind of
// device memory.
//
// Memory: every pool and cuMemAlloc hands out pieces of 2 MiB "physical"
// segments (larger requests get segments of their own), at 512-byte steps,
// as the real driver sub-allocates: an allocation is rarely page-aligned,
// and cuMemGetAddressRange gives the allocation itself. A freed piece is not
// reused; a segment with nothing left in it goes at a pool trim (or when
// its pool is destroyed).
//
// dma-buf export keeps the real driver's rules (cuda.h,
// cuMemGetHandleForAddressRange): CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED of
// the memory's device, a start and size at the host page size, the range
// inside one segment of device memory, or (virtual memory) mapped without a
// gap by chunks with one set of properties; anything else is
// CUDA_ERROR_INVALID_VALUE. The fd is a memfd the fake records, so that
// tests can ask what it covers (fake_engines.hpp). A pool is never made
// with the FABRIC handle type (shared/DESIGN.md): the fake refuses and
// counts the attempt.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "fake_cuda.hpp"
#include "fake_engines.hpp"

extern "C" CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                                CUdriverProcAddressQueryResult* status);

namespace {

constexpr size_t kSegment = size_t{2} << 20;
constexpr size_t kStep = 512;

enum class Kind { device, pinned, managed };

struct Segment {
  size_t size = 0;
  size_t used = 0;   // bump offset
  int live = 0;      // allocations in it not freed
  CUmemoryPool pool = nullptr;  // null: cuMemAlloc / cuMemHostAlloc / managed
  Kind kind = Kind::device;
  int device = 0;
};

struct Allocation {
  size_t size = 0;
  uintptr_t segment = 0;
};

struct Pool {
  CUmemLocation location{};
  CUmemAllocationType type = CU_MEM_ALLOCATION_TYPE_PINNED;
  bool is_default = false;
  cuuint64_t threshold = 0;
  int reuse[3] = {1, 1, 1};
  cuuint64_t used_high = 0, reserved_high = 0;
};

struct DmaBufRecord {
  FakeDmaBuf what;
};

struct State {
  std::mutex mutex;
  std::map<uintptr_t, Segment> segments;        // base -> segment
  std::map<uintptr_t, Allocation> allocations;  // address -> allocation
  std::map<CUmemoryPool, Pool*> pools;
  std::map<ino_t, DmaBufRecord> dmabufs;        // by the memfd's inode
  FakeEnginesCounts counts{};
  bool refuse_multi_chunk = false;
  bool allow_pcie = false;
};

State& state() {
  static State* s = new State;  // never destroyed: libcumem may call at exit
  return *s;
}

Kind kind_of(const Pool& p) {
  if (p.type == CU_MEM_ALLOCATION_TYPE_MANAGED) return Kind::managed;
  return p.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? Kind::device : Kind::pinned;
}

// A piece of `size` bytes of a segment of `pool` (or of the pool-less
// memory of `kind` on `device`); 0 when out of host memory. Under the lock.
uintptr_t carve(State& s, size_t size, CUmemoryPool pool, Kind kind, int device) {
  const size_t rounded = (size + kStep - 1) / kStep * kStep;
  for (auto& [base, seg] : s.segments) {
    if (seg.pool != pool || seg.kind != kind || seg.device != device) continue;
    if (seg.size - seg.used < rounded) continue;
    const uintptr_t p = base + seg.used;
    seg.used += rounded;
    ++seg.live;
    s.allocations[p] = Allocation{size, base};
    return p;
  }
  const size_t bytes = rounded <= kSegment / 2 ? kSegment : (rounded + kSegment - 1) / kSegment * kSegment;
  void* memory = std::aligned_alloc(kSegment, bytes);
  if (!memory) return 0;
  const uintptr_t base = reinterpret_cast<uintptr_t>(memory);
  Segment seg;
  seg.size = bytes;
  seg.used = rounded;
  seg.live = 1;
  seg.pool = pool;
  seg.kind = kind;
  seg.device = device;
  s.segments[base] = seg;
  s.allocations[base] = Allocation{size, base};
  return base;
}

// Frees the allocation at `p` of the given pool-ness; false when there is none.
bool release(State& s, uintptr_t p, bool from_pool, Kind kind) {
  auto it = s.allocations.find(p);
  if (it == s.allocations.end()) return false;
  Segment& seg = s.segments[it->second.segment];
  if ((seg.pool != nullptr) != from_pool || seg.kind != kind) return false;
  --seg.live;
  const uintptr_t base = it->second.segment;
  s.allocations.erase(it);
  // Memory of no pool goes back at once (cuMemFree unmaps).
  if (!from_pool && seg.live == 0) {
    std::free(reinterpret_cast<void*>(base));
    s.segments.erase(base);
  }
  return true;
}

void drop_empty_segments(State& s, CUmemoryPool pool) {
  for (auto it = s.segments.begin(); it != s.segments.end();) {
    if (it->second.pool == pool && it->second.live == 0) {
      std::free(reinterpret_cast<void*>(it->first));
      it = s.segments.erase(it);
    } else {
      ++it;
    }
  }
}

// The segment holding [p, p + n), or end().
std::map<uintptr_t, Segment>::iterator segment_of(State& s, uintptr_t p, size_t n) {
  auto it = s.segments.upper_bound(p);
  if (it == s.segments.begin()) return s.segments.end();
  --it;
  if (p < it->first || n > it->second.size || p - it->first > it->second.size - n)
    return s.segments.end();
  return it;
}

int device_attribute(CUdevice_attribute attribute, int device) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (cuGetProcAddress_v2("cuDeviceGetAttribute", &fn, 13000, 0, &found) != CUDA_SUCCESS || !fn)
    return 0;
  int value = 0;
  if (reinterpret_cast<PFN_cuDeviceGetAttribute_v2000>(fn)(&value, attribute, device) !=
      CUDA_SUCCESS)
    return 0;
  return value;
}

Pool* pool_of(State& s, CUmemoryPool handle) {
  auto it = s.pools.find(handle);
  return it == s.pools.end() ? nullptr : it->second;
}

// The default pool of a location and type, made on first use.
CUmemoryPool default_pool(State& s, const CUmemLocation& location, CUmemAllocationType type) {
  for (const auto& [handle, p] : s.pools)
    if (p->is_default && p->type == type && p->location.type == location.type &&
        p->location.id == location.id)
      return handle;
  Pool* p = new Pool;
  p->location = location;
  p->type = type;
  p->is_default = true;
  const CUmemoryPool handle = reinterpret_cast<CUmemoryPool>(p);
  s.pools[handle] = p;
  return handle;
}

// ---- Pools ----

CUresult CUDAAPI fake_cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  if (!pool || !fake::valid_device(device)) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUmemLocation where{};
  where.type = CU_MEM_LOCATION_TYPE_DEVICE;
  where.id = device;
  *pool = default_pool(s, where, CU_MEM_ALLOCATION_TYPE_PINNED);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                             CUmemAllocationType type) {
  if (!pool || !location) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED)
    return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUmemLocation where = *location;
  if (where.type == CU_MEM_LOCATION_TYPE_INVALID) {  // managed, no preference
    where.type = CU_MEM_LOCATION_TYPE_DEVICE;
    where.id = 0;
  }
  if (where.type == CU_MEM_LOCATION_TYPE_HOST) where.id = 0;
  *pool = default_pool(s, where, type);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (!pool || !props) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (props->handleTypes & CU_MEM_HANDLE_TYPE_FABRIC) {
    // Never asked by libcumem (destroying such a pool crashed driver
    // 580.159): counted, so that a test can say so.
    ++s.counts.fabric_pools;
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  Pool* p = new Pool;
  p->location = props->location;
  p->type = props->allocType;
  const CUmemoryPool handle = reinterpret_cast<CUmemoryPool>(p);
  s.pools[handle] = p;
  ++s.counts.pools_created;
  *pool = handle;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemPoolDestroy(CUmemoryPool pool) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Pool* p = pool_of(s, pool);
  if (!p || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  // The driver keeps the memory of allocations not freed yet; the fake
  // drops the empty segments.
  drop_empty_segments(s, pool);
  s.pools.erase(pool);
  delete p;
  ++s.counts.pools_destroyed;
  return CUDA_SUCCESS;
}

cuuint64_t pool_bytes(State& s, CUmemoryPool pool, bool used) {
  cuuint64_t n = 0;
  if (used) {
    for (const auto& [p, a] : s.allocations)
      if (s.segments[a.segment].pool == pool) n += a.size;
  } else {
    for (const auto& [base, seg] : s.segments)
      if (seg.pool == pool) n += seg.size;
  }
  return n;
}

CUresult CUDAAPI fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                            void* value) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Pool* p = pool_of(s, pool);
  if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: p->reuse[0] = *static_cast<int*>(value); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: p->reuse[1] = *static_cast<int*>(value); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: p->reuse[2] = *static_cast<int*>(value); break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->threshold = *static_cast<cuuint64_t*>(value); break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: p->reserved_high = 0; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: p->used_high = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                            void* value) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Pool* p = pool_of(s, pool);
  if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *static_cast<int*>(value) = p->reuse[0]; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *static_cast<int*>(value) = p->reuse[1]; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *static_cast<int*>(value) = p->reuse[2]; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *static_cast<cuuint64_t*>(value) = p->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = pool_bytes(s, pool, false);
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = pool_bytes(s, pool, true);
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemPoolTrimTo(CUmemoryPool pool, size_t) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!pool_of(s, pool)) return CUDA_ERROR_INVALID_VALUE;
  ++s.counts.pool_trims;
  drop_empty_segments(s, pool);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* desc,
                                         size_t count) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!pool_of(s, pool) || !desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool,
                                         CUmemLocation*) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!pool_of(s, pool) || !flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemAllocFromPoolAsync(CUdeviceptr* ptr, size_t size, CUmemoryPool pool,
                                              CUstream) {
  if (!ptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Pool* p = pool_of(s, pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  const int device = p->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? p->location.id : -1;
  const uintptr_t got = carve(s, size, pool, kind_of(*p), device);
  if (!got) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = static_cast<CUdeviceptr>(got);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemFreeAsync(CUdeviceptr ptr, CUstream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(static_cast<uintptr_t>(ptr));
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  const Segment& seg = s.segments[it->second.segment];
  if (!seg.pool) return CUDA_ERROR_INVALID_VALUE;
  return release(s, static_cast<uintptr_t>(ptr), true, seg.kind) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
}

// ---- Memory of no pool ----

CUresult alloc_plain(CUdeviceptr* ptr, size_t size, Kind kind) {
  const int device = fake::current_device();
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const uintptr_t got = carve(s, size, nullptr, kind, kind == Kind::pinned ? -1 : device);
  if (!got) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = static_cast<CUdeviceptr>(got);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemAlloc(CUdeviceptr* ptr, size_t size) {
  return alloc_plain(ptr, size, Kind::device);
}

CUresult CUDAAPI fake_cuMemAllocManaged(CUdeviceptr* ptr, size_t size, unsigned int) {
  return alloc_plain(ptr, size, Kind::managed);
}

CUresult CUDAAPI fake_cuMemFree(CUdeviceptr ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  return release(s, p, false, Kind::device) || release(s, p, false, Kind::managed)
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI fake_cuMemHostAlloc(void** ptr, size_t size, unsigned int) {
  CUdeviceptr p = 0;
  const CUresult r = alloc_plain(&p, size, Kind::pinned);
  if (r == CUDA_SUCCESS) *ptr = reinterpret_cast<void*>(p);
  return r;
}

CUresult CUDAAPI fake_cuMemFreeHost(void* ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return release(s, reinterpret_cast<uintptr_t>(ptr), false, Kind::pinned)
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

// ---- Address ranges and dma-bufs ----

CUresult CUDAAPI fake_cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  const uintptr_t p = static_cast<uintptr_t>(dptr);
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.allocations.upper_bound(p);
    if (it != s.allocations.begin()) {
      --it;
      if (p < it->first + (it->second.size ? it->second.size : 1)) {
        if (base) *base = static_cast<CUdeviceptr>(it->first);
        if (size) *size = it->second.size;
        return CUDA_SUCCESS;
      }
    }
  }
  // Virtual memory: the one mapping (chunk) that holds it, as the real
  // driver answers even for a range of several chunks.
  fake::VmmSpan m;
  if (!fake::vmm_mapping_at(p, &m)) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = static_cast<CUdeviceptr>(m.base);
  if (size) *size = m.size;
  return CUDA_SUCCESS;
}

CUresult refuse(State& s, CUresult r) {
  ++s.counts.dmabuf_refusals;
  return r;
}

CUresult CUDAAPI fake_cuMemGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size,
                                                    CUmemRangeHandleType type,
                                                    unsigned long long flags) {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t p = static_cast<uintptr_t>(dptr);
  if (!handle || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) return refuse(s, CUDA_ERROR_INVALID_VALUE);
  if (flags & ~static_cast<unsigned long long>(CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE))
    return refuse(s, CUDA_ERROR_INVALID_VALUE);
  if ((flags & CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) && !s.allow_pcie)
    return refuse(s, CUDA_ERROR_NOT_SUPPORTED);
  if (size == 0 || p % page != 0 || size % page != 0) return refuse(s, CUDA_ERROR_INVALID_VALUE);
  int device = -1;
  auto seg = segment_of(s, p, size);
  if (seg != s.segments.end()) {
    if (seg->second.kind != Kind::device) return refuse(s, CUDA_ERROR_INVALID_VALUE);
    device = seg->second.device;
  } else {
    lock.unlock();  // the VMM extras take their own lock
    size_t mappings = 0;
    fake::VmmSpan first;
    const bool mapped = fake::vmm_range_mapped(p, size, &mappings, &first);
    lock.lock();
    if (!mapped || first.location_type != CU_MEM_LOCATION_TYPE_DEVICE)
      return refuse(s, CUDA_ERROR_INVALID_VALUE);
    if (mappings > 1 && s.refuse_multi_chunk) return refuse(s, CUDA_ERROR_INVALID_VALUE);
    device = first.location_id;
  }
  lock.unlock();
  const int supported = device_attribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device);
  lock.lock();
  if (!supported) return refuse(s, CUDA_ERROR_NOT_SUPPORTED);
  // Not close-on-exec, as a driver's fd may not be: libcumem sets it.
  const int fd = memfd_create("fake-dmabuf", 0);
  if (fd < 0) return refuse(s, CUDA_ERROR_OUT_OF_MEMORY);
  struct stat st {};
  fstat(fd, &st);
  s.dmabufs[st.st_ino] = DmaBufRecord{FakeDmaBuf{p, size, flags}};
  ++s.counts.dmabuf_exports;
  *static_cast<int*>(handle) = fd;
  return CUDA_SUCCESS;
}

struct Entry {
  const char* name;
  void* function;
};

#define FAKE_ENTRY(name, version) \
  Entry { #name, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&fake_##name)) }
const Entry engines[] = {
    FAKE_ENTRY(cuDeviceGetDefaultMemPool, 11020),
    FAKE_ENTRY(cuMemGetDefaultMemPool, 13000),
    FAKE_ENTRY(cuMemPoolCreate, 11020),
    FAKE_ENTRY(cuMemPoolDestroy, 11020),
    FAKE_ENTRY(cuMemPoolSetAttribute, 11020),
    FAKE_ENTRY(cuMemPoolGetAttribute, 11020),
    FAKE_ENTRY(cuMemPoolTrimTo, 11020),
    FAKE_ENTRY(cuMemPoolSetAccess, 11020),
    FAKE_ENTRY(cuMemPoolGetAccess, 11020),
    FAKE_ENTRY(cuMemAllocFromPoolAsync, 11020),
    FAKE_ENTRY(cuMemFreeAsync, 11020),
    FAKE_ENTRY(cuMemAlloc, 3020),
    FAKE_ENTRY(cuMemFree, 3020),
    FAKE_ENTRY(cuMemAllocManaged, 6000),
    FAKE_ENTRY(cuMemHostAlloc, 2020),
    FAKE_ENTRY(cuMemFreeHost, 2000),
    FAKE_ENTRY(cuMemGetAddressRange, 3020),
    FAKE_ENTRY(cuMemGetHandleForAddressRange, 11070),
};
#undef FAKE_ENTRY

}  // namespace

void* fake::engine_entry(const char* name) noexcept {
  for (const Entry& e : engines)
    if (std::strcmp(e.name, name) == 0) return e.function;
  return nullptr;
}

extern "C" {

FAKE_CUDA_EXPORT void fake_engines_counts(FakeEnginesCounts* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *out = s.counts;
  out->live_allocations = s.allocations.size();
}

FAKE_CUDA_EXPORT int fake_engines_dmabuf(int fd, FakeDmaBuf* out) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return -1;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.dmabufs.find(st.st_ino);
  if (it == s.dmabufs.end()) return -1;
  *out = it->second.what;
  return 0;
}

FAKE_CUDA_EXPORT void fake_engines_reset() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.counts = FakeEnginesCounts{};
  s.refuse_multi_chunk = false;
  s.allow_pcie = false;
}

FAKE_CUDA_EXPORT void fake_engines_refuse_multi_chunk(int on) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.refuse_multi_chunk = on != 0;
}

FAKE_CUDA_EXPORT void fake_engines_allow_pcie(int on) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.allow_pcie = on != 0;
}

}  // extern "C"
