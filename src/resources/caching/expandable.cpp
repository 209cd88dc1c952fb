#include "expandable.hpp"

#include <algorithm>
#include <string>

#include "../../error.hpp"
#include "../../log.hpp"

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

uint64_t ExpandableSegments::page_of(const Piece* p) { return p->segment->pages->page_size(); }

void ExpandableSegments::insert_unmapped(Piece* p) {
  p->free = false;
  p->mapped = false;
  p->key = kAnyStream;
  unmapped_.emplace(p->segment->owner, page_of(p), p->ptr, p);
}

void ExpandableSegments::erase_unmapped(Piece* p) {
  unmapped_.erase({p->segment->owner, page_of(p), p->ptr, p});
}

ExpandableSegment* ExpandableSegments::add_range(uint64_t bytes, uintptr_t key, uint64_t page) {
  auto segment = std::make_unique<ExpandableSegment>();
  segment->pages = pages_.reserve(bytes, page);
  for (int peer : peers_) segment->pages->set_access(peer, true);  // nothing mapped yet
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

ExpandableSegments::Spot ExpandableSegments::find_spot(uint64_t rounded, uintptr_t key) const {
  const uint64_t page = pages_.page_for(rounded);
  Spot best;
  for (auto it = unmapped_.lower_bound({key, page, nullptr, nullptr});
       it != unmapped_.end() && std::get<0>(*it) == key && std::get<1>(*it) == page; ++it) {
    Piece* u = std::get<3>(*it);
    Spot s;
    s.unmapped = u;
    s.before = joins(u->prev, key) ? u->prev : nullptr;
    s.after = joins(u->next, key) ? u->next : nullptr;
    const uint64_t have = s.before ? s.before->size : 0;
    if (have >= rounded) continue;  // served without new pages (take() looks first)
    s.bytes = round_up(rounded - have, page);
    if (s.bytes > u->size) {
      // A hole between free pieces: mapped whole, it joins both.
      if (!s.after || have + u->size + s.after->size < rounded) continue;
      s.bytes = u->size;
    }
    // The spot that maps the fewest bytes, the lowest address among equals.
    if (!best.unmapped || s.bytes < best.bytes) best = s;
  }
  return best;
}

Grown ExpandableSegments::grow(uint64_t rounded, uintptr_t key) {
  const uint64_t page = pages_.page_for(rounded);
  Spot s = find_spot(rounded, key);
  if (!s.unmapped) {
    // No range of this stream with these pages has room: a new one.
    add_range(std::max(pages_.range_size(), round_up(rounded, page)), key, page);
    s = find_spot(rounded, key);
    if (!s.unmapped)
      fail(Status::out_of_memory, "no address range could hold a block of " + describe_bytes(rounded));
  }
  Piece* u = s.unmapped;
  u->segment->pages->map(offset_of(u), s.bytes);  // throws with nothing changed
  mapped_ += s.bytes;
  pages_mapped_ += s.bytes / page;
  Grown g;
  g.mapped = s.bytes;
  g.mapped_at = u->ptr;
  erase_unmapped(u);
  if (s.bytes < u->size) {
    Piece* rest = insert_after(u, u->ptr + s.bytes, u->size - s.bytes);
    u->size = s.bytes;
    insert_unmapped(rest);
  }
  u->mapped = true;
  u->key = key;
  u->freed_at = 0;  // new pages: no work yet
  Piece* p = u;
  if (s.before) {
    erase_free(s.before);
    g.consumed[g.consumed_count++] = s.before->key;
    absorb(s.before, p);
    p = s.before;
    p->key = key;
  }
  if (s.after && p->next == s.after) {
    erase_free(s.after);
    g.consumed[g.consumed_count++] = s.after->key;
    absorb(p, s.after);
  }
  g.taken = hand_out(p, rounded);
  return g;
}

std::vector<ExpandableSegments::Span> ExpandableSegments::whole_pages(uint64_t below) const {
  std::vector<Span> spans;
  for (const auto& [size, ptr, p] : by_size_) {
    if (size >= below) break;  // by size: the rest are larger
    if (!p->segment) continue;
    const uint64_t page = page_of(p);
    // The first and the last page boundary inside the piece, as range
    // offsets: a piece within one page has none (first > last).
    const uint64_t at = offset_of(p);
    const uint64_t first = round_up(at, page), last = round_down(at + p->size, page);
    if (last > first) spans.push_back({last - first, p->ptr, p, first - at, last - at});
  }
  // Largest first (fewest driver calls), the lowest address among equals.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.ptr < b.ptr;
  });
  return spans;
}

