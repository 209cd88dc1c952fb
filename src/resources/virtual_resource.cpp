// The virtual-memory resource: allocation, free, resize and access over
// ranges of src/vmm/. IPC of its buffers is in virtual_ipc.cpp.
#include "virtual_resource.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../log.hpp"
#include "../snapshot/snapshot.hpp"

namespace cumem::core {
namespace {

Location device_location(const Device& d) { return Location{LocationType::device, d.ordinal()}; }
constexpr Location kHostAccess{LocationType::host_numa, 0};

// Whether the host may be given access to host-located virtual memory: one
// granule mapped with the device's and the host's access. The driver lets
// the host in only for some location types and drivers, so ask it.
bool host_can_access(const std::shared_ptr<const vmm::Spec>& spec) {
  const size_t g = spec->granularity();
  std::unique_ptr<vmm::Range> probe = vmm::Range::reserve(spec, g);
  probe->set_access(device_location(spec->device()), vmm::Access::read_write);
  probe->set_access(kHostAccess, vmm::Access::read_write);
  try {
    probe->map(0, g, g);
  } catch (const Error& e) {
    if (e.status() == Status::out_of_memory) throw;
    return false;
  }
  return true;
}

uint64_t capacity_of(const vmm::Spec& spec) {
  if (!spec.is_host_memory()) {
    size_t total = 0;
    ScopedContext scope(spec.device());
    RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
    CUMEM_CU(cuDeviceTotalMem, (&total, spec.device().native()),
             "reading the memory size of " + spec.device().describe());
    return total;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
}

}  // namespace

Ref<Resource> create_virtual_resource(Ref<Device> device, const VirtualOptions& options) {
  return VirtualResource::create(std::move(device), options);
}

Ref<Resource> VirtualResource::create(Ref<Device> device, const VirtualOptions& options) {
  if (options.alignment != 0 && (options.alignment & (options.alignment - 1)) != 0)
    fail(Status::invalid_argument, "options->alignment " + std::to_string(options.alignment) +
                                       " is not 0 or a power of two");
  std::shared_ptr<const vmm::Spec> spec = vmm::Spec::create(device, options.spec);
  const size_t g = spec->granularity();
  if (options.address_hint % g != 0)
    fail(Status::invalid_argument, "options->address_hint is not a multiple of the granularity of " +
                                       describe_bytes(g));
  // Access: the device itself, then the peers, then the host where it can.
  std::vector<vmm::AccessEntry> access{{device_location(*device), vmm::Access::read_write}};
  for (int ordinal : options.peers) {
    if (ordinal == device->ordinal()) continue;  // read-write already
    Ref<Device> peer = Device::get(ordinal);      // no_device for a bad ordinal
    if (!spec->is_host_memory() && !peer->can_access_peer(*device))
      fail(Status::not_supported, peer->describe() + " cannot access the memory of " +
                                      device->describe() + " (no peer path)");
    bool listed = false;
    for (const vmm::AccessEntry& e : access) listed = listed || e.location.id == ordinal;
    if (!listed)
      access.push_back({device_location(*peer),
                        options.peers_read_only ? vmm::Access::read : vmm::Access::read_write});
  }
  const bool host = spec->is_host_memory() && host_can_access(spec);
  if (host) access.push_back({kHostAccess, vmm::Access::read_write});

  ResourceProperties p;
  p.kind = ResourceKind::virtual_memory;
  p.memory_kind = spec->is_host_memory() ? MemoryKind::pinned : MemoryKind::device;
  p.device_accessible = true;
  p.host_accessible = host;
  p.device_id = spec->is_host_memory() ? -1 : device->ordinal();
  p.stream_ordered = true;
  p.ipc_enabled = (spec->prop().requestedHandleTypes & vmm::kHandlePosixFd) != 0;
  const uint64_t capacity = capacity_of(*spec);
  return Ref<Resource>::adopt(
      new VirtualResource(std::move(device), p, std::move(spec), options, std::move(access), capacity));
}

VirtualResource::VirtualResource(Ref<Device> device, const ResourceProperties& properties,
                                 std::shared_ptr<const vmm::Spec> spec,
                                 const VirtualOptions& options,
                                 std::vector<vmm::AccessEntry> access, uint64_t capacity)
    : Resource(device, properties),
      spec_(std::move(spec)),
      chunk_size_(spec_->round_up(options.chunk_size ? options.chunk_size : kDefaultChunk)),
      address_hint_(options.address_hint),
      alignment_(options.alignment),
      reserve_size_(options.reserve_size),
      capacity_(capacity),
      imported_(properties.is_imported),
      access_(std::move(access)),
      pending_(std::move(device)) {}

VirtualResource::~VirtualResource() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.wait_all();
  live_.clear();  // raw allocations never freed: unmapped with the resource
}

std::string VirtualResource::describe() const {
  return std::string(imported_ ? "imported " : "") + "virtual memory resource of " +
         spec_->describe();
}

std::string VirtualResource::usage_details() const {
  const VirtualStatistics s = virtual_statistics();
  return "; the resource maps " + describe_bytes(s.bytes_mapped) + ", of which " +
         describe_bytes(s.bytes_pending) + " wait for their stream's work before release";
}

size_t VirtualResource::reserve_for(size_t rounded) const {
  // Twice the mapped size: a buffer can double in place. Address space is
  // plentiful (2^47 bytes or more per process on the GPUs CUDA 13 supports).
  size_t reserve = rounded <= SIZE_MAX / 2 ? 2 * rounded : rounded;
  if (reserve_size_ > reserve) {
    const size_t wanted = reserve_size_ > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(reserve_size_);
    reserve = wanted > SIZE_MAX - spec_->granularity() ? reserve : spec_->round_up(wanted);
  }
  return reserve;
}

template <class F>
auto VirtualResource::retrying(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.status() != Status::out_of_memory || pending_.size() == 0) throw;
  }
  // Memory freed on busy streams is still mapped: wait for it, then retry.
  pending_.wait_all();
  return f();
}

