#include "range.hpp"

#include <iterator>
#include <optional>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../log.hpp"
#include "../unmap_events.hpp"

namespace cumem::core::vmm {
namespace {

// The device's context for a cleanup that cannot report: without it the
// driver calls still run (and say why they fail in the log).
class CleanupContext {
 public:
  explicit CleanupContext(const Device& device) noexcept {
    try {
      scope_.emplace(device);
    } catch (...) {
      log::swallowed("making the device's context current to unmap virtual memory");
    }
  }

 private:
  std::optional<ScopedContext> scope_;
  RelaxedCaptureMode relaxed_;  // never invalidates another thread's capture
};

bool is_power_of_two(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

CUmemAccess_flags flags_of(Access a) {
  switch (a) {
    case Access::none: return CU_MEM_ACCESS_FLAGS_PROT_NONE;
    case Access::read: return CU_MEM_ACCESS_FLAGS_PROT_READ;
    case Access::read_write: return CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

bool same_location(const Location& a, const Location& b) {
  // The host's access (host_numa) has one entry whatever the node id says:
  // the driver ignores the id there.
  if (a.type == LocationType::host_numa && b.type == LocationType::host_numa) return true;
  return a.type == b.type && a.id == b.id;
}

// Tells the unmap subscribers about `mappings`, about to be unmapped: one
// event per run of adjacent mappings. Nothing for a range with no owner.
void notify_unmaps(const std::map<size_t, std::unique_ptr<Mapping>>& mappings, const Spec& spec,
                   uint64_t owner) noexcept {
  if (owner == 0 || mappings.empty() || !unmap::any()) return;
  unmap::Event e;
  e.reason = unmap::Reason::virtual_unmap;
  e.resource_id = owner;
  e.device_id = spec.is_host_memory() ? -1 : spec.device().ordinal();
  auto flush = [&] {
    if (e.size) unmap::notify(e);
  };
  for (const auto& [offset, m] : mappings) {
    if (e.size && e.address + e.size == static_cast<uintptr_t>(m->address())) {
      e.size += m->size();
      continue;
    }
    flush();
    e.address = static_cast<uintptr_t>(m->address());
    e.size = m->size();
  }
  flush();
}

std::string span(size_t offset, size_t bytes) {
  return "[" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
         std::to_string(bytes) + ")";
}

// Unmaps `m` (at `offset` in its range) now; when the driver refuses, the
// address stays mapped for good: logged as `doing`, the mapping abandoned
// (its destructor then only drops the chunk) and its span put in `stuck`.
void unmap_or_keep_out(size_t offset, Mapping& m, std::map<size_t, size_t>& stuck,
                       const char* doing) noexcept {
  try {
    m.unmap();
    return;
  } catch (...) {
    log::swallowed(doing);
  }
  m.abandon();
  try {
    stuck.emplace(offset, m.size());
  } catch (...) {
    log::swallowed("recording a span of virtual memory the driver refused to unmap");
  }
}

// The same for each of `mappings`, which are then dropped.
void unmap_or_keep_out(std::map<size_t, std::unique_ptr<Mapping>>& mappings,
                       std::map<size_t, size_t>& stuck, const char* doing) noexcept {
  for (auto& [offset, m] : mappings) unmap_or_keep_out(offset, *m, stuck, doing);
  mappings.clear();  // drops each chunk's share (cuMemRelease of the last)
}

// Whether any span of `spans` (offset -> bytes) overlaps [offset, offset + bytes).
bool overlaps(const std::map<size_t, size_t>& spans, size_t offset, size_t bytes) {
  auto it = spans.lower_bound(offset + bytes);
  if (it == spans.begin()) return false;
  --it;
  return it->first + it->second > offset;
}

}  // namespace

Mappings& Mappings::operator=(Mappings&& other) noexcept {
  if (this != &other) {
    clear();
    spec_ = std::move(other.spec_);
    detached_ = std::move(other.detached_);
    reservations_ = std::move(other.reservations_);
    mappings_ = std::move(other.mappings_);
    owner_ = other.owner_;
  }
  return *this;
}

size_t Mappings::bytes() const noexcept {
  size_t n = 0;
  for (const auto& [offset, m] : mappings_) n += m->size();
  return n;
}

void Mappings::clear() noexcept {
  if (mappings_.empty() && reservations_.empty()) return;
  notify_unmaps(mappings_, *spec_, owner_);
  CleanupContext scope(spec_->device());
  for (const auto& [offset, m] : mappings_) detached_->spans.erase(offset);
  unmap_or_keep_out(mappings_, detached_->stuck,
                    "unmapping detached virtual memory (its span of the range stays out of use)");
  reservations_.clear();  // then the address space, if the range is gone
}

std::unique_ptr<Range> Range::reserve(std::shared_ptr<const Spec> spec, size_t size,
                                      size_t alignment, CUdeviceptr hint) {
  const size_t g = spec->granularity();
  std::unique_ptr<Range> range(new Range(std::move(spec)));
  if (size == 0) fail(Status::invalid_argument, "cannot reserve a range of 0 bytes");
  range->check_multiple(size, "the size of a range");
  if (alignment != 0 && !is_power_of_two(alignment))
    fail(Status::invalid_argument, "the alignment of a range (" + std::to_string(alignment) +
                                       ") must be 0 or a power of two");
  range->check_multiple(static_cast<size_t>(hint), "the address hint of a range");
  ScopedContext scope(range->spec_->device());
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  range->reservations_.push_back(std::shared_ptr<Reservation>(Reservation::reserve(
      size, alignment > g ? alignment : g, hint, range->spec_->describe().c_str())));
  range->reserved_ = size;
  return range;
}

Range::~Range() {
  notify_unmaps(mappings_, *spec_, owner_);
  CleanupContext scope(spec_->device());
  mappings_.clear();      // cuMemUnmap each (and cuMemRelease of chunks no one else maps)
  reservations_.clear();  // then cuMemAddressFree
}

void Range::check_multiple(size_t value, const char* what) const {
  const size_t g = granularity();
  if (value % g != 0)
    fail(Status::invalid_argument, std::string(what) + " (" + std::to_string(value) +
                                       ") is not a multiple of the granularity of " +
                                       describe_bytes(g));
}

void Range::check_free(size_t offset, size_t bytes, const char* doing) const {
  check_multiple(offset, "the offset");
  check_multiple(bytes, "the size");
  if (bytes == 0) fail(Status::invalid_argument, std::string(doing) + " 0 bytes");
  if (offset > reserved_ || bytes > reserved_ - offset)
    fail(Status::invalid_argument, std::string(doing) + " " + span(offset, bytes) +
                                       " overruns the range's " + describe_bytes(reserved_) +
                                       " of address space");
  if (is_stuck(offset, bytes))
    fail(Status::invalid_argument,
         std::string(doing) + " " + span(offset, bytes) +
             " overlaps memory the driver refused to unmap (see the log): it stays mapped, and "
             "that part of the range cannot be mapped again");
  if (is_detached(offset, bytes))
    fail(Status::invalid_argument,
         std::string(doing) + " " + span(offset, bytes) +
             " overlaps memory still mapped by detached mappings (Range::detach) that were not "
             "destroyed yet; destroy them first (after the GPU work that uses them)");
  // The mapping that starts before the span's end and ends after its start.
  auto it = mappings_.lower_bound(offset + bytes);
  if (it != mappings_.begin()) {
    --it;
    if (it->first + it->second->size() > offset)
      fail(Status::invalid_argument, std::string(doing) + " " + span(offset, bytes) +
                                         " overlaps the chunk mapped at " +
                                         span(it->first, it->second->size()));
  }
}

size_t Range::reservation_end(size_t offset) const {
  const CUdeviceptr at = address() + offset;
  for (const auto& r : reservations_)
    if (at < r->end()) return static_cast<size_t>(r->end() - address());
  return reserved_;
}

std::vector<CUmemAccessDesc> Range::access_descriptors() const {
  std::vector<CUmemAccessDesc> out;
  for (const AccessEntry& e : access_) {
    if (e.access == Access::none) continue;
    CUmemAccessDesc d{};
    d.location = to_cu(e.location);
    d.flags = flags_of(e.access);
    out.push_back(d);
  }
  return out;
}

void Range::set_access_over(size_t offset, size_t bytes,
                            const std::vector<CUmemAccessDesc>& access) const {
  if (access.empty() || bytes == 0) return;
  CUMEM_CU(cuMemSetAccess, (address() + offset, bytes, access.data(), access.size()),
           "setting the access to " + span(offset, bytes) + " of " + spec_->describe());
}

std::unique_ptr<Mapping> Range::map_with_access(size_t offset, std::shared_ptr<Chunk> chunk) {
  std::unique_ptr<Mapping> m = Mapping::map(address() + offset, std::move(chunk));
  try {
    m->set_access(access_descriptors());
  } catch (...) {
    unmap_or_keep_out(offset, *m, detached_->stuck,
                      "unmapping a chunk whose access could not be set (its span of the range "
                      "stays out of use)");
    throw;
  }
  return m;
}

void Range::map(size_t offset, size_t bytes, size_t chunk_size) {
  check_free(offset, bytes, "mapping");
  if (chunk_size == 0) fail(Status::invalid_argument, "a chunk size of 0 bytes");
  check_multiple(chunk_size, "the chunk size");
  ScopedContext scope(spec_->device());
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  // Built apart and merged at the end (std::map::merge moves nodes and
  // allocates nothing), so a throw anywhere leaves the range as it was and
  // what this call created is unmapped and released (a chunk the driver
  // refuses to unmap keeps its span out of use: see DetachedSpans::stuck).
  // The access is set once per reservation over all its new chunks (one
  // cuMemSetAccess, as the driver allows over adjacent mappings), not per
  // chunk: one driver call fewer a chunk where the expandable cache maps
  // many pages at a time. (On the H200 it saves little: the access costs
  // about 20 us per mapping it covers, one call or many; see
  // tools/probes/vmm_cost_probe.py.)
  std::map<size_t, std::unique_ptr<Mapping>> made;
  const std::vector<CUmemAccessDesc> access = access_descriptors();
  const size_t end = offset + bytes;
  size_t unset = offset;  // the first new chunk whose access is not set
  try {
    for (size_t at = offset; at < end;) {
      const size_t reservation = reservation_end(at);
      size_t piece = end - at < chunk_size ? end - at : chunk_size;
      if (piece > reservation - at) piece = reservation - at;
      made.emplace(at, Mapping::map(address() + at, Chunk::create(spec_, piece)));
      at += piece;
      if (at == end || at == reservation) {
        set_access_over(unset, at - unset, access);
        unset = at;
      }
    }
  } catch (...) {
    unmap_or_keep_out(made, detached_->stuck,
                      "undoing a failed map of virtual memory (a span of the range stays out of use)");
    throw;
  }
  mappings_.merge(made);
  mapped_ += bytes;
}

void Range::map_chunk(size_t offset, std::shared_ptr<Chunk> chunk) {
  const size_t bytes = chunk->size();
  check_free(offset, bytes, "mapping a chunk over");
  if (reservation_end(offset) - offset < bytes)
    fail(Status::invalid_argument, "a chunk mapped at " + span(offset, bytes) +
                                       " would straddle two reservations of the range");
  ScopedContext scope(spec_->device());
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  std::unique_ptr<Mapping> m = map_with_access(offset, std::move(chunk));
  mappings_.emplace(offset, std::move(m));
  mapped_ += bytes;
}

Mappings Range::detach(size_t offset, size_t bytes) {
  check_multiple(offset, "the offset");
  check_multiple(bytes, "the size");
  if (offset > reserved_ || bytes > reserved_ - offset)
    fail(Status::invalid_argument, "unmapping " + span(offset, bytes) + " overruns the range's " +
                                       describe_bytes(reserved_) + " of address space");
  const size_t end = offset + bytes;
  auto first = mappings_.lower_bound(offset);
  if (first != mappings_.begin()) {
    auto before = std::prev(first);
    if (before->first + before->second->size() > offset)
      fail(Status::invalid_argument, "unmapping " + span(offset, bytes) + " would cut the chunk at " +
                                         span(before->first, before->second->size()) +
                                         "; a chunk is unmapped whole");
  }
  auto last = mappings_.lower_bound(end);
  if (last != mappings_.begin()) {
    auto inside = std::prev(last);
    if (inside->first >= offset && inside->first + inside->second->size() > end)
      fail(Status::invalid_argument, "unmapping " + span(offset, bytes) + " would cut the chunk at " +
                                         span(inside->first, inside->second->size()) +
                                         "; a chunk is unmapped whole");
  }
  Mappings out;
  out.spec_ = spec_;
  out.detached_ = detached_;
  out.owner_ = owner_;
  if (first == last) return out;
  out.reservations_ = reservations_;  // these may throw: before anything moves
  std::map<size_t, size_t> spans;
  for (auto it = first; it != last; ++it) spans.emplace(it->first, it->second->size());
  while (first != last) {
    auto next = std::next(first);
    mapped_ -= first->second->size();
    out.mappings_.insert(mappings_.extract(first));
    first = next;
  }
  detached_->spans.merge(spans);
  return out;
}

void Range::reattach(Mappings& mappings) {
  if (mappings.empty()) return;
  if (mappings.detached_ != detached_)
    fail(Status::invalid_argument, "mappings detached from another range cannot be put back here");
  for (const auto& [offset, m] : mappings.mappings_) {
    detached_->spans.erase(offset);
    mapped_ += m->size();
  }
  mappings_.merge(mappings.mappings_);
  mappings.reservations_.clear();
}

void Range::unmap(size_t offset, size_t bytes) {
  ScopedContext scope(spec_->device());
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  Mappings gone = detach(offset, bytes);
  notify_unmaps(gone.mappings_, *spec_, owner_);
  auto& ms = gone.mappings_;
  for (auto it = ms.begin(); it != ms.end();) {
    try {
      it->second->unmap();
    } catch (...) {
      reattach(gone);  // this chunk and those after it: still mapped
      throw;
    }
    detached_->spans.erase(it->first);
    it = ms.erase(it);  // drops the chunk's share (cuMemRelease of the last)
  }
  gone.reservations_.clear();  // all unmapped: its destructor has nothing to do
}

bool Range::is_detached(size_t offset, size_t bytes) const {
  return overlaps(detached_->spans, offset, bytes);
}

bool Range::is_stuck(size_t offset, size_t bytes) const {
  return overlaps(detached_->stuck, offset, bytes);
}

bool Range::is_mapped(size_t offset, size_t bytes) const {
  if (offset > reserved_ || bytes > reserved_ - offset) return false;
  size_t at = offset;
  const size_t end = offset + bytes;
  auto it = mappings_.upper_bound(offset);
  if (it != mappings_.begin()) --it;
  for (; it != mappings_.end() && at < end; ++it) {
    if (it->first > at) return false;
    const size_t mend = it->first + it->second->size();
    if (mend > at) at = mend;
  }
  return at >= end;
}

Access Range::access(Location location) const noexcept {
  for (const AccessEntry& e : access_)
    if (same_location(e.location, location)) return e.access;
  return Access::none;
}

void Range::set_access(Location location, Access access) {
  validate(location, {LocationType::device, LocationType::host_numa},
           "the location given access to virtual memory");
  const Access previous = this->access(location);
  if (previous != access && !mappings_.empty()) {
    ScopedContext scope(spec_->device());
    RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
    CUmemAccessDesc d{};
    d.location = to_cu(location);
    d.flags = flags_of(access);
    const std::vector<CUmemAccessDesc> now{d};
    auto it = mappings_.begin();
    try {
      for (; it != mappings_.end(); ++it) it->second->set_access(now);
    } catch (...) {
      // The chunks done so far get their previous access back, so that the
      // range keeps one access list for all of its memory.
      CUmemAccessDesc back = d;
      back.flags = flags_of(previous);
      const std::vector<CUmemAccessDesc> undo{back};
      for (auto done = mappings_.begin(); done != it; ++done) {
        try {
          done->second->set_access(undo);
        } catch (...) {
          log::swallowed("restoring the access to virtual memory after a failed change");
        }
      }
      throw;
    }
  }
  for (auto e = access_.begin(); e != access_.end(); ++e) {
    if (!same_location(e->location, location)) continue;
    if (access == Access::none) access_.erase(e);
    else e->access = access;
    return;
  }
  if (access != Access::none) access_.push_back({location, access});
}

bool Range::try_extend(size_t bytes) {
  if (bytes == 0) fail(Status::invalid_argument, "cannot extend a range by 0 bytes");
  check_multiple(bytes, "the extension of a range");
  ScopedContext scope(spec_->device());
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  std::unique_ptr<Reservation> r =
      Reservation::reserve_at(address() + reserved_, bytes, granularity());
  if (!r) return false;
  reservations_.push_back(std::shared_ptr<Reservation>(std::move(r)));
  reserved_ += bytes;
  return true;
}

std::unique_ptr<Range> Range::remap(size_t size, size_t alignment, CUdeviceptr hint) const {
  const size_t used = mappings_.empty()
                          ? 0
                          : mappings_.rbegin()->first + mappings_.rbegin()->second->size();
  if (size < used)
    fail(Status::invalid_argument, "a range of " + describe_bytes(size) +
                                       " cannot hold the chunks mapped up to offset " +
                                       std::to_string(used));
  std::unique_ptr<Range> moved = reserve(spec_, size, alignment, hint);
  moved->access_ = access_;
  for (const auto& [offset, m] : mappings_) moved->map_chunk(offset, m->chunk());
  // On a throw above, `moved` unmaps what it mapped (no owner yet: nothing
  // is notified of addresses nobody had) and this range is untouched.
  moved->owner_ = owner_;
  return moved;
}

std::vector<ChunkInfo> Range::chunks() const {
  std::vector<ChunkInfo> out;
  out.reserve(mappings_.size());
  for (const auto& [offset, m] : mappings_)
    out.push_back({offset, m->size(), m->chunk()->handle(), m->chunk()});
  return out;
}

std::vector<ChunkInfo> Range::chunks(size_t offset, size_t bytes) const {
  std::vector<ChunkInfo> out;
  auto it = mappings_.upper_bound(offset);
  if (it != mappings_.begin()) {
    auto before = std::prev(it);
    if (before->first + before->second->size() > offset) it = before;
  }
  for (; it != mappings_.end() && it->first < offset + bytes; ++it)
    out.push_back({it->first, it->second->size(), it->second->chunk()->handle(), it->second->chunk()});
  return out;
}

}  // namespace cumem::core::vmm
