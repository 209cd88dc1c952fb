#include "segments.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "../../error.hpp"

namespace cumem::core::caching {

Segments::~Segments() {
  for (auto& [ptr, piece] : pieces_) delete piece;
}

void Segments::insert_free(Piece* p) {
  p->free = true;
  by_stream_.emplace(p->key, p->size, p->ptr, p);
  by_size_.emplace(p->size, p->ptr, p);
  free_bytes_ += p->size;
}

void Segments::erase_free(Piece* p) {
  by_stream_.erase({p->key, p->size, p->ptr, p});
  by_size_.erase({p->size, p->ptr, p});
  free_bytes_ -= p->size;
  p->free = false;
}

void Segments::absorb(Piece* p, Piece* n) {
  p->size += n->size;
  p->freed_at = std::max(p->freed_at, n->freed_at);
  p->next = n->next;
  if (n->next) n->next->prev = p;
  pieces_.erase(n->ptr);
  delete n;
}

bool Segments::add(void* ptr, uint64_t size, uint64_t rounded, uintptr_t key) {
  Piece* p = new Piece;
  p->ptr = static_cast<char*>(ptr);
  p->size = rounded;
  pieces_.emplace(ptr, p);
  if (size <= rounded) return false;
  p->key = key;
  insert_free(insert_after(p, p->ptr + rounded, size - rounded));
  return true;
}

Taken Segments::take(uint64_t rounded, uintptr_t key) {
  Piece* p = nullptr;
  auto same = by_stream_.lower_bound({key, rounded, nullptr, nullptr});
  if (same != by_stream_.end() && std::get<0>(*same) == key) {
    p = std::get<3>(*same);
  } else {
    auto any = by_size_.lower_bound({rounded, nullptr, nullptr});
    if (any == by_size_.end()) return {};
    p = std::get<2>(*any);
  }
  erase_free(p);
  return hand_out(p, rounded);
}

Taken Segments::take_on(uint64_t rounded, uintptr_t key) {
  Piece* p = nullptr;
  for (uintptr_t k : {key, kAnyStream}) {
    auto it = by_stream_.lower_bound({k, rounded, nullptr, nullptr});
    if (it != by_stream_.end() && std::get<0>(*it) == k) {
      p = std::get<3>(*it);
      break;
    }
  }
  if (!p) return {};
  erase_free(p);
  return hand_out(p, rounded);
}

Piece* Segments::insert_after(Piece* p, char* ptr, uint64_t size) {
  Piece* n = new Piece;
  n->ptr = ptr;
  n->size = size;
  n->key = p->key;
  n->freed_at = p->freed_at;
  n->segment = p->segment;
  n->prev = p;
  n->next = p->next;
  if (p->next) p->next->prev = n;
  p->next = n;
  pieces_.emplace(ptr, n);
  return n;
}

Taken Segments::hand_out(Piece* p, uint64_t rounded) {
  Taken t{p->ptr, p->key, false};
  if (p->size > rounded) {  // split: the rest stays free, on the same stream
    Piece* rest = insert_after(p, p->ptr + rounded, p->size - rounded);
    p->size = rounded;
    insert_free(rest);
    t.split = true;
  }
  return t;
}

namespace {
// Whether the free neighbour `n` can join a piece freed on `key`: the same
// stream, or one side has no pending work.
bool mergeable(const Piece* n, uintptr_t key) {
  return n && n->free && (n->key == key || n->key == kAnyStream || key == kAnyStream);
}
}  // namespace

Merged Segments::put_back(void* ptr, uintptr_t key) {
  const auto it = pieces_.find(ptr);
  if (it == pieces_.end())
    fail(Status::invalid_argument, "the caching adaptor did not hand out address " +
                                       std::to_string(reinterpret_cast<uintptr_t>(ptr)) +
                                       " as a large block");
  Piece* p = it->second;
  if (p->free || !p->mapped)
    fail(Status::invalid_argument, "the large block at address " +
                                       std::to_string(reinterpret_cast<uintptr_t>(ptr)) +
                                       " is not in use (freed twice?); nothing was freed");
  Merged m;
  m.key = key;
  p->freed_at = clock_;
  if (mergeable(p->prev, m.key)) {
    Piece* prev = p->prev;
    if (m.key == kAnyStream) m.key = prev->key;
    m.absorbed[m.count++] = prev->key;
    erase_free(prev);
    absorb(prev, p);
    p = prev;
  }
  if (mergeable(p->next, m.key)) {
    Piece* next = p->next;
    if (m.key == kAnyStream) m.key = next->key;
    m.absorbed[m.count++] = next->key;
    erase_free(next);
    absorb(p, next);
  }
  p->key = m.key;
  insert_free(p);
  return m;
}

void Segments::forget_streams(const std::vector<void*>& returned) {
  std::vector<Piece*> free_pieces;
  for (const auto& [size, ptr, p] : by_size_) free_pieces.push_back(p);
  for (Piece* p : free_pieces) erase_free(p);
  for (void* ptr : returned) free_pieces.push_back(pieces_.at(ptr));
  for (Piece* p : free_pieces) {
    p->key = kAnyStream;
    insert_free(p);
  }
  // Pieces of a segment merge.
  std::vector<Piece*> heads;
  for (const auto& [ptr, p] : pieces_)
    if (!p->prev) heads.push_back(p);
  for (Piece* head : heads) {
    for (Piece* p = head; p && p->next;) {
      Piece* n = p->next;
      if (p->free && n->free) {
        erase_free(p);
        erase_free(n);
        absorb(p, n);
        insert_free(p);
      } else {
        p = n;
      }
    }
  }
}

std::vector<std::pair<uint64_t, Piece*>> Segments::whole_segments() const {
  std::vector<std::pair<uint64_t, Piece*>> whole;
  for (const auto& [ptr, p] : pieces_)
    if (!p->prev && !p->next && p->free && !p->segment) whole.emplace_back(p->size, p);
  std::sort(whole.begin(), whole.end(), std::greater<>());
  return whole;
}

void Segments::forget_segment(Piece* head) {
  erase_free(head);
  pieces_.erase(head->ptr);
  delete head;
}

}  // namespace cumem::core::caching