std::unique_ptr<vmm::Range> VirtualResource::new_range(size_t rounded) {
  std::unique_ptr<vmm::Range> range = retrying([&] {
    return vmm::Range::reserve(spec_, reserve_for(rounded), alignment_, address_hint_);
  });
  for (const vmm::AccessEntry& e : access_) range->set_access(e.location, e.access);
  retrying([&] { range->map(0, rounded, chunk_size_); });
  range->set_owner(id());  // from now on its unmaps are notified (src/unmap_events.hpp)
  return range;
}

void* VirtualResource::do_allocate(size_t size, const Stream*) {
  if (imported_)
    fail(Status::not_supported, describe() + " maps memory of another process and cannot allocate");
  const size_t rounded = spec_->round_up(size);
  if (rounded > capacity_)
    fail(Status::out_of_memory, describe_bytes(rounded) + " is more than all of " +
                                    spec_->describe() + " (" + describe_bytes(capacity_) + ")");
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.reclaim();
  std::unique_ptr<vmm::Range> range = new_range(rounded);
  const uintptr_t address = static_cast<uintptr_t>(range->address());
  Allocation& a = live_[address];  // on a throw, `range` unmaps
  a.range = std::move(range);
  a.size = size;
  a.mapped_end = rounded;
  return reinterpret_cast<void*>(address);
}

VirtualResource::Allocation& VirtualResource::find(void* ptr, size_t size, const char* doing) {
  auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == live_.end())
    fail(Status::invalid_argument, std::string(doing) + " " + address_text(ptr) +
                                       ": no allocation of " + describe() + " starts there");
  if (it->second.size != size)
    fail(Status::invalid_argument, std::string(doing) + " " + address_text(ptr) + " with " +
                                       describe_bytes(size) + ": the allocation there has " +
                                       describe_bytes(it->second.size));
  return it->second;
}

void VirtualResource::do_deallocate(void* ptr, size_t size, const Stream* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
  find(ptr, size, "freeing");
  Allocation& a = it->second;
  const size_t held = a.range->mapped();
  pending_.retire(a.range, stream, held);  // a throw leaves the allocation live
  live_.erase(it);
  pending_.reclaim();
}

void* VirtualResource::resize(void* ptr, size_t old_size, size_t new_size, const Stream* stream) {
  if (imported_)
    fail(Status::not_supported, "a buffer mapped from another process (" + describe() +
                                    ") cannot be resized here; the exporter resizes its own");
  if (new_size == 0)
    fail(Status::invalid_argument, "cannot resize a buffer to 0 bytes; close it instead");
  const size_t rounded = spec_->round_up(new_size);
  if (rounded > capacity_)
    fail(Status::out_of_memory, "cannot grow a buffer to " + describe_bytes(new_size) +
                                    ": more than all of " + spec_->describe() + " (" +
                                    describe_bytes(capacity_) + ")");
  std::unique_lock<std::mutex> lock(mutex_);
  pending_.reclaim();
  Allocation* a = &find(ptr, old_size, "resizing");
  try {
    if (rounded > a->mapped_end) a = &grow(*a, rounded, stream);
    else if (rounded < a->mapped_end) shrink(*a, rounded, stream);
  } catch (const Error& e) {
    if (e.status() != Status::out_of_memory) throw;
    lock.unlock();  // usage_details() takes the lock
    fail(Status::out_of_memory, "out of memory: cannot grow a buffer of " +
                                    describe_bytes(old_size) + " to " + describe_bytes(new_size) +
                                    " in " + describe() + usage_details() + "; " + e.what());
  }
  a->size = new_size;
  count_resize(old_size, new_size);
  return reinterpret_cast<void*>(static_cast<uintptr_t>(a->range->address()));
}

