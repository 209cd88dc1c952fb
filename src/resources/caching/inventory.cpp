#include "inventory.hpp"

#include <algorithm>
#include <vector>

#include "../../snapshot/snapshot.hpp"
#include "expandable.hpp"
#include "stream_order.hpp"

namespace cumem::core::caching {

uint64_t snapshot_stream(uintptr_t key) {
  if (key == kAnyStream) return 0;
  if (is_per_thread_key(key)) return reinterpret_cast<uintptr_t>(CU_STREAM_PER_THREAD);
  return key;
}

void describe_segments(const Segments& segments, const KeptBlocks& kept, snapshot::Builder& out) {
  std::vector<const Piece*> heads;
  for (const auto& [ptr, p] : segments.pieces())
    if (!p->prev) heads.push_back(p);
  std::sort(heads.begin(), heads.end(),
            [](const Piece* a, const Piece* b) { return a->ptr < b->ptr; });
  for (const Piece* head : heads) {
    uint64_t size = 0;
    for (const Piece* p = head; p; p = p->next) size += p->size;
    if (head->segment)
      out.add_segment(snapshot::SegmentKind::expandable, reinterpret_cast<uintptr_t>(head->ptr),
                      size, snapshot_stream(head->segment->owner));
    else
      out.add_segment(snapshot::SegmentKind::segment, reinterpret_cast<uintptr_t>(head->ptr), size);
    for (const Piece* p = head; p; p = p->next) {
      const auto address = reinterpret_cast<uintptr_t>(p->ptr);
      if (!p->mapped) {
        out.add_block(address, p->size, snapshot::BlockState::unmapped);
      } else if (p->free) {
        out.add_block(address, p->size, snapshot::BlockState::cached, snapshot_stream(p->key));
      } else if (const auto k = kept.find(p->ptr); k != kept.end()) {
        out.add_block(address, p->size, snapshot::BlockState::cached, snapshot_stream(k->second));
      } else {
        out.add_block(address, p->size, snapshot::BlockState::in_use);
      }
    }
  }
}

void describe_small(const SmallSegments& small, const KeptBlocks& kept, snapshot::Builder& out) {
  std::vector<std::pair<void*, uint64_t>> sorted(small.sizes().begin(), small.sizes().end());
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [ptr, size] : sorted) {
    const auto address = reinterpret_cast<uintptr_t>(ptr);
    out.add_segment(snapshot::SegmentKind::small, address, size);
    if (const auto k = kept.find(ptr); k != kept.end())
      out.add_block(address, size, snapshot::BlockState::cached, snapshot_stream(k->second));
    else
      out.add_block(address, size, snapshot::BlockState::in_use);
  }
}

}  // namespace cumem::core::caching
