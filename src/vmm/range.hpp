// A range of virtual memory: reserved address space with physical chunks
// mapped into it on demand. The layer under every kind of memory that must
// grow, shrink or be shared with other engines (the virtual resource, the
// caching adaptor's expandable segments, IPC of virtual memory).
//
// Ownership: each reservation (Reservation), each physical chunk (Chunk,
// shared by its mappings) and each mapping (Mapping) is an object of its
// own that gives its driver handle back when it goes. A range owns its
// reservations and its mappings; a mapping owns a share of its chunk. So
// whatever sequence of map, unmap, extend, remap and destruction happens,
// every cuMemAddressReserve has its cuMemAddressFree, every cuMemCreate its
// cuMemRelease and every cuMemMap its cuMemUnmap, and a call that fails
// half-way gives back what it made before it throws (rollback).
//
// The books follow the driver: a chunk counts as unmapped only once
// cuMemUnmap succeeded. unmap() leaves a chunk the driver refused to unmap
// in the range (and throws). Where a refusal cannot be reported (a
// detached Mappings cleared, the rollback of a failed map), the chunk's
// span stays out of use for good (map() refuses it by name), since the
// address is still mapped.
//
// Units: offsets are bytes from address(). Every offset, size, chunk size
// and alignment given to a range must be a multiple of granularity() (a
// power of two: 2 MiB on an H200); calls check it (invalid_argument).
//
// Ordering: the range does not know about streams. Unmapping (unmap(),
// destroying a range or a Mappings) takes effect at once, so the caller
// orders it after the GPU work that uses the memory: synchronize first, or
// detach() the mappings now and destroy them once an event recorded after
// the work has completed (what the virtual resource does). Mapping is
// synchronous: memory mapped by map() is usable by any stream when it
// returns. The contents of newly mapped memory are undefined.
//
// Access: nothing can use a mapping until access is granted. The range
// keeps one access list (a flag per location) and applies it to every
// chunk it maps, so a newly mapped part has the same access as the rest;
// set_access() changes one location's flag over every mapping at once.
//
// Threads: a range is not thread-safe. The caller serializes every call on
// one range (const calls may run concurrently with each other). Ranges of
// one spec are independent. Every call that reaches the driver makes the
// spec's device context current for its duration (ScopedContext), and so
// does the destructor.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "chunk.hpp"
#include "mapping.hpp"
#include "reservation.hpp"
#include "spec.hpp"

namespace cumem::core::vmm {

// A location's access to mapped memory (CU_MEM_ACCESS_FLAGS_PROT_*).
enum class Access { none = 0, read = 1, read_write = 3 };

struct AccessEntry {
  Location location;  // a device, or host_numa for the host's access to host memory
  Access access = Access::none;
};

// One mapped chunk, as chunks() lists them (for IPC export and dmabuf).
struct ChunkInfo {
  size_t offset = 0;  // from the range's address()
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;  // borrowed: the chunk owns it
  std::shared_ptr<Chunk> chunk;             // a share of it (to export it, map it elsewhere);
                                            // the memory lives while the ChunkInfo does
};

// Offsets of a range still mapped by detached Mappings (shared by the range
// and its Mappings objects), so that map() refuses them by name.
struct DetachedSpans {
  std::map<size_t, size_t> spans;  // offset -> bytes
  // Chunks whose cuMemUnmap failed where no one could hear (their
  // Mappings cleared, a failed map() undone): still mapped by the driver,
  // so never mapped again.
  std::map<size_t, size_t> stuck;
};

// Mappings taken out of a range by Range::detach(), still mapped: they are
// unmapped (and their chunks dropped) when this object is destroyed or
// cleared, with the spec's device context made current; until then their
// span of the range cannot be mapped again. They keep the range's
// reservations alive, so this object may outlive its range (the address
// space is freed when the last of the two goes). Destroying or clearing it
// counts as a call on its range (serialize it with the range's other
// calls). Move-only.
class Mappings {
 public:
  Mappings() = default;
  Mappings(Mappings&&) noexcept = default;
  Mappings& operator=(Mappings&& other) noexcept;
  ~Mappings() { clear(); }