VirtualResource::Allocation& VirtualResource::grow(Allocation& a, size_t rounded,
                                                   const Stream* stream) {
  vmm::Range& r = *a.range;
  const size_t from = a.mapped_end, more = rounded - from;
  // A shrink whose tail is still mapped (its stream's work not done) holds
  // the span: wait for it first.
  if (r.is_detached(from, more)) pending_.wait_for(&r);
  // Part of the span the driver refused to unmap (after a shrink) stays
  // mapped for good: the buffer moves to a new range instead.
  if (r.is_stuck(from, more)) return relocate(a, rounded, reserve_for(rounded), stream);
  if (rounded > r.reserved()) {
    // Grow the reservation in place: to twice the new size, else just enough.
    const size_t target = reserve_for(rounded);
    const bool extended = (target > r.reserved() && r.try_extend(target - r.reserved())) ||
                          r.try_extend(rounded - r.reserved());
    if (!extended) return relocate(a, rounded, target, stream);
  }
  retrying([&] { r.map(from, more, chunk_size_); });
  a.mapped_end = rounded;
  ++grows_in_place_;
  return a;
}

VirtualResource::Allocation& VirtualResource::relocate(Allocation& a, size_t rounded,
                                                       size_t reserve, const Stream* stream) {
  // The same chunks mapped into a larger range (no copy, every access
  // kept), then the rest mapped there; the old addresses stay mapped until
  // the work queued on the stream is done. Each step is all or nothing, and
  // until the old range is retired nothing of the allocation has changed.
  const vmm::Range& r = *a.range;
  const size_t from = a.mapped_end;
  const uintptr_t old_address = static_cast<uintptr_t>(r.address());
  std::unique_ptr<vmm::Range> moved = retrying([&] { return r.remap(reserve, alignment_, 0); });
  retrying([&] { moved->map(from, rounded - from, chunk_size_); });
  const uintptr_t address = static_cast<uintptr_t>(moved->address());
  auto it = live_.emplace(address, Allocation{}).first;  // references to `a` stay valid
  it->second.range = std::move(moved);
  it->second.size = a.size;
  it->second.mapped_end = rounded;
  try {
    pending_.retire(a.range, stream, 0);  // its chunks stay mapped in the new range
  } catch (...) {
    live_.erase(it);  // unmaps the new range: the allocation is as it was
    throw;
  }
  live_.erase(old_address);
  ++grows_moved_;
  return it->second;
}

void VirtualResource::shrink(Allocation& a, size_t rounded, const Stream* stream) {
  vmm::Range& r = *a.range;
  // Chunks are given back whole: those that start at or past the new end.
  size_t cut = a.mapped_end;
  for (const vmm::ChunkInfo& c : r.chunks())
    if (c.offset >= rounded) {
      cut = c.offset;
      break;
    }
  if (cut == a.mapped_end) return;  // the new end lies inside the last chunk
  vmm::Mappings tail = r.detach(cut, a.mapped_end - cut);
  try {
    pending_.retire(tail, &r, stream);
  } catch (...) {
    r.reattach(tail);
    throw;
  }
  a.mapped_end = cut;
  ++shrinks_;
}

void VirtualResource::set_access(const Device& peer, vmm::Access access) {
  const Device& owner = *device_;
  if (&peer == &owner) {
    if (access == vmm::Access::read_write) return;  // the resource's device always has it
    fail(Status::invalid_argument, "cannot take read-write access to " + describe() +
                                       " from the device it is made for (" + peer.describe() + ")");
  }
  if (access != vmm::Access::none && !spec_->is_host_memory() && !peer.can_access_peer(owner))
    fail(Status::not_supported, peer.describe() + " cannot access the memory of " +
                                    owner.describe() + " (no peer path)");
  const Location where = device_location(peer);
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.reclaim();
  vmm::Access previous = vmm::Access::none;
  for (const vmm::AccessEntry& e : access_)
    if (e.location.type == LocationType::device && e.location.id == where.id) previous = e.access;
  if (previous == access) return;
  // Every live buffer, all or nothing: a failure gives the buffers done so
  // far their previous access back.
  std::vector<vmm::Range*> done;
  try {
    for (auto& [address, a] : live_) {
      a.range->set_access(where, access);
      done.push_back(a.range.get());
    }
  } catch (...) {
    for (vmm::Range* r : done) {
      try {
        r->set_access(where, previous);
      } catch (...) {
        log::swallowed("restoring a peer's access to virtual memory after a failed change");
      }
    }
    throw;
  }
  for (auto e = access_.begin(); e != access_.end(); ++e)
    if (e->location.type == LocationType::device && e->location.id == where.id) {
      access_.erase(e);
      break;
    }
  if (access != vmm::Access::none) access_.push_back({where, access});
}

