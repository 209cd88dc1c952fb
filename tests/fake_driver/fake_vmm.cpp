// The extras of the VMM fake driver (fake_cuda_vmm): virtual memory
// management backed by host memory, so that the host suite can run
// libcumem's virtual-memory layer for real. A reservation is a span of one
// arena of PROT_NONE address space; a physical chunk is a memfd (so a chunk exported
// as a POSIX fd maps the same pages in another process); cuMemMap maps the
// memfd over the reservation; cuMemSetAccess sets the protection (read and
// write once any location has it); cuMemUnmap puts PROT_NONE address space
// back. Every rule the real driver enforces that libcumem could break is
// checked (CUDA_ERROR_INVALID_VALUE): sizes and offsets at the granularity,
// a mapping inside one reservation and over nothing else, unmapping and
// freeing whole ranges only, no address free under a mapping, no use of a
// released handle.
//
// Streams and events: work is queued by the test (fake_vmm_stream_busy) and
// completes when it says so (fake_vmm_stream_finish) or at a
// synchronisation; an event records the work queued so far on its stream.
// Memset and memcpy run at once on the host (the fake's memory is host
// memory). The control API is in fake_vmm.hpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fake_cuda.hpp"
#include "fake_vmm.hpp"

namespace {

constexpr char kChunkName[] = "fake-vmm-chunk";

struct Chunk {
  int fd = -1;
  size_t size = 0;
  CUmemAllocationProp prop{};
  bool released = false;  // cuMemRelease called; freed when unmapped everywhere
  int mappings = 0;
};

struct Mapping {
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
  int access[fake::kMaxDevices] = {};  // CUmemAccess_flags per device
  int host_access = 0;
};

struct StreamState {
  uint64_t submitted = 0, completed = 0;
};

struct EventState {
  CUstream stream = nullptr;
  uint64_t target = 0;
  bool recorded = false;
};

// $FAKE_VMM_ALLOW_FABRIC=1: FABRIC is accepted from the start (as with an
// IMEX channel), for answers decided once per process (the fabric probe).
bool fabric_from_environment() {
  const char* env = std::getenv("FAKE_VMM_ALLOW_FABRIC");
  return env && std::strcmp(env, "1") == 0;
}

struct State {
  std::mutex mutex;
  std::map<CUmemGenericAllocationHandle, Chunk> chunks;
  CUmemGenericAllocationHandle next_handle = 1;
  std::map<uintptr_t, size_t> reservations;  // base -> size
  std::map<uintptr_t, Mapping> mappings;     // base -> mapping
  FakeVmmCounts counts{};
  std::string log;
  const char* fail_name = nullptr;  // nullptr: any VMM call
  std::string fail_name_storage;
  unsigned fail_countdown = 0;      // 0: disarmed
  CUresult fail_result = CUDA_SUCCESS;
  // A second failure armed apart (fake_vmm_fail_also), for a rollback
  // whose own cleanup fails.
  std::string also_name;
  unsigned also_countdown = 0;  // 0: disarmed
  CUresult also_result = CUDA_SUCCESS;
  size_t granularity_minimum = size_t{64} << 10;
  size_t granularity_recommended = size_t{2} << 20;
  bool refuse_hints = false;
  bool allow_fabric = fabric_from_environment();
  uint64_t memory = uint64_t{80} << 30;
  std::map<CUstream, StreamState> streams;
  std::map<CUevent, EventState*> events;
};

State& state() {
  static State* s = new State;  // never destroyed: libcumem may call at exit
  return *s;
}

// Every VMM entry point starts here, under the state's lock: counts the
// call, logs it, and fires an armed failure.
bool injected(State& s, const char* name, CUresult& result) {
  ++s.counts.vmm_calls;
  s.log += name;
  s.log += ' ';
  if (s.also_countdown != 0 && s.also_name == name && --s.also_countdown == 0) {
    result = s.also_result;
    s.log += "(failed) ";
    return true;
  }
  if (s.fail_countdown == 0) return false;
  if (s.fail_name && std::strcmp(s.fail_name, name) != 0) return false;
  if (--s.fail_countdown != 0) return false;
  result = s.fail_result;
  s.log += "(failed) ";
  return true;
}
#define FAKE_VMM_ENTER(name)                                \
  State& s = state();                                       \
  std::lock_guard<std::mutex> lock(s.mutex);                \
  {                                                         \
    CUresult injected_result = CUDA_SUCCESS;                \
    if (injected(s, name, injected_result)) return injected_result; \
  }

bool valid_prop(const CUmemAllocationProp* prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return false;
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return fake::valid_device(prop->location.id);
    case CU_MEM_LOCATION_TYPE_HOST: return true;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return prop->location.id >= 0;
    default: return false;
  }
}

