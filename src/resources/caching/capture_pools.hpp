// Private pools for stream capture. Memory that a CUDA graph captured
// belongs to that graph: its replays write it long after the capture
// ended. So while a stream captures (whoever began the capture: libcumem,
// the runtime, PyTorch, CuPy), the caching adaptor serves it from the
// capture's own pool, never from the blocks eager work uses; blocks freed
// inside the capture go back to that pool and are reused only inside it,
// on the stream that freed them; and blocks the capture allocated stay in
// the pool after the capture too, freed or not, until the user releases
// the pool (the graph is gone). A released pool gives its memory back as
// its blocks are freed. PyTorch's caching allocator does the same with its
// graph pools.
//
// Bookkeeping only, tested alone: the adaptor holds the lock, asks the
// upstream for memory and gives it back, and orders streams.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>

#include "bins.hpp"
#include "segments.hpp"

namespace cumem::core::caching {

// One capture's memory.
struct PrivatePool {
  explicit PrivatePool(uint64_t capture_id) : id(capture_id) {}
  PrivatePool(const PrivatePool&) = delete;
  PrivatePool& operator=(const PrivatePool&) = delete;

  const uint64_t id;      // the capture that made it
  Segments large;         // large blocks: pieces of segments made for this pool
  Bins small;             // small blocks freed, reusable in the pool
  uint64_t small_free = 0;    // bytes in `small`
  uint64_t in_use = 0;        // bytes handed out (rounded) and not freed
  uint64_t reserved = 0;      // bytes of upstream memory the pool holds
  uint64_t blocks = 0;        // small blocks the pool holds (in use or free)
  bool released = false;      // the user said the graph is gone

  uint64_t free_bytes() const { return small_free + large.free_bytes(); }
};

// The adaptor's private pools, by capture id, and which pool handed out
// each block that is in use.
class CapturePools {
 public:
  // The pool of capture `id`, made on first use.
  PrivatePool& pool(uint64_t id);
  // The pool of capture `id`, or null.
  PrivatePool* find(uint64_t id);
  // Records that `p` handed out the block at `ptr` (rounded size `size`).
  void handed_out(PrivatePool& p, void* ptr, uint64_t size);
  // The pool that handed out the block at `ptr`, which is in use; null
  // when no pool did (then it is the adaptor's ordinary memory).
  PrivatePool* owner(void* ptr) const;
  // The block at `ptr` is no longer in use (the caller puts it back in its
  // pool or gives it back); returns its rounded size.
  uint64_t returned(PrivatePool& p, void* ptr);
  // Forgets pool `id` (empty: nothing in use, nothing held).
  void erase(uint64_t id);

  // Blocks of every pool in use: 0 lets a free skip the lookup.
  size_t live() const { return live_.size(); }
  size_t pool_count() const { return pools_.size(); }
  // Bytes every pool holds, and holds free.
  uint64_t reserved() const;
  uint64_t free_bytes() const;
  template <class Fn>
  void for_each(Fn&& fn) {
    for (auto& [id, p] : pools_) fn(*p);
  }

 private:
  struct Live {
    PrivatePool* pool;
    uint64_t size;
  };
  std::map<uint64_t, std::unique_ptr<PrivatePool>> pools_;
  std::unordered_map<void*, Live> live_;
};

}  // namespace cumem::core::caching
