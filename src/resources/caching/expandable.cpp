#include "expandable.hpp"

#include <algorithm>
#include <string>

#include "../../error.hpp"

namespace cumem::core::caching {
namespace {

uint64_t round_up(uint64_t v, uint64_t step) { return (v + step - 1) / step * step; }
uint64_t round_down(uint64_t v, uint64_t step) { return v / step * step; }

// Whether new pages for stream `key` may join the free piece `p`: freed on
// that stream, or with no pending work.
bool joins(const Piece* p, uintptr_t key) {
  return p && p->free && (p->key == key || p->key == kAnyStream);
}

}  // namespace

ExpandableSegments::~ExpandableSegments() {
  for (auto& segment : segments_) {
    for (const Piece* p = pieces_.at(segment->pages->base()); p; p = p->next)
      if (p->mapped && !p->free) {
        // Freeing the range would unmap memory someone still uses.
        segment->pages.release();
        break;
      }
  }
}

uint64_t ExpandableSegments::in_use_bytes() const {
  uint64_t n = 0;
  for (const auto& segment : segments_)
    for (const Piece* p = pieces_.at(segment->pages->base()); p; p = p->next)
      if (p->mapped && !p->free) n += p->size;
  return n;
}

uint64_t ExpandableSegments::offset_of(const Piece* p) const {
  return static_cast<uint64_t>(p->ptr - p->segment->pages->base());
}

void ExpandableSegments::insert_unmapped(Piece* p) {
  p->free = false;
  p->mapped = false;
  p->key = kAnyStream;
  unmapped_.emplace(p->segment->owner, p->ptr, p);
}

void ExpandableSegments::erase_unmapped(Piece* p) {
  unmapped_.erase({p->segment->owner, p->ptr, p});
}

ExpandableSegment* ExpandableSegments::add_range(uint64_t bytes, uintptr_t key) {
  auto segment = std::make_unique<ExpandableSegment>();
  segment->pages = pages_.reserve(bytes);
  segment->owner = key;
  auto head = std::make_unique<Piece>();
  head->ptr = segment->pages->base();
  head->size = segment->pages->size();
  head->segment = segment.get();
  segments_.reserve(segments_.size() + 1);  // the pushes below cannot throw
  pieces_.emplace(head->ptr, head.get());
  insert_unmapped(head.release());
  segments_.push_back(std::move(segment));
  return segments_.back().get();
}

Grown ExpandableSegments::grow(uint64_t rounded, uintptr_t key) {
  const uint64_t page = pages_.page_size();
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (auto it = unmapped_.lower_bound({key, nullptr, nullptr});
         it != unmapped_.end() && std::get<0>(*it) == key; ++it) {
      Piece* u = std::get<2>(*it);
      Piece* before = joins(u->prev, key) ? u->prev : nullptr;
      Piece* after = joins(u->next, key) ? u->next : nullptr;
      const uint64_t have = before ? before->size : 0;
      if (have >= rounded) continue;  // served without new pages (take() looks first)
      uint64_t bytes = round_up(rounded - have, page);
      if (bytes > u->size) {
        // A hole between free pieces: mapped whole, it joins both.
        if (!after || have + u->size + after->size < rounded) continue;
        bytes = u->size;
      }
      u->segment->pages->map(offset_of(u), bytes);  // throws with nothing changed
      mapped_ += bytes;
      pages_mapped_ += bytes / page;
      Grown g;
      g.mapped = bytes;
      g.mapped_at = u->ptr;
      erase_unmapped(u);
      if (bytes < u->size) {
        Piece* rest = insert_after(u, u->ptr + bytes, u->size - bytes);
        u->size = bytes;
        insert_unmapped(rest);
      }
      u->mapped = true;
      u->key = key;
      Piece* p = u;
      if (before) {
        erase_free(before);
        g.consumed[g.consumed_count++] = before->key;
        absorb(before, p);
        p = before;
        p->key = key;
      }
      if (after && p->next == after) {
        erase_free(after);
        g.consumed[g.consumed_count++] = after->key;
        absorb(p, after);
      }
      g.taken = hand_out(p, rounded);
      return g;
    }
    // No range of this stream has room: a new one (once).
    if (attempt == 0) add_range(std::max(pages_.range_size(), round_up(rounded, page)), key);
  }
  fail(Status::out_of_memory, "no address range could hold a block of " + describe_bytes(rounded));
}

void ExpandableSegments::make_unmapped(Piece* p, uint64_t lo, uint64_t hi) {
  const uint64_t total = p->size;
  erase_free(p);
  Piece* mid = p;
  if (lo > 0) {  // the head stays free
    mid = insert_after(p, p->ptr + lo, total - lo);
    p->size = lo;
    insert_free(p);
  }
  if (hi < total) {  // so does the tail
    Piece* tail = insert_after(mid, p->ptr + hi, total - hi);
    mid->size = hi - lo;
    insert_free(tail);
  }
  if (mid->prev && !mid->prev->mapped) {
    Piece* prev = mid->prev;
    erase_unmapped(prev);
    absorb(prev, mid);
    mid = prev;
  }
  if (mid->next && !mid->next->mapped) {
    erase_unmapped(mid->next);
    absorb(mid, mid->next);
  }
  insert_unmapped(mid);
}

uint64_t ExpandableSegments::unmap_free(uint64_t keep, uint64_t& cached,
                                        std::vector<std::pair<char*, uint64_t>>* spans_out) {
  const uint64_t page = pages_.page_size();
  // The whole pages inside each free piece of a range: (bytes, address,
  // piece, first and last page offset within the piece).
  struct Span {
    uint64_t bytes;
    char* ptr;
    Piece* piece;
    uint64_t lo, hi;
  };
  std::vector<Span> spans;
  for (const auto& [size, ptr, p] : by_size_) {
    if (!p->segment) continue;
    // The first and the last page boundary inside the piece, as range
    // offsets: a piece within one page has none (first > last).
    const uint64_t at = offset_of(p);
    const uint64_t first = round_up(at, page), last = round_down(at + p->size, page);
    if (last > first) spans.push_back({last - first, p->ptr, p, first - at, last - at});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.ptr < b.ptr;
  });
  uint64_t unmapped = 0;
  if (spans_out) spans_out->reserve(spans_out->size() + spans.size());  // no throw below
  for (const Span& s : spans) {
    if (cached <= keep) break;
    s.piece->segment->pages->unmap(offset_of(s.piece) + s.lo, s.bytes);
    if (spans_out) spans_out->emplace_back(s.piece->ptr + s.lo, s.bytes);
    mapped_ -= s.bytes;
    pages_unmapped_ += s.bytes / page;
    make_unmapped(s.piece, s.lo, s.hi);
    cached -= s.bytes;
    unmapped += s.bytes;
  }
  // Ranges with nothing mapped go (their address space too).
  for (auto it = segments_.begin(); it != segments_.end();) {
    Piece* head = pieces_.at((*it)->pages->base());
    if (!head->mapped && !head->next) {
      erase_unmapped(head);
      pieces_.erase(head->ptr);
      delete head;
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  return unmapped;
}

}  // namespace cumem::core::caching