  bool empty() const noexcept { return mappings_.empty(); }
  size_t bytes() const noexcept;
  // Unmaps now (the range's owner's subscribers are told first: see
  // Range::set_owner). Never throws: a chunk the driver refuses to unmap
  // goes to the log and its span of the range stays out of use (see
  // DetachedSpans::stuck).
  void clear() noexcept;

 private:
  friend class Range;
  uint64_t owner_ = 0;  // the range's, when detached
  std::shared_ptr<const Spec> spec_;
  std::shared_ptr<DetachedSpans> detached_;  // the range's
  // Declared before the mappings, so that they are freed after them.
  std::vector<std::shared_ptr<Reservation>> reservations_;
  std::map<size_t, std::unique_ptr<Mapping>> mappings_;  // by offset, as in the range
};

class Range {
 public:
  // Reserves `size` bytes of address space (a non-zero multiple of the
  // granularity), starting at a multiple of `alignment` (0: the
  // granularity; else a power of two, raised to the granularity when
  // smaller), at `hint` where the driver can place it there (0: anywhere;
  // a multiple of the granularity; never a requirement: compare address()).
  // Nothing is mapped and the access list is empty. Out of address space is
  // Error(out_of_memory) or the driver's error.
  static std::unique_ptr<Range> reserve(std::shared_ptr<const Spec> spec, size_t size,
                                        size_t alignment = 0, CUdeviceptr hint = 0);
  // Unmaps every mapping now (see "Ordering" above), drops its chunks (each
  // is released when no other range maps it) and frees its reservations
  // (those that detached Mappings still hold are freed after them).
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

  // The resource whose memory this range is (its id): from then on, every
  // unmap of its mappings (unmap(), destroying it or its detached
  // Mappings) is told to the unmap subscribers first (src/unmap_events.hpp),
  // one event per run of adjacent chunks. 0 (the default): nobody is told.
  // remap() gives the new range the same owner.
  void set_owner(uint64_t resource_id) noexcept { owner_ = resource_id; }
  uint64_t owner() const noexcept { return owner_; }

  CUdeviceptr address() const noexcept { return reservations_.front()->address(); }
  // Bytes of address space reserved (all reservations, which are contiguous).
  size_t reserved() const noexcept { return reserved_; }
  // Bytes of physical memory mapped (the sum of the mapped chunks' sizes).
  size_t mapped() const noexcept { return mapped_; }
  size_t granularity() const noexcept { return spec_->granularity(); }
  const Spec& spec() const noexcept { return *spec_; }
  const std::shared_ptr<const Spec>& spec_ref() const noexcept { return spec_; }

  // Creates physical memory for [offset, offset + bytes) and maps it, in
  // chunks of `chunk_size` bytes (a multiple of the granularity) from
  // `offset` on; the last chunk is smaller when `bytes` is not a multiple
  // of chunk_size, and a chunk that would straddle the end of one
  // reservation (after try_extend) is cut there. Every location of the
  // access list gets its access over the new chunks. [offset, offset +
  // bytes) must lie inside reserved() with nothing mapped in it, by the
  // range or by detached Mappings not destroyed yet (else
  // invalid_argument). All or nothing: when any driver call fails (out of
  // memory: Error(out_of_memory)), every chunk this call created is unmapped
  // and released before the error is thrown, and the range is unchanged.
  void map(size_t offset, size_t bytes, size_t chunk_size);
  // Maps an existing chunk (another range's, or one imported from another
  // process) at `offset`, with the access list: the same rules, all or
  // nothing. The range shares the chunk with its other owners.
  void map_chunk(size_t offset, std::shared_ptr<Chunk> chunk);
  // Takes the mappings of [offset, offset + bytes) out of the range and
  // returns them still mapped; the range no longer counts them (mapped()
  // drops), and their span can be mapped again once the returned Mappings
  // is destroyed or cleared (is_detached() says). Every chunk in the span must lie
  // wholly inside it: a chunk that starts before `offset` or ends after
  // offset + bytes is invalid_argument (nothing is taken). Holes are fine;
  // an empty result is fine. Never calls the driver.
  Mappings detach(size_t offset, size_t bytes);
  // Puts mappings detached from this range back (undoing detach(), when
  // what was to follow it failed); `mappings` is left empty. Mappings of
  // another range are invalid_argument. Never calls the driver.
  void reattach(Mappings& mappings);
  // detach(), then unmapped at once, chunk by chunk from `offset` up (the
  // owner's subscribers are told of the whole span first). When the driver
  // refuses a chunk (Error with its status), the chunks before it are
  // unmapped and that chunk and those after it stay in the range, mapped
  // (mapped() and is_mapped() say so); a later unmap() may try again.
  void unmap(size_t offset, size_t bytes);
  // Whether every byte of [offset, offset + bytes) is mapped.
  bool is_mapped(size_t offset, size_t bytes) const;
  // Whether any byte of [offset, offset + bytes) is still mapped by
  // detached Mappings that were not destroyed yet.
  bool is_detached(size_t offset, size_t bytes) const;
  // Whether any byte of [offset, offset + bytes) is a chunk the driver
  // refused to unmap where no one could hear (DetachedSpans::stuck): out
  // of use for the range's life.
  bool is_stuck(size_t offset, size_t bytes) const;

