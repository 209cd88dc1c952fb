// The caching adaptor's sizes: how a request is rounded, which rounded
// sizes are small (cached whole, by size class) and which are large (pieces
// of segments), and how large a segment a large miss asks the upstream for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../../error.hpp"

namespace cumem::core::caching {

inline constexpr uint64_t kMinBlock = 512;
inline constexpr uint64_t kSmallLimit = uint64_t{128} << 10;  // small: up to this, rounded
inline constexpr uint64_t kLargeStep = uint64_t{2} << 20;     // rounding step above 16 MiB
inline constexpr uint64_t kMidLimit = uint64_t{10} << 20;
inline constexpr uint64_t kMidSegment = uint64_t{20} << 20;

// Rounded up: to kMinBlock at least, to 8 steps per power of two up to
// 16 MiB (at most 12.5% more), to multiples of kLargeStep above. A size that
// cannot be rounded is out of memory.
inline uint64_t round_size(uint64_t size) {
  if (size <= kMinBlock) return kMinBlock;
  const uint64_t step =
      std::min(kLargeStep, (uint64_t{1} << (63 - __builtin_clzll(size - 1))) >> 3);
  if (size > UINT64_MAX - step)
    fail(Status::out_of_memory, "the size " + std::to_string(size) + " cannot be rounded up");
  return (size + step - 1) / step * step;
}

inline bool is_small(uint64_t rounded) { return rounded <= kSmallLimit; }

// The rounding of an expandable cache: small sizes as round_size, large ones
// to a multiple of kMinBlock only. Its large blocks are pieces of pages
// mapped on demand, so what it holds is the pages, and rounding a block up
// further would only waste them.
inline uint64_t round_expandable(uint64_t size) {
  if (size <= kSmallLimit) return round_size(size);
  if (size > UINT64_MAX - kMinBlock)
    fail(Status::out_of_memory, "the size " + std::to_string(size) + " cannot be rounded up");
  return (size + kMinBlock - 1) / kMinBlock * kMinBlock;
}

// The small size classes: kMinBlock, then 8 per power of two to kSmallLimit.
inline constexpr size_t kSmallClasses =
    1 + static_cast<size_t>(__builtin_ctzll(kSmallLimit) - 9) * 8;
inline size_t small_class(uint64_t rounded) {
  if (rounded <= kMinBlock) return 0;
  const int k = 63 - __builtin_clzll(rounded - 1);  // 2^k < rounded <= 2^(k+1)
  const uint64_t step = (uint64_t{1} << k) >> 3;
  return 1 + static_cast<size_t>(k - 9) * 8 + static_cast<size_t>(rounded / step - 9);
}

// The segment a large miss asks the upstream for first: kMidSegment for a
// request under kMidLimit (several such fit one upstream allocation), else
// the rounded size itself.
inline uint64_t segment_size(uint64_t rounded) {
  return !is_small(rounded) && rounded < kMidLimit ? kMidSegment : rounded;
}

}  // namespace cumem::core::caching
