#include "snapshot.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "../error.hpp"
#include "../resources/adaptor.hpp"
#include "../resources/snapshottable.hpp"
#include "registry.hpp"

namespace cumem::core::snapshot {

const StackEntry* Snapshot::stack(uint32_t id) const {
  auto it = std::lower_bound(stacks.begin(), stacks.end(), id,
                             [](const StackEntry& e, uint32_t v) { return e.id < v; });
  return it != stacks.end() && it->id == id ? &*it : nullptr;
}

const std::string& Snapshot::json() const {
  std::call_once(json_once_, [this] { json_ = to_json(*this); });
  return json_;
}

void Builder::add_segment(SegmentKind kind, uint64_t address, uint64_t size, uint64_t stream) {
  Segment seg;
  seg.resource = entry_.id;
  seg.kind = kind;
  seg.address = address;
  seg.size = size;
  seg.stream = stream;
  seg.device = entry_.properties.device_id;
  seg.first_block = s_.blocks.size();
  s_.segments.push_back(seg);
}

void Builder::add_block(uint64_t address, uint64_t size, BlockState state, uint64_t stream,
                        uint64_t requested_size) {
  if (s_.segments.empty() || s_.segments.back().resource != entry_.id)
    fail(Status::internal, "a snapshot block was added before its segment");
  Block b;
  b.address = address;
  b.size = size;
  b.state = state;
  b.stream = stream;
  b.requested_size = requested_size;
  s_.blocks.push_back(b);
  ++s_.segments.back().block_count;
}

void Builder::add_allocation(uint64_t address, uint64_t size, uint64_t stream,
                             std::vector<void*> frames) {
  Known k;
  k.resource = entry_.id;
  k.address = address;
  k.size = size;
  k.stream = stream;
  k.frames = std::move(frames);
  known_.push_back(std::move(k));
}

namespace {

const Resource* upstream_of(const Resource& r) {
  const auto* a = dynamic_cast<const Adaptor*>(&r);
  return a ? &a->upstream() : nullptr;
}

ResourceEntry entry_of(const Resource& r) {
  ResourceEntry e;
  e.id = r.id();
  if (const Resource* up = upstream_of(r)) e.upstream = up->id();
  e.name = r.describe();
  e.properties = r.properties();
  e.statistics = r.statistics();
  return e;
}

void add_totals(Totals& t, const Segment& seg, const std::vector<Block>& blocks) {
  ++t.segments;
  for (size_t i = seg.first_block; i < seg.first_block + seg.block_count; ++i) {
    const Block& b = blocks[i];
    ++t.blocks;
    switch (b.state) {
      case BlockState::in_use:
        t.bytes_in_use += b.size;
        t.bytes_requested += b.requested_size ? b.requested_size : b.size;
        t.bytes_reserved += b.size;
        break;
      case BlockState::cached:
        t.bytes_cached += b.size;
        t.bytes_reserved += b.size;
        t.largest_free_block = std::max(t.largest_free_block, b.size);
        break;
      case BlockState::unmapped: t.bytes_unmapped += b.size; break;
    }
  }
}

void finish_totals(Totals& t) {
  t.fragmentation = t.bytes_cached == 0
                        ? 0.0
                        : 1.0 - static_cast<double>(t.largest_free_block) /
                                    static_cast<double>(t.bytes_cached);
}

// Sorts the segments by resource (in the order of the list) and address,
// and lays the blocks out again in that order.
void order_segments(Snapshot& s) {
  std::unordered_map<uint64_t, size_t> rank;
  for (size_t i = 0; i < s.resources.size(); ++i) rank[s.resources[i].id] = i;
  std::vector<Segment> segs = s.segments;
  std::stable_sort(segs.begin(), segs.end(), [&](const Segment& a, const Segment& b) {
    const size_t ra = rank[a.resource], rb = rank[b.resource];
    return ra != rb ? ra < rb : a.address < b.address;
  });
  std::vector<Block> blocks;
  blocks.reserve(s.blocks.size());
  for (size_t n = 0; n < segs.size(); ++n) {
    Segment& seg = segs[n];
    const size_t first = blocks.size();
    for (size_t i = 0; i < seg.block_count; ++i) {
      blocks.push_back(s.blocks[seg.first_block + i]);
      blocks.back().segment = n;
    }
    std::sort(blocks.begin() + static_cast<ptrdiff_t>(first), blocks.end(),
              [](const Block& a, const Block& b) { return a.address < b.address; });
    seg.first_block = first;
  }
  s.segments = std::move(segs);
  s.blocks = std::move(blocks);
}

// The segments by address, to find the one holding an address.
class SegmentIndex {
 public:
  explicit SegmentIndex(const Snapshot& s) {
    for (size_t i = 0; i < s.segments.size(); ++i)
      by_start_.emplace(s.segments[i].address, i);
    for (const Segment& seg : s.segments)
      for (size_t i = seg.first_block; i < seg.first_block + seg.block_count; ++i)
        if (s.blocks[i].state == BlockState::in_use)
          blocks_.emplace(s.blocks[i].address, std::make_pair(i, seg.resource));
  }
  // Whether some segment of the snapshot holds `address`.
  bool covered(const Snapshot& s, uint64_t address) const {
    // Segments of different resources may nest (none does today, but a
    // resource above another may describe part of its memory): look at
    // every segment starting at or below the address, nearest first, up
    // to the largest size seen.
    for (auto it = by_start_.upper_bound(address); it != by_start_.begin();) {
      --it;
      const Segment& seg = s.segments[it->second];
      if (address < seg.address + seg.size) return true;
      if (address - seg.address > max_size(s)) break;
    }
    return false;
  }
  // The in-use blocks starting at `address`, with their resources.
  std::vector<std::pair<size_t, uint64_t>> blocks_at(uint64_t address) const {
    std::vector<std::pair<size_t, uint64_t>> out;
    const auto range = blocks_.equal_range(address);
    for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
    return out;
  }

