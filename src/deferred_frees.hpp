// Frees that must wait for a capture to end. A graph can free only memory
// that a capture allocated (graph memory): memory allocated outside any
// capture and freed on a stream that is capturing (a framework's tensor
// that goes out of scope during torch.cuda.graph, say) would make the
// driver refuse the free and invalidate the capture. Such a free is held
// here instead and done, on the same stream, at the first framework call
// after that stream stopped capturing (PyTorch's cudaMallocAsync backend
// does the same). Used by the framework entry points (framework.cpp),
// which know for each allocation whether a capture made it.
#pragma once

#include <atomic>
#include <cstddef>

#include "resources/resource.hpp"
#include "stream.hpp"

namespace cumem::core {

struct DeferredFree {
  Ref<Resource> resource;
  void* ptr = nullptr;
  size_t size = 0;
  // The allocation's stream and the capturing stream of the free (null: the
  // legacy default stream), held as the framework's records hold them.
  Ref<Stream> allocated_on;
  Ref<Stream> free_on;
};

// Holds `free` until its stream stops capturing.
void defer_free(DeferredFree free);

// How many frees are held (written under the list's lock, read without it:
// every framework call reads it, inline, before anything else).
inline std::atomic<size_t> deferred_frees_held{0};

// run_deferred_frees() past its check.
void run_held_frees() noexcept;

// Does the deferred frees whose streams no longer capture. One relaxed
// load when none is held. Failures go to the log (the frees keep waiting
// only while their stream captures).
inline void run_deferred_frees() noexcept {
  if (deferred_frees_held.load(std::memory_order_relaxed) != 0) run_held_frees();
}

// How many frees are held now (tests, statistics).
size_t deferred_free_count() noexcept;

}  // namespace cumem::core
