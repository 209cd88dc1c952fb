// The central part of the caching adaptor: large blocks are pieces of
// segments (upstream allocations). A free piece is handed out best fit (the
// smallest free piece that fits, the lowest address among equals, so that
// used memory packs towards the start and the outcome does not depend on
// where the bookkeeping lives), preferring pieces freed on the asking
// stream, and split to the rounded size; a freed piece merges with free
// neighbours freed on the same stream; a segment free whole can go back to
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

// A piece of a segment: handed out (in use, or kept by a thread), or free here.
struct Piece {
  char* ptr = nullptr;
  uint64_t size = 0;
  Piece* prev = nullptr;  // neighbours in the same segment
  Piece* next = nullptr;
  bool free = false;
  uintptr_t key = 0;  // free: the stream it was freed on
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
  ~Segments();  // forgets the pieces (the memory is the adaptor's to give back)

  // A new segment of `size` bytes at `ptr`, whose first `rounded` bytes are
  // handed out now; the rest, if any, is free on `key`. True when a free
  // rest was made.
  bool add(void* ptr, uint64_t size, uint64_t rounded, uintptr_t key);
  // The best-fitting free piece of at least `rounded` bytes: freed on `key`
  // if one fits, else freed on any stream; split to `rounded`.
  Taken take(uint64_t rounded, uintptr_t key);
  // The handed-out piece at `ptr` is free again, freed on `key`, merged with
  // free neighbours freed on the same key. Returns the merges (0 to 2): the
  // free pieces on `key` grew by 1 - merges. Throws invalid_argument for an
  // address that is not a piece.
  int put_back(void* ptr, uintptr_t key);

  // After a wait for the device (no piece has pending work): every free
  // piece, and the handed-out pieces at `returned` (blocks threads kept),
  // become free on no stream, and free neighbours merge.
  void forget_streams(const std::vector<void*>& returned);
  // Segments free whole, largest first, while `cached` > `keep`: each is
  // forgotten, passed to give(ptr, size), and its size taken off `cached`.
  template <class Fn>
  void release_whole(uint64_t keep, uint64_t& cached, Fn&& give);

  uint64_t free_bytes() const { return free_bytes_; }
  bool has_free() const { return !by_size_.empty(); }
  size_t piece_count() const { return pieces_.size(); }

 private:
  void insert_free(Piece* p);
  void erase_free(Piece* p);
  // `p` takes in its next neighbour `n`, which is deleted.
  void absorb(Piece* p, Piece* n);
  // The heads of segments free whole, as (size, head), largest first.
  std::vector<std::pair<uint64_t, Piece*>> whole_segments() const;
  void forget_segment(Piece* head);

  std::unordered_map<void*, Piece*> pieces_;  // every piece, by address
  // Free pieces by stream and size, and by size; ties by lowest address.
  std::set<std::tuple<uintptr_t, uint64_t, char*, Piece*>> by_stream_;
  std::set<std::tuple<uint64_t, char*, Piece*>> by_size_;
  uint64_t free_bytes_ = 0;
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
