// The central part of the caching adaptor: large blocks are pieces of
// segments (upstream allocations; expandable.hpp adds segments that are
// reserved address ranges with pages mapped on demand). A free piece is handed out best fit (the
// smallest free piece that fits, the lowest address among equals, so that
// used memory packs towards the start and the outcome does not depend on
// where the bookkeeping lives), preferring pieces freed on the asking
// stream, and split to the rounded size; a freed piece merges with free
// neighbours freed on the same stream (or with no pending work); a segment free whole can go back to
// the upstream. Bookkeeping only: the adaptor holds the central lock, the
// stream references and the upstream.
#pragma once

#include <cstdint>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bins.hpp"

namespace cumem::core::caching {

struct ExpandableSegment;  // expandable.hpp

// A piece of a segment: handed out (in use, or kept by a thread), free
// here, or (in an expandable segment) address space with nothing mapped.
struct Piece {
  char* ptr = nullptr;
  uint64_t size = 0;
  Piece* prev = nullptr;  // neighbours in the same segment
  Piece* next = nullptr;
  bool free = false;
  bool mapped = true;  // false: unmapped address space of an expandable segment
  uintptr_t key = 0;   // free: the stream it was freed on
  // free: the segments' clock when it was freed (merged pieces: the later
  // of the two), so that a marker recorded at a later tick covers its work
  uint64_t freed_at = 0;
  ExpandableSegment* segment = nullptr;  // null: an upstream allocation
};

// What put_back() merged: the freed piece's key now (`key`: the freeing
// stream's, or a neighbour's when the piece had none), and the keys of the
// free neighbours it took in (the free pieces on those keys are one fewer).
struct Merged {
  uintptr_t key = 0;
  uintptr_t absorbed[2] = {};
  int count = 0;
};

// What take() handed out.
struct Taken {
  void* ptr = nullptr;      // nullptr: no free piece fits
  uintptr_t freed_key = 0;  // the stream the piece was freed on
  bool split = false;       // the piece's rest stayed free, on freed_key
};

class Segments {
 public:
  Segments() = default;
  Segments(const Segments&) = delete;
  Segments& operator=(const Segments&) = delete;
  // Forgets the pieces (the memory is the adaptor's to give back). Virtual:
  // the adaptor holds ExpandableSegments as Segments.
  virtual ~Segments();

  // A new segment of `size` bytes at `ptr`, whose first `rounded` bytes are
  // handed out now; the rest, if any, is free on `key`. True when a free
  // rest was made.
  bool add(void* ptr, uint64_t size, uint64_t rounded, uintptr_t key);
  // The best-fitting free piece of at least `rounded` bytes: freed on `key`
  // if one fits, else freed on any stream; split to `rounded`.
  Taken take(uint64_t rounded, uintptr_t key);
  // The same, but only a piece freed on `key` or with no pending work (a
  // capture's pool: a piece freed on another stream cannot be ordered
  // inside the capture without an event from outside it).
  Taken take_on(uint64_t rounded, uintptr_t key);
  // The handed-out piece at `ptr` is free again, freed on `key`, merged with
  // free neighbours freed on the same key or with no pending work (either
  // way the merged piece is ordered after `key`'s work). Throws
  // invalid_argument for an address that is not a piece in use.
  Merged put_back(void* ptr, uintptr_t key);

  // After a wait for the device (no piece has pending work): every free
  // piece, and the handed-out pieces at `returned` (blocks threads kept),
  // become free on no stream, and free neighbours merge.
  void forget_streams(const std::vector<void*>& returned);
  // Upstream segments free whole, largest first, while `cached` > `keep`:
  // each is forgotten, passed to give(ptr, size), and its size taken off
  // `cached`.
  template <class Fn>
  void release_whole(uint64_t keep, uint64_t& cached, Fn&& give);

  // The clock that stamps frees (Piece::freed_at): starts at 1, and moves
  // on when the adaptor records a marker after the frees stamped so far
  // (recycle_markers.hpp). Returns the tick the marker covers.
  uint64_t clock() const { return clock_; }
  uint64_t advance_clock() { return clock_++; }

  uint64_t free_bytes() const { return free_bytes_; }
  bool has_free() const { return !by_size_.empty(); }
  uint64_t largest_free() const { return by_size_.empty() ? 0 : std::get<0>(*by_size_.rbegin()); }
  size_t free_count() const { return by_size_.size(); }
  size_t piece_count() const { return pieces_.size(); }
  // Every piece by address (a snapshot walks them: inventory.hpp).
  const std::unordered_map<void*, Piece*>& pieces() const { return pieces_; }

 protected:
  void insert_free(Piece* p);
  void erase_free(Piece* p);
  // `p` takes in its next neighbour `n`, which is deleted.
  void absorb(Piece* p, Piece* n);
  // Hands out `p` (not in the free sets): split to `rounded`, the rest free
  // on p's key.
  Taken hand_out(Piece* p, uint64_t rounded);
  // A new piece [ptr, ptr + size) after `p` in p's segment.
  Piece* insert_after(Piece* p, char* ptr, uint64_t size);

  std::unordered_map<void*, Piece*> pieces_;  // every piece, by address
  // Free pieces by stream and size, and by size; ties by lowest address.
  std::set<std::tuple<uintptr_t, uint64_t, char*, Piece*>> by_stream_;
  std::set<std::tuple<uint64_t, char*, Piece*>> by_size_;
  uint64_t free_bytes_ = 0;
  uint64_t clock_ = 1;

 private:
  // The heads of upstream segments free whole, as (size, head), largest first.
  std::vector<std::pair<uint64_t, Piece*>> whole_segments() const;
  void forget_segment(Piece* head);
};

template <class Fn>
void Segments::release_whole(uint64_t keep, uint64_t& cached, Fn&& give) {
  for (const auto& [size, head] : whole_segments()) {
    if (cached <= keep) break;
    char* const ptr = head->ptr;
    forget_segment(head);
    give(static_cast<void*>(ptr), size);
    cached -= size;
  }
}

}  // namespace cumem::core::caching