 private:
  uint64_t max_size(const Snapshot& s) const {
    if (!max_) {
      max_ = 1;
      for (const Segment& seg : s.segments) max_ = std::max(*max_, seg.size);
    }
    return *max_;
  }
  std::multimap<uint64_t, size_t> by_start_;
  std::multimap<uint64_t, std::pair<size_t, uint64_t>> blocks_;
  mutable std::optional<uint64_t> max_;
};

// Gives each known allocation to the block at its address, or makes it a
// segment of its own where no segment holds it (an allocation of a pool, of
// the host resource, ...).
void place_known(Snapshot& s, std::vector<Known>& known, std::vector<std::vector<void*>>& extra_stacks,
                 const std::unordered_map<uint64_t, size_t>& depth) {
  const SegmentIndex index(s);
  // By address; at one address, the resource nearest the bottom first.
  std::sort(known.begin(), known.end(), [&](const Known& a, const Known& b) {
    if (a.address != b.address) return a.address < b.address;
    return depth.at(a.resource) < depth.at(b.resource);
  });
  auto stack_of = [&](const Known& k) -> uint32_t {
    if (k.stack) return k.stack;
    if (k.frames.empty()) return 0;
    extra_stacks.push_back(k.frames);  // ids past the history's, set by the caller
    return static_cast<uint32_t>(0x80000000u + extra_stacks.size() - 1);
  };
  for (size_t i = 0; i < known.size();) {
    size_t j = i;
    while (j < known.size() && known[j].address == known[i].address) ++j;
    const uint64_t address = known[i].address;
    const auto at = index.blocks_at(address);
    if (!at.empty()) {
      // A block is there: the record of its own resource first, else the
      // one of the resource nearest above it (never one below: a pool's
      // record of the segment that starts with this block).
      for (const auto& [b, owner] : at) {
        Block& block = s.blocks[b];
        const size_t owner_depth = depth.at(owner);
        for (size_t k = i; k < j; ++k) {
          if (depth.at(known[k].resource) < owner_depth) continue;
          if (!block.requested_size) block.requested_size = known[k].size;
          if (!block.stack) block.stack = stack_of(known[k]);
          if (!block.stream) block.stream = known[k].stream;
        }
      }
    } else if (!index.covered(s, address)) {
      // No segment holds it: one of its own, owned by the lowest resource
      // that recorded it, asked for as the highest one asked.
      const Known& owner = known[i];
      Segment seg;
      seg.resource = owner.resource;
      seg.kind = SegmentKind::allocation;
      seg.address = address;
      seg.size = owner.size;
      seg.stream = 0;
      for (const ResourceEntry& e : s.resources)
        if (e.id == owner.resource) seg.device = e.properties.device_id;
      seg.first_block = s.blocks.size();
      seg.block_count = 1;
      Block block;
      block.address = address;
      block.size = owner.size;
      block.requested_size = known[j - 1].size;
      block.state = BlockState::in_use;
      block.stream = owner.stream;
      for (size_t k = i; k < j && !block.stack; ++k) block.stack = stack_of(known[k]);
      s.segments.push_back(seg);
      s.blocks.push_back(block);
    }
    i = j;
  }
}

}  // namespace

Ref<Snapshot> take(const Resource* root) {
  auto s = make_ref<Snapshot>();
  s->time_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count());
  s->pid = static_cast<uint32_t>(getpid());
  s->whole_process = root == nullptr;

