// The per-thread front of the caching adaptor: what one thread keeps for
// itself, so that an allocate + free pair on that thread takes no shared
// lock and writes no shared cache line.
// - Small blocks (up to kSmallLimit) by size class, up to kShardCap bytes.
//   Beyond it, freed small blocks go to the central cache; and a small miss
//   there gathers the other threads' small blocks into it (the adaptor's
//   return_small_blocks), so that a thread that only frees what another
//   allocates (as PyTorch's backward pass does) keeps nothing the other
//   needs.
// - Its last kThreadLarge freed large blocks (up to kShardCap bytes), handed
//   out again only for the same rounded size and stream; the oldest make
//   room for a new one and go to the central pieces (segments.hpp). In an
//   expandable cache the adaptor also drains them to the central pieces
//   when the thread asks for a large block they cannot serve.
// Bookkeeping only: the adaptor holds the shard's lock and stream
// references (stream_order.hpp) around these calls.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "bins.hpp"
#include "cache_line.hpp"

namespace cumem::core::caching {

inline constexpr uint64_t kShardCap = uint64_t{64} << 20;
inline constexpr size_t kThreadLarge = 8;

// A byte count written only under the shard's lock, which any thread may
// peek at without it (possibly stale, never torn): plain loads and stores,
// no read-modify-write, so the pair on the thread's own shard pays nothing
// for it.
class Tally {
 public:
  operator uint64_t() const { return value_.load(std::memory_order_relaxed); }
  Tally& operator=(uint64_t v) {
    value_.store(v, std::memory_order_relaxed);
    return *this;
  }
  Tally& operator+=(uint64_t n) { return *this = *this + n; }
  Tally& operator-=(uint64_t n) { return *this = *this - n; }

 private:
  std::atomic<uint64_t> value_{0};
};

class ThreadCache {
 public:
  // A kept block of `rounded` bytes for stream `key`: a small block of its
  // class (preferably freed on `key`), or a large block of exactly that
  // size freed on `key`, newest first. False when there is none.
  // `ready(block)`: whether a small block freed on a foreign stream may be
  // reused on another (Bins::take).
  template <class Ready>
  bool take(uint64_t rounded, uintptr_t key, Block& out, Ready&& ready) {
    bool hit = false;
    if (is_small(rounded)) {
      hit = small_.take(rounded, key, out, ready);
    } else {
      for (size_t i = large_.size(); i-- > 0;)
        if (large_[i].size == rounded && large_[i].key == key) {
          out = large_[i];
          large_.erase(large_.begin() + static_cast<ptrdiff_t>(i));
          hit = true;
          break;
        }
    }
    if (hit) {
      cached_ -= rounded;
      if (is_small(rounded)) small_cached_ -= rounded;
    }
    return hit;
  }

  // Keeps a freed small block; false (nothing kept) when it would pass the
  // thread's cap.
  bool keep_small(const Block& b) {
    if (small_cached_ + b.size > kShardCap) return false;
    cached_ += b.size;
    small_cached_ += b.size;
    small_.push(b);
    return true;
  }

  // Whether a freed large block of `size` may be kept at all.
  static bool keeps_large(uint64_t size) { return size <= kShardCap; }
  // Keeps a freed large block (keeps_large(b.size)); then, while
  // over_large_limit(), the caller takes the oldest out with evict_oldest().
  void keep_large(const Block& b) {
    cached_ += b.size;
    large_.push_back(b);
  }
  bool over_large_limit() const {
    return large_.size() > kThreadLarge || cached_ - small_cached_ > kShardCap;
  }
  Block evict_oldest() {
    const Block old = large_.front();
    large_.erase(large_.begin());
    cached_ -= old.size;
    return old;
  }

  // Calls fn(block) for every kept block, small and large (a snapshot looks).
  template <class Fn>
  void for_each(Fn&& fn) const {
    small_.for_each(fn);
    for (const Block& b : large_) fn(b);
  }
  // Calls fn(block) for every kept large block and forgets them.
  template <class Fn>
  void drain_large(Fn&& fn) {
    for (const Block& b : large_) fn(b);
    cached_ -= large_bytes();
    large_.clear();
  }
  // Calls fn(block) for every kept small block and forgets them.
  template <class Fn>
  void drain_small(Fn&& fn) {
    small_.drain(fn);
    cached_ -= small_cached_;
    small_cached_ = 0;
  }

  // Calls fn(block) for every kept small block freed on `key` or with no
  // pending work, and forgets them.
  template <class Fn>
  void drain_small_on(uintptr_t key, Fn&& fn) {
    small_.drain_on(key, [&](const Block& b) {
      fn(b);
      cached_ -= b.size;
      small_cached_ -= b.size;
    });
  }

  uint64_t cached() const { return cached_; }  // bytes, small and large
  uint64_t small_cached() const { return small_cached_; }
  uint64_t large_bytes() const { return cached_ - small_cached_; }
  size_t large_count() const { return large_.size(); }
  // Without the shard's lock: whether it may hold small (or large) blocks.
  // Stale at worst, so a caller that finds some takes the lock and looks.
  bool may_hold(bool small) const { return small ? small_cached_ != 0 : cached_ != small_cached_; }

 private:
  Bins small_;
  std::vector<Block, CacheLineAllocator<Block>> large_;  // oldest first
  Tally cached_;
  Tally small_cached_;
};

}  // namespace cumem::core::caching
