// Cached blocks by size class: a block (address, rounded size, the stream
// it was freed on), a stack of blocks of one class, and the bins of every
// small class. Used by each thread's cache and by the central cache.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cache_line.hpp"
#include "size_classes.hpp"

namespace cumem::core::caching {

// The key of a block with no pending work (freed over a synchronous
// upstream, or after a wait for the device): reusable on any stream. Other
// keys name the stream it was freed on (stream_order.hpp).
inline constexpr uintptr_t kAnyStream = 0;

struct Block {
  void* ptr = nullptr;
  uint64_t size = 0;  // rounded
  uintptr_t key = kAnyStream;
  // A block freed on a foreign stream: its free's mark (Stream::mark_free),
  // which a record must cover before the block is reused on another
  // stream; 0 for every other block.
  uint64_t mark = 0;
};

// Cached blocks of one size class, newest last. The storage is whole cache
// lines of its own, so that threads' caches never share one.
class Stack {
 public:
  Stack() = default;
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;
  ~Stack() { std::free(blocks_); }
  size_t size() const { return size_; }
  Block& operator[](size_t i) { return blocks_[i]; }
  const Block& operator[](size_t i) const { return blocks_[i]; }
  void push(const Block& b) {
    if (size_ == capacity_) grow();
    blocks_[size_++] = b;
  }
  Block pop() { return blocks_[--size_]; }
  Block take_at(size_t i) {
    const Block b = blocks_[i];
    std::memmove(blocks_ + i, blocks_ + i + 1, (size_ - i - 1) * sizeof(Block));
    --size_;
    return b;
  }
  void clear() { size_ = 0; }

 private:
  void grow() {
    const size_t capacity = capacity_ ? capacity_ * 2 : kCacheLine / sizeof(Block) * 2;
    const size_t bytes = (capacity * sizeof(Block) + kCacheLine - 1) / kCacheLine * kCacheLine;
    auto* blocks = static_cast<Block*>(allocate_cache_lines(bytes));
    if (size_) std::memcpy(blocks, blocks_, size_ * sizeof(Block));
    std::free(blocks_);
    blocks_ = blocks;
    capacity_ = bytes / sizeof(Block);
  }
  Block* blocks_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

// Entries looked at, newest first, for a block freed on the asking stream;
// then for one that may be reused on it (a block freed on a foreign stream
// waits for a record of its marker: at most Stream::kMarkEvery of a stream's
// are not yet covered).
inline constexpr int kSameStreamScan = 8;
inline constexpr int kReadyScan = 32;

// Cached small blocks by size class.
struct Bins {
  Stack classes[kSmallClasses];

  void push(const Block& b) { classes[small_class(b.size)].push(b); }
  // A block of `size` (rounded), preferably one of the newest kSameStreamScan
  // freed on `key`, else the newest of the newest kReadyScan that
  // `ready(block)` says may be reused on another stream; false when there
  // is none.
  template <class Ready>
  bool take(uint64_t size, uintptr_t key, Block& out, Ready&& ready) {
    Stack& b = classes[small_class(size)];
    const size_t n = b.size();
    if (n == 0) return false;
    for (size_t i = n; i-- > 0 && i + kSameStreamScan >= n;) {
      if (b[i].key == key) {
        out = b.take_at(i);
        return true;
      }
    }
    for (size_t i = n; i-- > 0 && i + kReadyScan >= n;) {
      if (b[i].mark == 0 || ready(b[i])) {
        out = b.take_at(i);
        return true;
      }
    }
    return false;
  }
  // A block of `size` freed on `key` or with no pending work (newest
  // first); false when there is none (a capture's pool reuses only those).
  bool take_on(uint64_t size, uintptr_t key, Block& out) {
    Stack& b = classes[small_class(size)];
    for (size_t i = b.size(); i-- > 0;) {
      if (b[i].key == key || b[i].key == kAnyStream) {
        out = b.take_at(i);
        return true;
      }
    }
    return false;
  }
  // Calls fn(block) for every block freed on `key` or with no pending work,
  // and takes them out.
  template <class Fn>
  void drain_on(uintptr_t key, Fn&& fn) {
    for (Stack& c : classes) {
      size_t kept = 0;
      for (size_t i = 0; i < c.size(); ++i) {
        if (c[i].key == key || c[i].key == kAnyStream)
          fn(c[i]);
        else
          c[kept++] = c[i];
      }
      while (c.size() > kept) (void)c.pop();
    }
  }
  // Calls fn(block) for every block (a snapshot looks).
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const Stack& c : classes)
      for (size_t i = 0; i < c.size(); ++i) fn(c[i]);
  }
  // Calls fn(block) for every block, then empties the bins.
  template <class Fn>
  void drain(Fn&& fn) {
    for (Stack& c : classes) {
      for (size_t i = 0; i < c.size(); ++i) fn(c[i]);
      c.clear();
    }
  }
};

}  // namespace cumem::core::caching