  // The resources, each once: the stack from `root` down, or every live one.
  std::vector<Ref<Resource>> held;
  std::vector<const Resource*> list;
  if (root) {
    for (const Resource* r = root; r; r = upstream_of(*r)) list.push_back(r);
  } else {
    held = live_resources();
    for (const auto& r : held) list.push_back(r.get());
  }
  std::unordered_set<uint64_t> ids;
  for (const Resource* r : list) ids.insert(r->id());
  // Steps down to the bottom of each resource's chain (0: a leaf).
  std::unordered_map<uint64_t, size_t> depth;
  for (const Resource* r : list) {
    size_t d = 0;
    for (const Resource* u = upstream_of(*r); u; u = upstream_of(*u)) ++d;
    depth[r->id()] = d;
  }

  std::vector<Known> known;
  s->resources.reserve(list.size());
  for (const Resource* r : list) {
    s->resources.push_back(entry_of(*r));
    ResourceEntry& e = s->resources.back();
    const auto* snapshottable = dynamic_cast<const Snapshottable*>(r);
    if (!snapshottable) continue;
    const size_t segments = s->segments.size(), blocks = s->blocks.size();
    const size_t known_count = known.size();
    Builder b(*s, e, known);
    try {
      snapshottable->snapshot(b);
    } catch (const std::exception& x) {
      // What it added may be half of its state: none of it stays.
      s->segments.resize(segments);
      s->blocks.resize(blocks);
      known.resize(known_count);
      e.error = x.what();
    }
  }

  history::Copy h = history::copy();
  s->recording = h.recording;
  s->recording_stacks = h.with_stacks;
  s->max_entries = h.max_entries;
  s->recorded = h.recorded;
  s->dropped = h.dropped;
  for (auto& [resource, allocations] : h.live) {
    if (!ids.count(resource)) continue;
    for (const auto& [address, a] : allocations) {
      Known k;
      k.resource = resource;
      k.address = address;
      k.size = a.size;
      k.stream = a.stream;
      k.stack = a.stack;
      known.push_back(std::move(k));
    }
  }
  std::vector<std::vector<void*>> extra_stacks;
  place_known(*s, known, extra_stacks, depth);
  order_segments(*s);

  for (const history::Event& e : h.events)
    if (e.resource == 0 || ids.count(e.resource)) s->events.push_back(e);

  // Stacks: the history's by their ids; a tracking adaptor's after them.
  uint32_t next_id = 1;
  for (const auto& [id, frames] : h.stacks) next_id = std::max(next_id, id + 1);
  std::unordered_map<uint32_t, uint32_t> extra_ids;
  for (Block& b : s->blocks)
    if (b.stack >= 0x80000000u) {
      auto it = extra_ids.find(b.stack);
      if (it == extra_ids.end()) it = extra_ids.emplace(b.stack, next_id++).first;
      b.stack = it->second;
    }
  std::unordered_set<uint32_t> used;
  for (const Block& b : s->blocks) used.insert(b.stack);
  for (const history::Event& e : s->events) used.insert(e.stack);
  std::unordered_map<void*, Frame> names;
  for (const auto& [id, frames] : h.stacks)
    if (used.count(id)) s->stacks.push_back({id, symbolize(frames, names)});
  for (const auto& [tmp, id] : extra_ids)
    s->stacks.push_back({id, symbolize(extra_stacks[tmp - 0x80000000u], names)});
  std::sort(s->stacks.begin(), s->stacks.end(),
            [](const StackEntry& a, const StackEntry& b) { return a.id < b.id; });
  for (Block& b : s->blocks)
    if (b.stack && !s->stack(b.stack)) b.stack = 0;
  for (history::Event& e : s->events)
    if (e.stack && !s->stack(e.stack)) e.stack = 0;

  std::unordered_map<uint64_t, ResourceEntry*> by_id;
  for (ResourceEntry& e : s->resources) by_id[e.id] = &e;
  for (const Segment& seg : s->segments) {
    add_totals(by_id.at(seg.resource)->totals, seg, s->blocks);
    add_totals(s->totals, seg, s->blocks);
  }
  for (ResourceEntry& e : s->resources) finish_totals(e.totals);
  finish_totals(s->totals);
  return s;
}

}  // namespace cumem::core::snapshot