uint64_t live_bytes(const State& s) {
  uint64_t n = 0;
  for (const auto& [h, c] : s.chunks) n += c.size;
  return n;
}

// The reservation holding [p, p + n), or end().
std::map<uintptr_t, size_t>::const_iterator reservation_of(const State& s, uintptr_t p, size_t n) {
  auto it = s.reservations.upper_bound(p);
  if (it == s.reservations.begin()) return s.reservations.end();
  --it;
  if (p + n <= it->first + it->second && p >= it->first) return it;
  return s.reservations.end();
}

bool overlaps_mapping(const State& s, uintptr_t p, size_t n) {
  auto it = s.mappings.lower_bound(p + n);
  if (it == s.mappings.begin()) return false;
  --it;
  return it->first + it->second.size > p;
}

// The mappings that exactly tile [p, p + n), in order; empty when they do not.
std::vector<std::map<uintptr_t, Mapping>::iterator> tiling(State& s, uintptr_t p, size_t n) {
  std::vector<std::map<uintptr_t, Mapping>::iterator> out;
  uintptr_t at = p;
  auto it = s.mappings.find(p);
  while (it != s.mappings.end() && at < p + n) {
    if (it->first != at) return {};
    at += it->second.size;
    out.push_back(it);
    ++it;
  }
  if (at != p + n) return {};
  return out;
}

void drop_chunk_if_unused(State& s, CUmemGenericAllocationHandle handle) {
  auto it = s.chunks.find(handle);
  if (it == s.chunks.end() || !it->second.released || it->second.mappings != 0) return;
  ::close(it->second.fd);
  s.chunks.erase(it);
}

int protection_of(const Mapping& m) {
  int strongest = m.host_access;
  for (int a : m.access) strongest |= a;
  if (strongest & CU_MEM_ACCESS_FLAGS_PROT_READWRITE & ~CU_MEM_ACCESS_FLAGS_PROT_READ)
    return PROT_READ | PROT_WRITE;
  if (strongest & CU_MEM_ACCESS_FLAGS_PROT_READ) return PROT_READ;
  return PROT_NONE;
}

// ---- Virtual memory ----

CUresult CUDAAPI fake_cuMemGetAllocationGranularity(size_t* granularity,
                                                    const CUmemAllocationProp* prop,
                                                    CUmemAllocationGranularity_flags option) {
  FAKE_VMM_ENTER("cuMemGetAllocationGranularity");
  if (!granularity || !valid_prop(prop)) return CUDA_ERROR_INVALID_VALUE;
  *granularity = option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED ? s.granularity_recommended
                                                                : s.granularity_minimum;
  return CUDA_SUCCESS;
}

// Reservations are carved from one arena of address space mapped PROT_NONE
// at first use, lowest address first, each leaving a gap after the one
// before it, so that the addresses right after a reservation are usually
// free: growing in place (a reservation at the end's address) can then be
// tested, as the real driver's allocator allows it.
// The arena is the largest of 1 TiB, 512 GiB, ... 16 GiB that the process
// can map: a sanitizer's layout (ThreadSanitizer's, in a debug build) may
// have no free TiB in one piece.
constexpr size_t kGap = size_t{256} << 20;

struct Arena {
  uintptr_t base = 0;  // 0: none could be mapped
  size_t size = 0;
};
const Arena& arena() {
  static const Arena a = [] {
    for (size_t size = size_t{1} << 40; size >= size_t{16} << 30; size /= 2) {
      void* p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) return Arena{reinterpret_cast<uintptr_t>(p), size};
    }
    return Arena{};
  }();
  return a;
}
bool span_is_free(const State& s, uintptr_t p, size_t n) {
  const Arena& a = arena();
  if (p < a.base || n > a.size || p - a.base > a.size - n) return false;
  auto it = s.reservations.lower_bound(p + n);
  if (it == s.reservations.begin()) return true;
  --it;
  return it->first + it->second <= p;
}

