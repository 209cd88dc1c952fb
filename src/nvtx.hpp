// NVTX ranges around what a user sees libcumem do (allocations, frees,
// copies, fills), named after the C function, in the NVTX domain
// "libcumem", for Nsight Systems and other NVTX tools. Whether a tool is
// attached is decided once, at the first range; without one a range costs a
// relaxed load and a predictable branch, and no NVTX function is called.
// Built without NVTX (meson option nvtx=disabled), a range is nothing.
#pragma once

#include <atomic>
#include <cstdint>

namespace cumem::core::nvtx {

// One per range name; kNames in nvtx.cpp holds the names in this order.
enum class Op : uint8_t {
  resource_allocate,
  resource_allocate_raw,
  resource_deallocate_raw,
  resource_allocate_native,
  resource_deallocate_native,
  buffer_close,
  buffer_copy_to,
  buffer_copy_from,
  buffer_copy_region,
  buffer_fill,
  torch_alloc,
  torch_free,
  cupy_malloc,
  cupy_free,
  copy_batch,
  copy_batch_raw,
  count
};

#if CUMEM_NVTX

enum : uint8_t { kUndecided = 0, kOff = 1, kOn = 2 };
extern std::atomic<uint8_t> state;

// First use: looks for a tool (NVTX_INJECTION64_PATH set), and if there is
// one creates the domain (NVTX loads the tool then) and registers the names.
// Returns whether ranges are on.
bool decide() noexcept;
void push(Op op) noexcept;
void pop() noexcept;

// kOn also goes through decide(), whose once-guard orders the reads of the
// domain and names after their writes.
inline bool on() noexcept {
  if (__builtin_expect(state.load(std::memory_order_relaxed) == kOff, 1)) return false;
  return decide();
}

class Range {
 public:
  explicit Range(Op op) noexcept : on_(on()) {
    if (__builtin_expect(on_, 0)) push(op);
  }
  ~Range() {
    if (__builtin_expect(on_, 0)) pop();
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  const bool on_;
};

#else

class Range {
 public:
  explicit Range(Op) noexcept {}
};

#endif

}  // namespace cumem::core::nvtx
