// Stream-ordered reuse alone (src/resources/caching/stream_order.hpp): which
// reuses need ordering, and the references a cache keeps to the streams its
// blocks were freed on. (The driver calls that order a reuse run in the
// gpu suite: the conformance suite's stream-order tests.)
#include <gtest/gtest.h>

#include "resources/caching/stream_order.hpp"

namespace {

using namespace cumem::core;
using namespace cumem::core::caching;

TEST(CachingStreamOrder, OnlyAReuseOnAnotherStreamWithPendingWorkIsOrdered) {
  const uintptr_t a = 0x1000, b = 0x2000;
  const uintptr_t per_thread = (uintptr_t{5} << 3) | 2;
  EXPECT_EQ(reuse_order(a, a), ReuseOrder::none) << "stream order makes it safe";
  EXPECT_EQ(reuse_order(kAnyStream, a), ReuseOrder::none) << "no pending work";
  EXPECT_EQ(reuse_order(a, b), ReuseOrder::after_stream);
  EXPECT_EQ(reuse_order(a, kAnyStream), ReuseOrder::after_stream);
  EXPECT_EQ(reuse_order(per_thread, a), ReuseOrder::after_device)
      << "another thread's per-thread default stream cannot be named";
  EXPECT_EQ(reuse_order(per_thread, per_thread), ReuseOrder::none);
  EXPECT_TRUE(is_per_thread_key(per_thread));
  EXPECT_FALSE(is_per_thread_key(a));
  EXPECT_EQ(stream_key(nullptr), reinterpret_cast<uintptr_t>(CU_STREAM_LEGACY))
      << "no stream: the legacy default stream";
  EXPECT_FALSE(is_per_thread_key(stream_key(nullptr)));
}

// A reference-counted stand-in for Stream.
struct Counted {
  mutable int refs = 0;
  void retain() const { ++refs; }
  void release() const { --refs; }
};

TEST(CachingStreamOrder, AStreamIsHeldOnceWhileItsBlocksAreCached) {
  Counted s1, s2;
  StreamRefsOf<Counted> refs;
  refs.add(1, &s1);
  refs.add(1, &s1);
  refs.add(2, &s2);
  EXPECT_EQ(s1.refs, 1) << "one reference per stream, not per block";
  EXPECT_EQ(refs.blocks(1), 2u);
  EXPECT_EQ(refs.stream(1), &s1);
  EXPECT_EQ(refs.stream(3), nullptr);
  refs.remove(1);
  refs.remove(1);
  EXPECT_EQ(refs.blocks(1), 0u);
  EXPECT_EQ(s1.refs, 1) << "kept while fewer than kStreamsKept others need room";
  refs.clear();
  EXPECT_EQ(s1.refs, 0);
  EXPECT_EQ(s2.refs, 0);
  refs.add(9, nullptr);  // the legacy default stream: nothing to hold
  EXPECT_EQ(refs.stream(9), nullptr);
  EXPECT_EQ(refs.blocks(9), 1u);
}

TEST(CachingStreamOrder, UnusedReferencesGoWhenMoreStreamsComeAndUsedOnesStay) {
  Counted streams[kStreamsKept + 1];
  StreamRefsOf<Counted> refs;
  for (size_t i = 0; i < kStreamsKept; ++i) refs.add(i + 1, &streams[i]);
  for (size_t i = 1; i < kStreamsKept; ++i) refs.remove(i + 1);  // only stream 1 has a block
  refs.add(100, &streams[kStreamsKept]);
  EXPECT_EQ(refs.size(), 2u) << "the unused references were dropped";
  EXPECT_EQ(streams[0].refs, 1) << "a stream with a cached block stays held";
  for (size_t i = 1; i < kStreamsKept; ++i) EXPECT_EQ(streams[i].refs, 0) << i;
  EXPECT_EQ(streams[kStreamsKept].refs, 1);
}

}  // namespace