uintptr_t align_up(uintptr_t v, size_t alignment) {
  return (v + alignment - 1) & ~(uintptr_t(alignment) - 1);
}

// The lowest aligned address with `kGap` free after the reservation before.
uintptr_t place(const State& s, size_t size, size_t alignment) {
  const Arena& a = arena();
  if (!a.base || size > a.size) return 0;
  uintptr_t candidate = align_up(a.base, alignment);
  for (const auto& [start, length] : s.reservations) {
    if (candidate + size + kGap <= start) break;
    const uintptr_t after = align_up(start + length + kGap, alignment);
    if (after > candidate) candidate = after;
  }
  return span_is_free(s, candidate, size) ? candidate : 0;
}

// Gives the pages of [p, p + n) back, leaving PROT_NONE address space.
void discard(uintptr_t p, size_t n) {
  mmap(reinterpret_cast<void*>(p), n, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

CUresult CUDAAPI fake_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                          CUdeviceptr addr, unsigned long long flags) {
  FAKE_VMM_ENTER("cuMemAddressReserve");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (!ptr || size == 0 || size % page != 0 || flags != 0 || addr % page != 0 ||
      (alignment & (alignment - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (alignment < s.granularity_minimum) alignment = s.granularity_minimum;
  uintptr_t got = 0;
  const uintptr_t hint = static_cast<uintptr_t>(addr);
  if (hint != 0 && !s.refuse_hints && hint % alignment == 0 && span_is_free(s, hint, size))
    got = hint;
  if (!got) got = place(s, size, alignment);
  if (!got) return CUDA_ERROR_OUT_OF_MEMORY;
  s.reservations[got] = size;
  ++s.counts.reserves;
  *ptr = static_cast<CUdeviceptr>(got);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKE_VMM_ENTER("cuMemAddressFree");
  auto it = s.reservations.find(static_cast<uintptr_t>(ptr));
  if (it == s.reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  if (overlaps_mapping(s, static_cast<uintptr_t>(ptr), size)) return CUDA_ERROR_INVALID_VALUE;
  discard(static_cast<uintptr_t>(ptr), size);
  s.reservations.erase(it);
  ++s.counts.frees;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                  const CUmemAllocationProp* prop, unsigned long long flags) {
  FAKE_VMM_ENTER("cuMemCreate");
  if (!handle || !valid_prop(prop) || flags != 0 || size == 0 || size % s.granularity_minimum != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if ((prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC) && !s.allow_fabric)
    return CUDA_ERROR_NOT_PERMITTED;  // no IMEX channel
  if (live_bytes(s) + size > s.memory) return CUDA_ERROR_OUT_OF_MEMORY;
  // The name carries what an importer must learn: location and handle types.
  char name[96];
  std::snprintf(name, sizeof name, "%s-L%d-I%d-H%d", kChunkName,
                static_cast<int>(prop->location.type), prop->location.id,
                static_cast<int>(prop->requestedHandleTypes));
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    ::close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Chunk c;
  c.fd = fd;
  c.size = size;
  c.prop = *prop;
  const CUmemGenericAllocationHandle h = s.next_handle++;
  s.chunks[h] = c;
  ++s.counts.creates;
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_VMM_ENTER("cuMemRelease");
  auto it = s.chunks.find(handle);
  if (it == s.chunks.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  it->second.released = true;
  ++s.counts.releases;
  drop_chunk_if_unused(s, handle);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                               CUmemGenericAllocationHandle handle, unsigned long long flags) {
  FAKE_VMM_ENTER("cuMemMap");
  auto c = s.chunks.find(handle);
  if (c == s.chunks.end() || c->second.released || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  if (size == 0 || size % s.granularity_minimum != 0 || offset % s.granularity_minimum != 0 ||
      offset + size > c->second.size || p % s.granularity_minimum != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (reservation_of(s, p, size) == s.reservations.end()) return CUDA_ERROR_INVALID_VALUE;
  if (overlaps_mapping(s, p, size)) return CUDA_ERROR_INVALID_VALUE;
  void* m = mmap(reinterpret_cast<void*>(p), size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                 c->second.fd, static_cast<off_t>(offset));
  if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  Mapping mapping;
  mapping.size = size;
  mapping.handle = handle;
  s.mappings[p] = mapping;
  ++c->second.mappings;
  ++s.counts.maps;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKE_VMM_ENTER("cuMemUnmap");
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  const auto tiles = tiling(s, p, size);
  if (tiles.empty()) return CUDA_ERROR_INVALID_VALUE;
  discard(p, size);
  for (auto it : tiles) {
    const CUmemGenericAllocationHandle h = it->second.handle;
    s.mappings.erase(it);
    --s.chunks[h].mappings;
    drop_chunk_if_unused(s, h);
    ++s.counts.unmaps;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                     size_t count) {
  FAKE_VMM_ENTER("cuMemSetAccess");
  if (!desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto tiles = tiling(s, static_cast<uintptr_t>(ptr), size);
  if (tiles.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemAccessDesc& d = desc[i];
    if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
    if (d.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
      if (!fake::valid_device(d.location.id)) return CUDA_ERROR_INVALID_DEVICE;
    } else if (d.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
      // As the driver: the host's access only to host-located memory.
      for (auto it : tiles) {
        const auto type = s.chunks[it->second.handle].prop.location.type;
        if (type != CU_MEM_LOCATION_TYPE_HOST_NUMA && type != CU_MEM_LOCATION_TYPE_HOST)
          return CUDA_ERROR_INVALID_VALUE;
      }
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (auto it : tiles) {
    Mapping& m = it->second;
    for (size_t i = 0; i < count; ++i) {
      if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        m.access[desc[i].location.id] = desc[i].flags;
      else
        m.host_access = desc[i].flags;
    }
    mprotect(reinterpret_cast<void*>(it->first), m.size, protection_of(m));
  }
  ++s.counts.set_access;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location,
                                     CUdeviceptr ptr) {
  FAKE_VMM_ENTER("cuMemGetAccess");
  if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  auto it = s.mappings.upper_bound(p);
  if (it == s.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (p >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
  if (location->type == CU_MEM_LOCATION_TYPE_DEVICE && fake::valid_device(location->id))
    *flags = static_cast<unsigned long long>(it->second.access[location->id]);
  else if (location->type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
    *flags = static_cast<unsigned long long>(it->second.host_access);
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemExportToShareableHandle(void* shareable,
                                                   CUmemGenericAllocationHandle handle,
                                                   CUmemAllocationHandleType type,
                                                   unsigned long long flags) {
  FAKE_VMM_ENTER("cuMemExportToShareableHandle");
  auto it = s.chunks.find(handle);
  if (!shareable || it == s.chunks.end() || it->second.released || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
    if (!s.allow_fabric) return CUDA_ERROR_NOT_PERMITTED;  // no IMEX channel
    if (!(it->second.prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC))
      return CUDA_ERROR_INVALID_VALUE;
    auto* fabric = static_cast<CUmemFabricHandle*>(shareable);
    std::memset(fabric->data, 0, sizeof fabric->data);
    std::memcpy(fabric->data, &handle, sizeof handle);
    return CUDA_SUCCESS;
  }
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      !(it->second.prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;
  const int fd = fcntl(it->second.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle,
                                                     void* os_handle,
                                                     CUmemAllocationHandleType type) {
  FAKE_VMM_ENTER("cuMemImportFromShareableHandle");
  if (!handle || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(os_handle));
  // Only a chunk's memfd (of this process or another) is a chunk.
  char link[64], target[256] = {};
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  const std::string prefix = std::string("/memfd:") + kChunkName;
  if (n <= 0 || std::strncmp(target, prefix.c_str(), prefix.size()) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  int location_type = 0, location_id = 0, handle_types = 0;
  if (std::sscanf(target + prefix.size(), "-L%d-I%d-H%d", &location_type, &location_id,
                  &handle_types) != 3)
    return CUDA_ERROR_INVALID_VALUE;
  Chunk c;
  c.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (c.fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  c.size = static_cast<size_t>(st.st_size);
  c.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  c.prop.location.type = static_cast<CUmemLocationType>(location_type);
  c.prop.location.id = location_id;
  // As the real driver (580.159): an imported chunk reports no handle types.
  (void)handle_types;
  c.prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  const CUmemGenericAllocationHandle h = s.next_handle++;
  s.chunks[h] = c;
  ++s.counts.creates;
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                             CUmemGenericAllocationHandle handle) {
  FAKE_VMM_ENTER("cuMemGetAllocationPropertiesFromHandle");
  auto it = s.chunks.find(handle);
  if (!prop || it == s.chunks.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  *prop = it->second.prop;
  return CUDA_SUCCESS;
}

// ---- Memory info and peers ----

CUresult CUDAAPI fake_cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const uint64_t used = live_bytes(s);
  if (free_bytes) *free_bytes = static_cast<size_t>(s.memory > used ? s.memory - used : 0);
  if (total_bytes) *total_bytes = static_cast<size_t>(s.memory);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  if (!bytes || !fake::valid_device(device)) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *bytes = static_cast<size_t>(s.memory);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  if (!can || !fake::valid_device(device) || !fake::valid_device(peer))
    return CUDA_ERROR_INVALID_DEVICE;
  *can = device != peer ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  if (!uuid || !fake::valid_device(device)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(uuid->bytes, 0, sizeof uuid->bytes);
  uuid->bytes[0] = static_cast<char>(0xFA);
  uuid->bytes[1] = static_cast<char>(0xCE);
  uuid->bytes[15] = static_cast<char>(device + 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxRelease(CUdevice device) {
  return fake::valid_device(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// ---- Streams and events ----

CUresult CUDAAPI fake_cuStreamCreateWithPriority(CUstream* stream, unsigned int, int) {
  if (!stream || fake::current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUstream made = reinterpret_cast<CUstream>(new int(0));
  s.streams[made] = StreamState{};
  *stream = made;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamDestroy(CUstream stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.streams.find(stream);
  if (it == s.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  s.streams.erase(it);
  delete reinterpret_cast<int*>(stream);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamSynchronize(CUstream stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  StreamState& st = s.streams[stream];
  st.completed = st.submitted;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamQuery(CUstream stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const StreamState& st = s.streams[stream];
  return st.completed >= st.submitted ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI fake_cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }

CUresult CUDAAPI fake_cuCtxSynchronize() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& [stream, st] : s.streams) st.completed = st.submitted;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventCreate(CUevent* event, unsigned int) {
  if (!event || fake::current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  EventState* e = new EventState;
  const CUevent made = reinterpret_cast<CUevent>(e);
  s.events[made] = e;
  *event = made;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventDestroy(CUevent event) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.events.find(event);
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  delete it->second;
  s.events.erase(it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventRecord(CUevent event, CUstream stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.events.find(event);
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  it->second->stream = stream;
  it->second->target = s.streams[stream].submitted;
  it->second->recorded = true;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventQuery(CUevent event) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.events.find(event);
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  const EventState& e = *it->second;
  if (!e.recorded) return CUDA_SUCCESS;
  return s.streams[e.stream].completed >= e.target ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI fake_cuEventSynchronize(CUevent event) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.events.find(event);
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  const EventState& e = *it->second;
  if (!e.recorded) return CUDA_SUCCESS;
  StreamState& st = s.streams[e.stream];
  if (st.completed < e.target) st.completed = e.target;
  return CUDA_SUCCESS;
}

// ---- Memset and memcpy, at once on the host ----

CUresult CUDAAPI fake_cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t n, CUstream) {
  std::memset(reinterpret_cast<void*>(p), value, n);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemsetD32Async(CUdeviceptr p, unsigned int value, size_t n, CUstream) {
  auto* words = reinterpret_cast<unsigned int*>(p);
  for (size_t i = 0; i < n; ++i) words[i] = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream) {
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuPointerGetAttributes(unsigned int, CUpointer_attribute*, void**,
                                             CUdeviceptr) {
  return CUDA_ERROR_INVALID_VALUE;  // "not a pointer the driver knows": plain host memory
}

struct Entry {
  const char* name;
  void* function;
};

#define FAKE_ENTRY(name, version) \
  Entry { #name, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&fake_##name)) }
const Entry extras[] = {
    FAKE_ENTRY(cuMemGetAllocationGranularity, 10020),
    FAKE_ENTRY(cuMemAddressReserve, 10020),
    FAKE_ENTRY(cuMemAddressFree, 10020),
    FAKE_ENTRY(cuMemCreate, 10020),
    FAKE_ENTRY(cuMemRelease, 10020),
    FAKE_ENTRY(cuMemMap, 10020),
    FAKE_ENTRY(cuMemUnmap, 10020),
    FAKE_ENTRY(cuMemSetAccess, 10020),
    FAKE_ENTRY(cuMemGetAccess, 10020),
    FAKE_ENTRY(cuMemExportToShareableHandle, 10020),
    FAKE_ENTRY(cuMemImportFromShareableHandle, 10020),
    FAKE_ENTRY(cuMemGetAllocationPropertiesFromHandle, 10020),
    FAKE_ENTRY(cuMemGetInfo, 3020),
    FAKE_ENTRY(cuDeviceTotalMem, 3020),
    FAKE_ENTRY(cuDeviceCanAccessPeer, 4000),
    FAKE_ENTRY(cuDeviceGetUuid, 11040),
    FAKE_ENTRY(cuDevicePrimaryCtxRelease, 11000),
    FAKE_ENTRY(cuStreamCreateWithPriority, 5050),
    FAKE_ENTRY(cuStreamDestroy, 4000),
    FAKE_ENTRY(cuStreamSynchronize, 2000),
    FAKE_ENTRY(cuStreamQuery, 2000),
    FAKE_ENTRY(cuStreamIsCapturing, 10000),
    FAKE_ENTRY(cuStreamWaitEvent, 3020),
    FAKE_ENTRY(cuCtxSynchronize, 2000),
    FAKE_ENTRY(cuEventCreate, 2000),
    FAKE_ENTRY(cuEventDestroy, 4000),
    FAKE_ENTRY(cuEventRecord, 2000),
    FAKE_ENTRY(cuEventQuery, 2000),
    FAKE_ENTRY(cuEventSynchronize, 2000),
    FAKE_ENTRY(cuMemsetD8Async, 3020),
    FAKE_ENTRY(cuMemsetD32Async, 3020),
    FAKE_ENTRY(cuMemcpyAsync, 4000),
    FAKE_ENTRY(cuPointerGetAttributes, 7000),
};
#undef FAKE_ENTRY

// The mapping holding `address` (s.mutex held), or null.
const Mapping* mapping_containing(State& s, const void* address) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(address);
  auto it = s.mappings.upper_bound(p);
  if (it == s.mappings.begin()) return nullptr;
  --it;
  return p < it->first + it->second.size ? &it->second : nullptr;
}

}  // namespace

namespace fake {

void* extra_entry(const char* name) noexcept {
  if (void* engine = engine_entry(name)) return engine;
  for (const Entry& e : extras)
    if (std::strcmp(e.name, name) == 0) return e.function;
  return nullptr;
}

bool vmm_mapping_at(uintptr_t p, VmmSpan* out) noexcept {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.mappings.upper_bound(p);
  if (it == s.mappings.begin()) return false;
  --it;
  if (p >= it->first + it->second.size) return false;
  const Chunk& c = s.chunks[it->second.handle];
  out->base = it->first;
  out->size = it->second.size;
  out->location_type = static_cast<int>(c.prop.location.type);
  out->location_id = c.prop.location.id;
  out->handle_types = static_cast<int>(c.prop.requestedHandleTypes);
  return true;
}

bool vmm_range_mapped(uintptr_t p, size_t n, size_t* mappings, VmmSpan* first) noexcept {
  if (!vmm_mapping_at(p, first)) return false;
  size_t count = 0;
  uintptr_t at = first->base;
  while (at < p + n) {
    VmmSpan next;
    if (!vmm_mapping_at(at, &next) || next.base != at) return false;
    if (next.location_type != first->location_type || next.location_id != first->location_id ||
        next.handle_types != first->handle_types)
      return false;
    at += next.size;
    ++count;
  }
  *mappings = count;
  return true;
}

}  // namespace fake

extern "C" {

FAKE_CUDA_EXPORT void fake_vmm_counts(FakeVmmCounts* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeVmmCounts c = s.counts;
  c.live_reservations = s.reservations.size();
  c.live_mappings = s.mappings.size();
  c.live_handles = 0;
  for (const auto& [h, chunk] : s.chunks)
    if (!chunk.released) ++c.live_handles;
  c.live_bytes = live_bytes(s);
  c.live_events = s.events.size();
  *out = c;
}

FAKE_CUDA_EXPORT const char* fake_vmm_log() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  static thread_local std::string copy;
  copy = s.log;
  return copy.c_str();
}

FAKE_CUDA_EXPORT void fake_vmm_reset() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.counts = FakeVmmCounts{};
  s.log.clear();
  s.fail_countdown = 0;
  s.fail_name = nullptr;
  s.also_countdown = 0;
  s.granularity_minimum = size_t{64} << 10;
  s.granularity_recommended = size_t{2} << 20;
  s.refuse_hints = false;
  s.allow_fabric = fabric_from_environment();
  s.memory = uint64_t{80} << 30;
}

FAKE_CUDA_EXPORT void fake_vmm_fail(const char* name, unsigned nth, CUresult result) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.fail_name_storage = name ? name : "";
  s.fail_name = name ? s.fail_name_storage.c_str() : nullptr;
  s.fail_countdown = nth;
  s.fail_result = result;
}

FAKE_CUDA_EXPORT void fake_vmm_fail_also(const char* name, unsigned nth, CUresult result) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.also_name = name ? name : "";
  s.also_countdown = name ? nth : 0;
  s.also_result = result;
}

FAKE_CUDA_EXPORT void fake_vmm_set_granularity(size_t minimum, size_t recommended) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.granularity_minimum = minimum;
  s.granularity_recommended = recommended;
}

FAKE_CUDA_EXPORT void fake_vmm_refuse_hints(int on) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.refuse_hints = on != 0;
}

FAKE_CUDA_EXPORT void fake_vmm_allow_fabric(int on) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.allow_fabric = on != 0;
}

FAKE_CUDA_EXPORT void fake_vmm_set_memory(uint64_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.memory = bytes;
}

FAKE_CUDA_EXPORT void fake_vmm_stream_busy(CUstream stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.streams[stream].submitted;
}

FAKE_CUDA_EXPORT void fake_vmm_stream_finish(CUstream stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  StreamState& st = s.streams[stream];
  st.completed = st.submitted;
}

FAKE_CUDA_EXPORT void fake_vmm_stream_finish_behind(CUstream stream, uint64_t behind) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  StreamState& st = s.streams[stream];
  if (st.submitted > behind && st.submitted - behind > st.completed)
    st.completed = st.submitted - behind;
}

FAKE_CUDA_EXPORT int fake_vmm_access(const void* address, int device) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Mapping* m = mapping_containing(s, address);
  if (!m) return -1;
  if (device < 0) return m->host_access;
  return fake::valid_device(device) ? m->access[device] : -1;
}

// Unmaps the mapping that holds `address` (cuMemUnmap of all of it, behind
// the library's back); CUDA_ERROR_INVALID_VALUE when nothing is mapped there.
FAKE_CUDA_EXPORT CUresult fake_vmm_unmap_at(const void* address) {
  CUdeviceptr base = 0;
  size_t size = 0;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const uintptr_t p = reinterpret_cast<uintptr_t>(address);
    auto it = s.mappings.upper_bound(p);
    if (it == s.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
    --it;
    if (p >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
    base = static_cast<CUdeviceptr>(it->first);
    size = it->second.size;
  }
  return fake_cuMemUnmap(base, size);
}

// What the chunk mapped at `address` was created with: its handle types and
// whether it is GPUDirect RDMA capable; 0 when nothing is mapped there.
FAKE_CUDA_EXPORT int fake_vmm_chunk_prop(const void* address, int* handle_types,
                                         int* gpu_direct_rdma) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Mapping* m = mapping_containing(s, address);
  if (!m) return 0;
  const CUmemAllocationProp& prop = s.chunks[m->handle].prop;
  *handle_types = static_cast<int>(prop.requestedHandleTypes);
  *gpu_direct_rdma = prop.allocFlags.gpuDirectRDMACapable;
  return 1;
}

}  // extern "C"