uint64_t ExpandableSegments::unmap_span(const Span& s, uint64_t bytes,
                                        std::vector<std::pair<char*, uint64_t>>* spans_out) {
  // The span's last `bytes` (whole pages) go; the rest of the piece stays
  // free (and so do the pages the driver refused).
  const uint64_t lo = s.hi - bytes;
  const uint64_t done = s.piece->segment->pages->unmap(offset_of(s.piece) + lo, bytes);
  if (done == 0) return 0;
  if (spans_out) spans_out->emplace_back(s.piece->ptr + lo, done);
  mapped_ -= done;
  pages_unmapped_ += done / page_of(s.piece);
  make_unmapped(s.piece, lo, lo + done);
  return done;
}

// The bytes grow() would map for the block at `spot` (in a new range when
// no range has room), and whether the fragment `s` is a neighbour of the
// spot (unmapping it would merge into the spot, and give it nothing).
uint64_t ExpandableSegments::bytes_to_map(const Spot& spot, uint64_t rounded) const {
  return spot.unmapped ? spot.bytes : round_up(rounded, pages_.page_for(rounded));
}

bool ExpandableSegments::next_to(const Spot& spot, const Span& s) {
  return spot.unmapped && (s.piece == spot.unmapped->prev || s.piece == spot.unmapped->next);
}

uint64_t ExpandableSegments::fragment_bytes(uint64_t rounded, uintptr_t key) const {
  const Spot spot = find_spot(rounded, key);
  uint64_t bytes = 0;
  for (const Span& s : whole_pages(rounded))
    if (!next_to(spot, s)) bytes += s.bytes;
  return std::min(bytes, bytes_to_map(spot, rounded));
}

uint64_t ExpandableSegments::recycle(uint64_t rounded, uintptr_t key,
                                     std::vector<std::pair<char*, uint64_t>>* spans_out,
                                     const std::function<bool(const Piece&)>& done,
                                     uint64_t at_most) {
  const Spot spot = find_spot(rounded, key);
  uint64_t left = std::min(bytes_to_map(spot, rounded), at_most), unmapped = 0;
  const std::vector<Span> spans = whole_pages(rounded);
  if (spans_out) spans_out->reserve(spans_out->size() + spans.size());  // no throw below
  for (const Span& s : spans) {
    if (left == 0) break;
    if (next_to(spot, s)) continue;
    if (done && !done(*s.piece)) continue;
    // Whole pages of the fragment's range (larger ones than the spot's
    // may unmap more than it needs).
    const uint64_t bytes = std::min(round_up(left, page_of(s.piece)), s.bytes);
    const uint64_t done = unmap_span(s, bytes, spans_out);
    left -= std::min(left, done);
    unmapped += done;
    if (done < bytes) break;  // the driver refused a page: grow() maps the rest
  }
  return unmapped;
}

uint64_t ExpandableSegments::unmap_done(uint64_t bytes,
                                        std::vector<std::pair<char*, uint64_t>>* spans_out,
                                        const std::function<bool(const Piece&)>& done) {
  const std::vector<Span> spans = whole_pages(UINT64_MAX);
  if (spans_out) spans_out->reserve(spans_out->size() + spans.size());  // no throw below
  uint64_t unmapped = 0;
  for (auto s = spans.rbegin(); s != spans.rend() && unmapped < bytes; ++s) {
    if (!done(*s->piece)) continue;
    const uint64_t n = std::min(round_up(bytes - unmapped, page_of(s->piece)), s->bytes);
    const uint64_t done = unmap_span(*s, n, spans_out);
    unmapped += done;
    if (done < n) break;  // the driver refused a page (logged): the rest waits
  }
  return unmapped;
}

void ExpandableSegments::set_peer_access(int ordinal, bool read_write) {
  if (peer_access(ordinal) == read_write) return;
  size_t done = 0;
  try {
    for (; done < segments_.size(); ++done) segments_[done]->pages->set_access(ordinal, read_write);
  } catch (...) {
    // The ranges done so far as they were: one access for all the cache's memory.
    for (size_t k = 0; k < done; ++k) {
      try {
        segments_[k]->pages->set_access(ordinal, !read_write);
      } catch (...) {
        log::swallowed("restoring a range's peer access after a failed change");
      }
    }
    throw;
  }
  if (read_write)
    peers_.insert(ordinal);
  else
    peers_.erase(ordinal);
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
  const std::vector<Span> spans = whole_pages(UINT64_MAX);
  uint64_t unmapped = 0;
  if (spans_out) spans_out->reserve(spans_out->size() + spans.size());  // no throw below
  for (const Span& s : spans) {
    if (cached <= keep) break;
    const uint64_t done = unmap_span(s, s.bytes, spans_out);
    cached -= done;
    unmapped += done;
    if (done < s.bytes) break;  // the driver refused a page (logged): it stays cached
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
