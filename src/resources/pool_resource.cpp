#include "pool_resource.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../log.hpp"
#include "../snapshot/history.hpp"
#include "../snapshot/snapshot.hpp"
#include "../unmap_events.hpp"

namespace cumem::core {

PoolResource::PoolResource(Ref<Device> device, const ResourceProperties& properties,
                           CUmemoryPool pool, bool owned, std::string name, uint64_t max_size,
                           const std::array<uint8_t, 16>& pool_id, const IpcKey& pool_key)
    : Resource(std::move(device), properties),
      pool_(pool),
      owned_(owned),
      name_(std::move(name)),
      budget_(max_size ? std::make_unique<ByteBudget>(max_size) : nullptr),
      pool_id_(pool_id),
      pool_key_(pool_key) {
  if (properties.ipc_enabled && pool_id_ == std::array<uint8_t, 16>{}) {
    pool_id_ = random_pool_id();
    pool_key_ = random_pool_key();
  }
}

Ref<AllocationHandle> PoolResource::get_allocation_handle() const {
  if (!properties().ipc_enabled) return IpcShareable::get_allocation_handle();
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;
  int fd = -1;
  CUMEM_CU(cuMemPoolExportToShareableHandle,
           (&fd, pool_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           "exporting " + describe() + " as a file descriptor");
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  exported_.store(true, std::memory_order_release);
  IpcDescriptor d;
  d.type = IpcType::pool;
  d.memory_kind = properties().memory_kind;
  d.device_uuid = device_->uuid();
  d.pool_id = pool_id_;
  d.pool_key = pool_key_;
  d.exporter_pid = static_cast<uint32_t>(getpid());
  return AllocationHandle::take(fd, d);
}

IpcDescriptor PoolResource::get_ipc_descriptor(void* ptr, size_t size) const {
  if (!properties().ipc_enabled) return IpcShareable::get_ipc_descriptor(ptr, size);
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;
  // The driver exports pointers only of a pool that was itself exported
  // (seen on CUDA 13.0): export it once first, whatever order the caller
  // uses.
  if (!exported_.load(std::memory_order_acquire)) get_allocation_handle();
  CUmemPoolPtrExportData data{};
  CUMEM_CU(cuMemPoolExportPointer, (&data, reinterpret_cast<CUdeviceptr>(ptr)),
           "exporting a buffer of " + describe_bytes(size) + " from " + describe());
  IpcDescriptor d;
  d.type = IpcType::pool_buffer;
  d.memory_kind = properties().memory_kind;
  d.size = size;
  d.device_uuid = device_->uuid();
  d.pool_id = pool_id_;
  static_assert(sizeof data.reserved == sizeof d.export_data, "export data is 64 bytes");
  std::memcpy(d.export_data.data(), data.reserved, sizeof data.reserved);
  d.exporter_pid = static_cast<uint32_t>(getpid());
  sign(d, pool_key_);
  return d;
}

// Tells the unmap subscribers that memory of the pool may go: the driver
// does not say which, so the range is left 0.
void PoolResource::notify_pool(int reason) const noexcept {
  if (!unmap::any()) return;
  unmap::Event e;
  e.reason = static_cast<unmap::Reason>(reason);
  e.resource_id = id();
  e.device_id = properties().device_id;
  unmap::notify(e);
}

PoolResource::~PoolResource() {
  if (!owned_) return;
  notify_pool(static_cast<int>(unmap::Reason::pool_destroy));
  // The driver keeps the pool until its outstanding allocations are freed.
  try {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;
    CUMEM_CU_CLEANUP(cuMemPoolDestroy, (pool_), "destroying a memory pool");
  } catch (...) {
    log::swallowed("destroying a memory pool");
  }
}

void* PoolResource::do_allocate(size_t size, const Stream* stream) {
  if (budget_ && !budget_->try_take(size))
    fail(Status::out_of_memory, "the pool's max_size of " + describe_bytes(budget_->limit()) +
                                    " allows " +
                                    describe_bytes(budget_->limit() - budget_->used()) +
                                    " more, and " + describe_bytes(size) + " were asked for");
  try {
    ScopedContext scope(context_device(stream));
    // Relaxed: on a stream that does not capture, another thread's global
    // capture is not invalidated (the driver counts pool calls as unsafe).
    RelaxedCaptureMode relaxed;
    CUdeviceptr ptr = 0;
    const CUresult r =
        CUMEM_CU_RESULT(cuMemAllocFromPoolAsync, (&ptr, size, pool_, native_or_legacy(stream)));
    if (r != CUDA_SUCCESS)
      driver::check(r, "cuMemAllocFromPoolAsync",
                    "allocating " + describe_bytes(size) + " from " + name_ + capture_note(stream));
    return reinterpret_cast<void*>(ptr);
  } catch (...) {
    if (budget_) budget_->give_back(size);
    throw;
  }
}

void PoolResource::do_deallocate(void* ptr, size_t size, const Stream* stream) {
  ScopedContext scope(context_device(stream));
  RelaxedCaptureMode relaxed;  // as in do_allocate
  // No capture query on the way (a pool's free under capture is a graph
  // free node); only a failure asks, to say why.
  const CUresult r =
      CUMEM_CU_RESULT(cuMemFreeAsync, (reinterpret_cast<CUdeviceptr>(ptr), native_or_legacy(stream)));
  if (r != CUDA_SUCCESS) {
    const std::string note = capture_note(stream);
    driver::check(r, "cuMemFreeAsync",
                  "freeing " + describe_bytes(size) + " to " + name_ + note +
                      (note.empty() ? ""
                                    : ", and a graph can free only memory that a capture "
                                      "allocated (graph memory): free memory allocated outside "
                                      "captures on a stream that does not capture"));
  }
  // The bytes count against max_size until the free is enqueued.
  if (budget_) budget_->give_back(size);
}

std::string PoolResource::usage_details() const {
  try {
    const PoolAttributes a = pool_get_attributes();
    std::string s = "; the pool reserves " + describe_bytes(a.reserved_mem_current) + " and uses " +
                    describe_bytes(a.used_mem_current);
    // The driver says how much of its reserve is free, not in how many
    // pieces: the largest free block is unknown.
    if (a.reserved_mem_current > a.used_mem_current)
      s += ", so " + describe_bytes(a.reserved_mem_current - a.used_mem_current) +
           " of its reserve is free (the driver does not report its largest free block)";
    if (properties().memory_kind == MemoryKind::device) {
      uint64_t free_bytes = 0, total = 0;
      device_->memory_info(free_bytes, total);
      s += "; " + device_->describe() + " has " + describe_bytes(free_bytes) + " free of " +
           describe_bytes(total);
    }
    return s;
  } catch (...) {
    return "";
  }
}

void PoolResource::snapshot(snapshot::Builder& out) const { out.entry().pool = pool_get_attributes(); }

DmaBufRanges PoolResource::dmabuf_ranges(void*, size_t, uintptr_t first, size_t bytes) const {
  if (properties().is_imported)
    fail(Status::not_supported, "memory of " + describe() +
                                    " was imported from another process and cannot be exported "
                                    "as a dma-buf here: export it in the process that allocated it");
  DmaBufRanges r;
  r.device = device_.get();
  r.what = "the allocation of " + describe();
  // On the H200 (tools/probes/dmabuf_pool_probe.py) a 20 MiB allocation
  // that the default pool placed right after a 1 MiB one was refused
  // whole, by its first 4 MiB and by a 2 MiB page in its middle, while the
  // 1 MiB one and a 64 MiB one after it were taken.
  r.refusal_hint =
      ": the driver refuses some allocations of a pool in every part (on the H200, one that "
      "the pool placed right after an earlier allocation, most likely over two of the pool's "
      "physical allocations); export buffers of a pool of their own (a device resource with "
      "new_pool) allocated before anything else, or of a virtual resource";
  r.whole = driver_allocation(*device_, first, bytes, r.what);
  return r;
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

PoolAttributes PoolResource::pool_get_attributes() const {
  ScopedContext scope(*device_);
  // Reading or setting a pool attribute is a "potentially unsafe" call
  // under capture (cuda.core, libcu++ found so): every pool_* call runs in
  // relaxed capture mode, which makes it legal on a capturing thread and
  // harmless to other threads' captures.
  RelaxedCaptureMode relaxed;
  PoolAttributes a;
  a.reuse_follow_event_dependencies =
      get_attribute(pool_, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
                    "reuse_follow_event_dependencies") != 0;
  a.reuse_allow_opportunistic =
      get_attribute(pool_, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, "reuse_allow_opportunistic") != 0;
  a.reuse_allow_internal_dependencies =
      get_attribute(pool_, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                    "reuse_allow_internal_dependencies") != 0;
  a.release_threshold = get_attribute(pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, "release_threshold");
  a.reserved_mem_current =
      get_attribute(pool_, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, "reserved_mem_current");
  a.reserved_mem_high = get_attribute(pool_, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, "reserved_mem_high");
  a.used_mem_current = get_attribute(pool_, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, "used_mem_current");
  a.used_mem_high = get_attribute(pool_, CU_MEMPOOL_ATTR_USED_MEM_HIGH, "used_mem_high");
  return a;
}

void PoolResource::pool_set_attributes(const PoolAttributes& a) {
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;
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
    CUMEM_CU(cuMemPoolSetAttribute, (pool_, f.attribute, &value),
             std::string("setting the pool attribute ") + f.name);
  }
  set_release_threshold(pool_, a.release_threshold);
}

void PoolResource::pool_reset_highs() {
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;
  cuuint64_t zero = 0;
  CUMEM_CU(cuMemPoolSetAttribute, (pool_, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero),
           "resetting the pool's reserved_mem_high");
  CUMEM_CU(cuMemPoolSetAttribute, (pool_, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero),
           "resetting the pool's used_mem_high");
}

void PoolResource::pool_trim(uint64_t min_bytes_to_keep) {
  notify_pool(static_cast<int>(unmap::Reason::pool_trim));
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;
  CUMEM_CU(cuMemPoolTrimTo, (pool_, static_cast<size_t>(min_bytes_to_keep)),
           "trimming " + describe() + " to " + describe_bytes(min_bytes_to_keep));
  if (history::on())
    history::record(history::Action::trim, id(), nullptr, 0, 0, min_bytes_to_keep);
}

void PoolResource::pool_set_access(const Device& peer, bool read_write) {
  const bool device_pool = properties().memory_kind == MemoryKind::device;
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
  RelaxedCaptureMode relaxed;
  CUMEM_CU(cuMemPoolSetAccess, (pool_, &desc, 1),
           std::string(read_write ? "granting " : "revoking ") + peer.describe() +
               " access to " + describe());
}

bool PoolResource::pool_get_access(const Device& peer) const {
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = peer.ordinal();
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;
  CUMEM_CU(cuMemPoolGetAccess, (&flags, pool_, &location),
           "reading " + peer.describe() + "'s access to " + describe());
  return flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

void check_pool_options(const PoolOptions& options) {
  if (options.use_default_pool && (options.max_size != 0 || options.ipc_enabled))
    fail(Status::invalid_argument,
         "max_size and ipc_enabled apply to new pools only; set new_pool to make one");
}

CUmemoryPool create_pool(const PoolSpec& spec, const std::string& where) {
  CUmemPoolProps props{};
  props.allocType = spec.allocation_type;
  // POSIX file descriptors only: FABRIC handles need an IMEX channel, and
  // destroying a FABRIC pool without one crashes some drivers.
  props.handleTypes =
      spec.ipc_enabled ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  props.location = spec.location;
  props.maxSize = static_cast<size_t>(spec.max_size);
  CUmemoryPool pool = nullptr;
  RelaxedCaptureMode relaxed;
  CUMEM_CU(cuMemPoolCreate, (&pool, &props), "creating a memory pool on " + where);
  return pool;
}

void set_release_threshold(CUmemoryPool pool, uint64_t threshold) {
  RelaxedCaptureMode relaxed;
  cuuint64_t value = threshold;
  CUMEM_CU(cuMemPoolSetAttribute, (pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value),
           "setting a pool's release threshold");
}

}  // namespace cumem::core
