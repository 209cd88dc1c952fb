#include "resource.hpp"

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core {

CUmemLocation to_cu(Location location) {
  CUmemLocation l{};
  l.type = static_cast<CUmemLocationType>(location.type);
  l.id = location.id;
  return l;
}

std::string describe(Location location) {
  switch (location.type) {
    case LocationType::none: return "no location";
    case LocationType::device: return "device " + std::to_string(location.id);
    case LocationType::host: return "the host";
    case LocationType::host_numa: return "host NUMA node " + std::to_string(location.id);
    case LocationType::host_numa_current: return "the calling thread's host NUMA node";
  }
  return "location type " + std::to_string(static_cast<int>(location.type));
}

void* Resource::allocate(size_t size, const Stream* stream) {
  if (size == 0) return nullptr;
  void* ptr = nullptr;
  try {
    ptr = do_allocate(size, stream);
  } catch (const Error& e) {
    if (e.status() != Status::out_of_memory) throw;
    fail(Status::out_of_memory,
         "out of memory: cannot allocate " + describe_bytes(size) + " from " + describe() +
             " (this resource has " + describe_bytes(bytes_in_use_.load()) + " in use in " +
             std::to_string(live_allocations_.load()) + " allocations" + usage_details() +
             "); " + e.what());
  }
  count_allocation(size);
  return ptr;
}

void Resource::deallocate(void* ptr, size_t size, const Stream* stream) {
  if (!ptr) {
    if (size != 0)
      fail(Status::invalid_argument, "cannot free a NULL pointer of " + describe_bytes(size) +
                                         " (only size 0 goes with NULL)");
    return;
  }
  do_deallocate(ptr, size, stream);
  count_deallocation(size);
}

void Resource::count_allocation(size_t size) noexcept {
  const uint64_t now = bytes_in_use_.fetch_add(size, std::memory_order_relaxed) + size;
  uint64_t peak = peak_bytes_in_use_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_bytes_in_use_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  live_allocations_.fetch_add(1, std::memory_order_relaxed);
  total_allocations_.fetch_add(1, std::memory_order_relaxed);
}

void Resource::count_deallocation(size_t size) noexcept {
  bytes_in_use_.fetch_sub(size, std::memory_order_relaxed);
  live_allocations_.fetch_sub(1, std::memory_order_relaxed);
}

ResourceStatistics Resource::statistics() const noexcept {
  ResourceStatistics s;
  s.bytes_in_use = bytes_in_use_.load(std::memory_order_relaxed);
  s.peak_bytes_in_use = peak_bytes_in_use_.load(std::memory_order_relaxed);
  s.live_allocations = live_allocations_.load(std::memory_order_relaxed);
  s.total_allocations = total_allocations_.load(std::memory_order_relaxed);
  return s;
}

void Resource::reset_peak() noexcept {
  peak_bytes_in_use_.store(bytes_in_use_.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
}

CUmemoryPool Resource::require_pool(const char* operation) const {
  CUmemoryPool p = pool();
  if (!p)
    fail(Status::not_supported,
         std::string(operation) + " needs a pool-backed resource; " + describe() + " is not one");
  return p;
}

namespace {

uint64_t get_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, const char* name) {
  // Flags are ints, sizes and thresholds are cuuint64_t.
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
      int value = 0;
      CUMEM_CU(cuMemPoolGetAttribute, (pool, attribute, &value),
               std::string("reading the pool attribute ") + name);
      return static_cast<uint64_t>(value);
    }
    default: {
      cuuint64_t value = 0;
      CUMEM_CU(cuMemPoolGetAttribute, (pool, attribute, &value),
               std::string("reading the pool attribute ") + name);
      return value;
    }
  }
}

}  // namespace

PoolAttributes Resource::pool_attributes() const {
  CUmemoryPool p = require_pool("reading pool attributes");
  ScopedContext scope(*device_);
  PoolAttributes a;
  a.reuse_follow_event_dependencies =
      get_attribute(p, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, "reuse_follow_event_dependencies") != 0;
  a.reuse_allow_opportunistic =
      get_attribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, "reuse_allow_opportunistic") != 0;
  a.reuse_allow_internal_dependencies =
      get_attribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, "reuse_allow_internal_dependencies") != 0;
  a.release_threshold = get_attribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, "release_threshold");
  a.reserved_current = get_attribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, "reserved_mem_current");
  a.reserved_high = get_attribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, "reserved_mem_high");
  a.used_current = get_attribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, "used_mem_current");
  a.used_high = get_attribute(p, CU_MEMPOOL_ATTR_USED_MEM_HIGH, "used_mem_high");
  return a;
}

void Resource::set_pool_attributes(const PoolAttributes& a) {
  CUmemoryPool p = require_pool("setting pool attributes");
  ScopedContext scope(*device_);
  const struct {
    CUmemPool_attribute attribute;
    bool value;
    const char* name;
  } flags[] = {
      {CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, a.reuse_follow_event_dependencies,
       "reuse_follow_event_dependencies"},
      {CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, a.reuse_allow_opportunistic,
       "reuse_allow_opportunistic"},
      {CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, a.reuse_allow_internal_dependencies,
       "reuse_allow_internal_dependencies"},
  };
  for (const auto& f : flags) {
    int value = f.value ? 1 : 0;
    CUMEM_CU(cuMemPoolSetAttribute, (p, f.attribute, &value),
             std::string("setting the pool attribute ") + f.name);
  }
  cuuint64_t threshold = a.release_threshold;
  CUMEM_CU(cuMemPoolSetAttribute, (p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
           "setting the pool's release threshold");
}

void Resource::reset_pool_highs() {
  CUmemoryPool p = require_pool("resetting pool high-water marks");
  ScopedContext scope(*device_);
  cuuint64_t zero = 0;
  CUMEM_CU(cuMemPoolSetAttribute, (p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero),
           "resetting the pool's reserved_mem_high");
  CUMEM_CU(cuMemPoolSetAttribute, (p, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero),
           "resetting the pool's used_mem_high");
}

void Resource::trim_pool(uint64_t min_bytes_to_keep) {
  CUmemoryPool p = require_pool("trimming a pool");
  ScopedContext scope(*device_);
  CUMEM_CU(cuMemPoolTrimTo, (p, static_cast<size_t>(min_bytes_to_keep)),
           "trimming " + describe() + " to " + describe_bytes(min_bytes_to_keep));
}

void Resource::set_pool_access(const Device& peer, bool read_write) {
  CUmemoryPool p = require_pool("setting pool access");
  const bool device_pool = properties_.memory_kind == MemoryKind::device;
  if (device_pool && &peer == device_.get()) {
    if (read_write) return;  // the owner always has access
    fail(Status::invalid_argument,
         "cannot revoke " + peer.describe() + "'s access to its own " + describe());
  }
  if (device_pool && read_write && !peer.can_access_peer(*device_))
    fail(Status::not_supported, peer.describe() + " cannot access the memory of " +
                                    device_->describe() + " (no peer path)");
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = peer.ordinal();
  desc.flags = read_write ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  ScopedContext scope(*device_);
  CUMEM_CU(cuMemPoolSetAccess, (p, &desc, 1),
           std::string(read_write ? "granting " : "revoking ") + peer.describe() +
               " access to " + describe());
}

bool Resource::pool_access(const Device& peer) const {
  CUmemoryPool p = require_pool("reading pool access");
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = peer.ordinal();
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  ScopedContext scope(*device_);
  CUMEM_CU(cuMemPoolGetAccess, (&flags, p, &location),
           "reading " + peer.describe() + "'s access to " + describe());
  return flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

}  // namespace cumem::core
