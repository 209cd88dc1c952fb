// A snapshot of the memory (PyTorch's torch.cuda.memory._snapshot()): the
// resources of one stack (a resource and its upstreams) or of the whole
// process, the segments each holds and the blocks in each, totals, and the
// history's events with their stacks. Immutable once taken; handed to users
// as cumem_snapshot_t. The JSON form (snapshot_json.cpp) is what the viewer
// reads; docs/snapshot-schema.md documents it.
//
// Who says what: a resource that knows its memory implements Snapshottable
// (src/resources/snapshottable.hpp) and adds segments and blocks through a
// Builder; take() walks the resources, adds each one's statistics, the
// allocations the history (or a tracking adaptor) knows of, and the totals.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../object.hpp"
#include "../resources/caching_resource.hpp"
#include "../resources/pool_resource.hpp"
#include "../resources/resource.hpp"
#include "../resources/virtual_resource.hpp"
#include "history.hpp"
#include "stacks.hpp"

namespace cumem::core::snapshot {

// What a segment is. The values are the C ABI's cumem_segment_kind_t.
enum class SegmentKind {
  segment = 1,     // an upstream allocation of the caching adaptor, split into blocks
  small = 2,       // an upstream allocation holding one small block of the caching adaptor
  expandable = 3,  // an address range of the expandable cache, pages mapped on demand
  virtual_range = 4,  // a virtual resource's allocation: its reserved range
  allocation = 5,  // one allocation of a resource that keeps no segments (a pool, the
                   // host resource, ...), known from the history or a tracking adaptor
};
// The values are the C ABI's cumem_block_state_t.
enum class BlockState {
  in_use = 1,    // handed out
  cached = 2,    // free in a cache, ready to be handed out again
  unmapped = 3,  // reserved address space with no memory behind it
};

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;  // 0: not known (the history was off when it was allocated)
  BlockState state = BlockState::in_use;
  uint64_t stream = 0;  // in use: the stream it was allocated on; cached: freed on; 0: none
  uint32_t stack = 0;   // in use: the stack that allocated it; 0: none
  size_t segment = 0;   // the index of its segment (set when the snapshot is complete)
};

struct Segment {
  uint64_t resource = 0;  // the id of the resource that holds it
  SegmentKind kind = SegmentKind::segment;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;  // expandable: the stream its pages are mapped for; else 0
  int device = -1;
  size_t first_block = 0;  // into Snapshot::blocks
  size_t block_count = 0;
};

// Sums over segments and blocks (of one resource, or of all).
struct Totals {
  uint64_t segments = 0;
  uint64_t blocks = 0;
  uint64_t bytes_reserved = 0;   // in segments, with memory behind it (not unmapped)
  uint64_t bytes_in_use = 0;     // blocks handed out (their rounded sizes)
  uint64_t bytes_requested = 0;  // of those, what was asked for (where known)
  uint64_t bytes_cached = 0;     // blocks free in a cache
  uint64_t bytes_unmapped = 0;   // address space with nothing mapped
  uint64_t largest_free_block = 0;
  // 1 - largest free block / bytes cached: 0 when all free memory is one
  // block, near 1 when it is in many small ones.
  double fragmentation = 0;
};

struct ResourceEntry {
  uint64_t id = 0;
  uint64_t upstream = 0;  // 0: none
  std::string name;       // describe()
  ResourceProperties properties;
  ResourceStatistics statistics;
  std::optional<CachingStatistics> caching;
  std::optional<PoolAttributes> pool;
  std::optional<VirtualStatistics> virtual_statistics;
  std::optional<std::pair<uint64_t, uint64_t>> tracking;  // outstanding count, bytes
  std::string error;  // what a part that could not be read said (a driver failure)
  Totals totals;
};

struct StackEntry {
  uint32_t id = 0;
  std::vector<Frame> frames;
};

class Snapshot final : public Object {
 public:
  Snapshot() : Object(Tag::snapshot) {}

  uint64_t time_ns = 0;
  uint32_t pid = 0;
  bool whole_process = false;
  std::vector<ResourceEntry> resources;
  std::vector<Segment> segments;
  std::vector<Block> blocks;
  std::vector<history::Event> events;
  std::vector<StackEntry> stacks;  // by id, ascending
  Totals totals;
  // The history when taken.
  bool recording = false;
  bool recording_stacks = false;
  uint64_t max_entries = 0, recorded = 0, dropped = 0;

  const StackEntry* stack(uint32_t id) const;
  // The JSON text (snapshot_json.cpp), made once on first use.
  const std::string& json() const;

 private:
  mutable std::once_flag json_once_;
  mutable std::string json_;
};

// An allocation a snapshot knows from the history or a tracking adaptor.
struct Known {
  uint64_t resource = 0;
  uint64_t address = 0;
  uint64_t size = 0;  // requested
  uint64_t stream = 0;
  uint32_t stack = 0;  // a history stack id, or 0
  std::vector<void*> frames;  // a tracking adaptor's own stack
};

// What a Snapshottable resource fills in for itself.
class Builder {
 public:
  Builder(Snapshot& s, ResourceEntry& entry, std::vector<Known>& known)
      : s_(s), entry_(entry), known_(known) {}
  ResourceEntry& entry() { return entry_; }
  // A new segment of this resource; blocks added next belong to it.
  void add_segment(SegmentKind kind, uint64_t address, uint64_t size, uint64_t stream = 0);
  void add_block(uint64_t address, uint64_t size, BlockState state, uint64_t stream = 0,
                 uint64_t requested_size = 0);
  // An allocation the resource itself keeps a record of (a tracking
  // adaptor), with the stack that made it: given to the block at its
  // address, or a segment of its own where no segment holds it.
  void add_allocation(uint64_t address, uint64_t size, uint64_t stream, std::vector<void*> frames);

 private:
  Snapshot& s_;
  ResourceEntry& entry_;
  std::vector<Known>& known_;
};

// A snapshot of `root` and its upstreams, or with null of every live
// resource of the process.
Ref<Snapshot> take(const Resource* root);

// The snapshot's JSON text.
std::string to_json(const Snapshot& s);

}  // namespace cumem::core::snapshot