vmm::Access VirtualResource::get_access(const Device& peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const vmm::AccessEntry& e : access_)
    if (e.location.type == LocationType::device && e.location.id == peer.ordinal()) return e.access;
  return vmm::Access::none;
}

VirtualStatistics VirtualResource::virtual_statistics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  VirtualStatistics s;
  s.granularity = spec_->granularity();
  s.chunk_size = chunk_size_;
  for (const auto& [address, a] : live_) {
    s.bytes_mapped += a.range->mapped();
    s.bytes_reserved += a.range->reserved();
  }
  s.bytes_pending = pending_.bytes();
  s.bytes_mapped += s.bytes_pending;
  s.grows_in_place = grows_in_place_;
  s.grows_moved = grows_moved_;
  s.shrinks = shrinks_;
  s.chunks_created = spec_->chunks_created();
  s.chunks_released = spec_->chunks_released();
  return s;
}

void VirtualResource::snapshot(snapshot::Builder& out) const {
  out.entry().virtual_statistics = virtual_statistics();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uintptr_t> addresses;
  addresses.reserve(live_.size());
  for (const auto& [address, a] : live_) addresses.push_back(address);
  std::sort(addresses.begin(), addresses.end());
  for (const uintptr_t address : addresses) {
    const Allocation& a = live_.at(address);
    // The range's start: an imported block of an expandable cache begins
    // inside it (at `address`).
    const uintptr_t base = static_cast<uintptr_t>(a.range->address());
    const uint64_t reserved = a.range->reserved();
    out.add_segment(snapshot::SegmentKind::virtual_range, base, reserved);
    out.add_block(base, a.mapped_end, snapshot::BlockState::in_use, 0, a.size);
    if (reserved > a.mapped_end)
      out.add_block(base + a.mapped_end, reserved - a.mapped_end, snapshot::BlockState::unmapped);
  }
}

DmaBufRanges VirtualResource::dmabuf_ranges(void* ptr, size_t size, uintptr_t first,
                                            size_t bytes) const {
  if (imported_)
    fail(Status::not_supported, "this buffer maps memory of another process (" + describe() +
                                    ") and cannot be exported as a dma-buf here: export it in "
                                    "the process that allocated it");
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == live_.end() || it->second.size != size)
    fail(Status::invalid_argument, "exporting " + address_text(ptr) + ": no allocation of " +
                                       describe() + " of " + describe_bytes(size) + " starts there");
  const Allocation& a = it->second;
  const uintptr_t base = static_cast<uintptr_t>(a.range->address());
  DmaBufRanges r;
  r.device = &spec_->device();
  r.what = "the virtual memory range of " + describe();
  r.whole = DmaBufSpan{base, a.mapped_end};
  // The chunks that hold [first, first + bytes), for a driver that takes
  // no range over several chunks.
  size_t lo = a.mapped_end, hi = 0;
  for (const vmm::ChunkInfo& c : a.range->chunks()) {
    if (base + c.offset + c.size <= first || base + c.offset >= first + bytes) continue;
    lo = std::min(lo, c.offset);
    hi = std::max(hi, c.offset + c.size);
  }
  if (lo < hi && (lo != 0 || hi != a.mapped_end)) r.chunks = DmaBufSpan{base + lo, hi - lo};
  return r;
}

void VirtualResource::release_pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.wait_all();
}

IpcDescriptor VirtualResource::get_ipc_descriptor(void*, size_t) const {
  fail(Status::not_supported,
       "a buffer of a virtual memory resource is shared as its chunks' file descriptors: use "
       "cumem_buffer_get_virtual_ipc_handle (the resource needs the POSIX fd handle type)");
}

Ref<AllocationHandle> VirtualResource::get_allocation_handle() const {
  fail(Status::not_supported,
       "a virtual memory resource is not exported whole: share each buffer with "
       "cumem_buffer_get_virtual_ipc_handle");
}

}  // namespace cumem::core
