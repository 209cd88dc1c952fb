// What each thread keeps for itself on the allocate and release paths, in
// one thread_local: its shard (thread_shard.hpp), its cache of free slab
// slots (slab.hpp) and whether its frees use a remembered stream
// (RememberedStreamScope, stream.hpp). A function that touches several
// of them asks the TLS descriptor for the block once (a buffer's creation:
// its slot and its resource reference; its destruction: the same two and
// the stream mark), where separate thread_locals cost a call each.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cumem::core {

inline constexpr size_t kThreadShards = 64;
// The shard of threads that found none free; arrays hold kThreadShards + 1.
inline constexpr size_t kSharedShard = kThreadShards;

struct ThreadShard {
  size_t index = kSharedShard;
  bool exclusive = false;  // true: only this thread writes shard `index`
};

namespace slab {

inline constexpr size_t kNumClasses = 21;  // slab.cpp's kClasses

// A free slot keeps its next-pointer right after its header, where the
// object was; the header (and its free tag) stays intact.
struct FreeSlot {
  FreeSlot* next;
};

// Up to kThreadSlots free slots of each class (slab.cpp).
struct ThreadCache {
  FreeSlot* free[kNumClasses];
  uint32_t count[kNumClasses];
  int state;  // 0: unused; 1: in use; 2: the thread is exiting (shared lists only)
};

}  // namespace slab

struct ThisThread {
  ThreadShard shard;
  int shard_state = 0;  // 0: not asked yet; 1: holds its shard; 2: exited (kSharedShard)
  bool remembered_stream = false;
  slab::ThreadCache slab{};  // zero: not set up
};

// Constant-initialized, trivially destroyed: no TLS wrapper call, nothing
// run at thread exit (the parts that give something back register their
// own thread_local guards).
inline thread_local ThisThread this_thread_state;

// The calling thread's block, its address asked of the TLS descriptor once
// where it is called: left to itself the compiler asks again at each use.
inline ThisThread& this_thread() noexcept {
  ThisThread* t = &this_thread_state;
  asm("" : "+r"(t));
  return *t;
}

}  // namespace cumem::core
