// What the caching adaptor holds, for snapshots (src/snapshot/): the small
// upstream allocations it keeps (each one small block), and the turning of
// its parts (the central segments, the blocks threads and bins keep) into
// a snapshot's segments and blocks. Bookkeeping only: the adaptor holds
// every lock around these calls (caching_resource.cpp).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "segments.hpp"

namespace cumem::core::snapshot {
class Builder;
}

namespace cumem::core::caching {

// The small blocks' upstream allocations, by address (under the central
// lock): added on a small miss, removed when given back.
class SmallSegments {
 public:
  void add(void* ptr, uint64_t size) { sizes_[ptr] = size; }
  void remove(void* ptr) { sizes_.erase(ptr); }
  const std::unordered_map<void*, uint64_t>& sizes() const { return sizes_; }

 private:
  std::unordered_map<void*, uint64_t> sizes_;
};

// Blocks that are cached outside the central free pieces: in the threads'
// caches and the small bins, by address, with the key of the stream they
// were freed on. A large one is a piece the segments count as handed out.
using KeptBlocks = std::unordered_map<void*, uintptr_t>;

// A stream key as a snapshot shows it: the CUstream, 2 for any thread's
// per-thread default stream, 0 for none.
uint64_t snapshot_stream(uintptr_t key);

// Every segment (an upstream allocation, or an expandable range) with its
// pieces as blocks: in use, cached (free, or kept by a thread) or unmapped.
void describe_segments(const Segments& segments, const KeptBlocks& kept, snapshot::Builder& out);
// Every small upstream allocation as a segment of one block.
void describe_small(const SmallSegments& small, const KeptBlocks& kept, snapshot::Builder& out);

}  // namespace cumem::core::caching