  // Sets `location`'s access over every mapping (cuMemSetAccess, one call
  // per chunk) and records it for chunks mapped later: Access::none revokes
  // it. `location`: a device (an existing ordinal, else no_device), or
  // host_numa for the host's access to host-located memory; other types are
  // invalid_argument. All or nothing: when a chunk's call fails, the chunks
  // done so far get their previous access back and the list is unchanged.
  void set_access(Location location, Access access);
  // `location`'s entry in the access list (Access::none when absent).
  Access access(Location location) const noexcept;
  const std::vector<AccessEntry>& access_list() const noexcept { return access_; }

  // Reserves `bytes` more address space (a non-zero multiple of the
  // granularity) right after the end of the range, growing it in place:
  // true when the driver placed it exactly there (reserved() grows by
  // `bytes`), false when it did not or could not (nothing changes; the
  // caller moves to a larger range with remap()).
  bool try_extend(size_t bytes);
  // A new range of `size` reserved bytes (at least the end of the last
  // mapped chunk), with `alignment` and `hint` as for reserve(), that maps
  // this range's chunks at the same offsets with the same access list. This
  // range is unchanged: both map the same physical memory (no copy) until
  // one of them is destroyed. All or nothing.
  std::unique_ptr<Range> remap(size_t size, size_t alignment = 0, CUdeviceptr hint = 0) const;

  // The mapped chunks in offset order.
  std::vector<ChunkInfo> chunks() const;
  // Those that overlap [offset, offset + bytes), by offset.
  std::vector<ChunkInfo> chunks(size_t offset, size_t bytes) const;

 private:
  explicit Range(std::shared_ptr<const Spec> spec) : spec_(std::move(spec)) {}
  // invalid_argument unless `value` is a multiple of the granularity.
  void check_multiple(size_t value, const char* what) const;
  // invalid_argument unless [offset, offset + bytes) lies inside reserved()
  // with no mapping in it.
  void check_free(size_t offset, size_t bytes, const char* doing) const;
  // Where the reservation holding `offset` ends (an offset).
  size_t reservation_end(size_t offset) const;
  std::vector<CUmemAccessDesc> access_descriptors() const;
  // cuMemSetAccess of `access` over [offset, offset + bytes), mapped chunks
  // of one reservation; nothing for an empty list.
  void set_access_over(size_t offset, size_t bytes, const std::vector<CUmemAccessDesc>& access) const;
  std::unique_ptr<Mapping> map_with_access(size_t offset, std::shared_ptr<Chunk> chunk);

  std::shared_ptr<const Spec> spec_;
  // Declared before the mappings, so that they are destroyed after them;
  // shared with detached Mappings, which must not outlive their addresses.
  std::vector<std::shared_ptr<Reservation>> reservations_;  // contiguous, by address
  std::map<size_t, std::unique_ptr<Mapping>> mappings_;     // by offset
  std::vector<AccessEntry> access_;
  std::shared_ptr<DetachedSpans> detached_ = std::make_shared<DetachedSpans>();
  size_t reserved_ = 0;
  size_t mapped_ = 0;
  uint64_t owner_ = 0;
};

}  // namespace cumem::core::vmm
