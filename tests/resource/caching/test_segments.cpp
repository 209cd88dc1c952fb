// The central part alone (src/resources/caching/segments.hpp): segments and
// their pieces, best fit by size then address, splitting, merging only with
// neighbours freed on the same stream, and giving back segments free whole.
#include <gtest/gtest.h>

#include <vector>

#include "error.hpp"
#include "resources/caching/segments.hpp"

namespace {

using namespace cumem::core::caching;
constexpr uint64_t MiB = uint64_t{1} << 20;

// Segment addresses, never touched: 1 GiB apart.
char* segment(int n) { return reinterpret_cast<char*>(static_cast<uintptr_t>(n + 1) << 30); }

TEST(CachingSegments, ANewSegmentHandsOutItsStartAndKeepsTheRestFree) {
  Segments s;
  EXPECT_TRUE(s.add(segment(0), 20 * MiB, 4 * MiB, 7));
  EXPECT_EQ(s.free_bytes(), 16 * MiB);
  EXPECT_EQ(s.piece_count(), 2u);
  EXPECT_FALSE(s.add(segment(1), 6 * MiB, 6 * MiB, 7)) << "a segment of the rounded size has no rest";
  EXPECT_EQ(s.free_bytes(), 16 * MiB);
  // The rest serves the next request on the same stream, split again.
  const Taken t = s.take(4 * MiB, 7);
  EXPECT_EQ(t.ptr, segment(0) + 4 * MiB);
  EXPECT_EQ(t.freed_key, 7u);
  EXPECT_TRUE(t.split);
  EXPECT_EQ(s.free_bytes(), 12 * MiB);
}

TEST(CachingSegments, TheSmallestFitWinsThenTheLowestAddress) {
  Segments s;
  s.add(segment(2), 8 * MiB, 2 * MiB, 1);  // 6 MiB free at the higher address
  s.add(segment(1), 8 * MiB, 4 * MiB, 1);  // 4 MiB free
  s.add(segment(0), 8 * MiB, 2 * MiB, 1);  // 6 MiB free at the lowest address
  EXPECT_EQ(s.take(3 * MiB, 1).ptr, segment(1) + 4 * MiB) << "4 MiB is the smallest that fits";
  EXPECT_EQ(s.take(5 * MiB, 1).ptr, segment(0) + 2 * MiB) << "of two 6 MiB pieces, the lower";
  EXPECT_EQ(s.take(6 * MiB, 1).ptr, segment(2) + 2 * MiB);
  // Two 1 MiB rests of the splits: the lower address first.
  EXPECT_EQ(s.take(MiB, 1).ptr, segment(0) + 7 * MiB);
  EXPECT_EQ(s.take(MiB, 1).ptr, segment(1) + 7 * MiB);
  EXPECT_EQ(s.take(MiB, 1).ptr, nullptr) << "nothing free";
}

TEST(CachingSegments, APieceFreedOnTheAskingStreamComesFirst) {
  Segments s;
  s.add(segment(0), 2 * MiB, 2 * MiB, 1);
  s.add(segment(1), 8 * MiB, 8 * MiB, 1);
  s.put_back(segment(0), 1);  // 2 MiB on stream 1
  s.put_back(segment(1), 2);  // 8 MiB on stream 2
  Taken t = s.take(2 * MiB, 2);
  EXPECT_EQ(t.ptr, segment(1)) << "the larger piece, but freed on stream 2";
  EXPECT_EQ(t.freed_key, 2u);
  t = s.take(2 * MiB, 3);
  EXPECT_EQ(t.ptr, segment(0)) << "no piece on stream 3: the best fit of any stream";
  EXPECT_EQ(t.freed_key, 1u) << "the caller orders the reuse after stream 1";
  EXPECT_FALSE(t.split);
}

TEST(CachingSegments, FreedPiecesMergeOnlyWithNeighboursOfTheSameStream) {
  Segments s;
  s.add(segment(0), 8 * MiB, 2 * MiB, 1);
  void* p[4] = {segment(0), nullptr, nullptr, nullptr};
  for (int i = 1; i < 4; ++i) p[i] = s.take(2 * MiB, 1).ptr;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p[i], segment(0) + i * 2 * MiB);
  EXPECT_EQ(s.put_back(p[1], 1).count, 0);
  EXPECT_EQ(s.put_back(p[2], 2).count, 0) << "stream 2 does not merge with stream 1";
  Merged m = s.put_back(p[0], 1);
  EXPECT_EQ(m.count, 1) << "merges with p[1]";
  EXPECT_EQ(m.absorbed[0], 1u);
  EXPECT_EQ(m.key, 1u);
  EXPECT_EQ(s.put_back(p[3], 2).count, 1) << "merges with p[2]";
  EXPECT_EQ(s.piece_count(), 2u);
  EXPECT_EQ(s.take(4 * MiB, 1).ptr, segment(0));
  EXPECT_EQ(s.take(4 * MiB, 2).ptr, segment(0) + 4 * MiB);
  s.put_back(segment(0), 3);
  EXPECT_EQ(s.put_back(segment(0) + 4 * MiB, 3).count, 1) << "both on stream 3: one piece again";
  EXPECT_EQ(s.piece_count(), 1u);
  EXPECT_EQ(s.take(8 * MiB, 3).ptr, segment(0));
}

TEST(CachingSegments, AnAddressThatIsNotAPieceIsRefused) {
  Segments s;
  s.add(segment(0), 4 * MiB, 2 * MiB, 1);
  try {
    s.put_back(segment(0) + MiB, 1);
    FAIL() << "no error";
  } catch (const cumem::core::Error& e) {
    EXPECT_EQ(e.status(), cumem::core::Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("did not hand out"), std::string::npos) << e.what();
  }
}

TEST(CachingSegments, AfterForgettingStreamsEverythingMergesAndWholeSegmentsGoLargestFirst) {
  Segments s;
  s.add(segment(0), 20 * MiB, 4 * MiB, 1);            // 16 MiB free on stream 1
  s.add(segment(1), 12 * MiB, 12 * MiB, 1);           // handed out whole
  s.add(segment(2), 20 * MiB, 2 * MiB, 2);            // the start stays in use
  void* kept = s.take(6 * MiB, 1).ptr;                // a piece a thread keeps
  ASSERT_EQ(kept, segment(0) + 4 * MiB);
  s.put_back(segment(0), 2);                          // stream 2: no merge with 1's rest
  s.put_back(segment(1), 3);
  s.forget_streams({kept});
  EXPECT_EQ(s.piece_count(), 4u) << "segment 0 one piece, 1 one, 2 two (one in use)";
  EXPECT_EQ(s.free_bytes(), 20 * MiB + 12 * MiB + 18 * MiB);
  std::vector<std::pair<void*, uint64_t>> given;
  uint64_t cached = s.free_bytes();
  s.release_whole(18 * MiB + 12 * MiB, cached, [&](void* p, uint64_t n) { given.emplace_back(p, n); });
  ASSERT_EQ(given.size(), 1u) << "one segment was enough";
  EXPECT_EQ(given[0].first, segment(0));
  EXPECT_EQ(given[0].second, 20 * MiB);
  EXPECT_EQ(cached, 30 * MiB);
  s.release_whole(0, cached, [&](void* p, uint64_t n) { given.emplace_back(p, n); });
  ASSERT_EQ(given.size(), 2u) << "the segment with a piece in use cannot go";
  EXPECT_EQ(given[1].first, segment(1));
  EXPECT_EQ(cached, 18 * MiB);
  EXPECT_EQ(s.free_bytes(), 18 * MiB);
  const Taken t = s.take(18 * MiB, 5);
  EXPECT_EQ(t.ptr, segment(2) + 2 * MiB);
  EXPECT_EQ(t.freed_key, kAnyStream) << "no pending work after the wait";
}

TEST(CachingSegments, APieceWithNoPendingWorkMergesWithAnyStream) {
  Segments s;
  s.add(segment(0), 6 * MiB, 2 * MiB, kAnyStream);  // 2..6 free on no stream
  void* mid = s.take(2 * MiB, 1).ptr;
  ASSERT_EQ(mid, segment(0) + 2 * MiB);
  Merged m = s.put_back(mid, 5);
  EXPECT_EQ(m.key, 5u) << "the merged piece is ordered after stream 5";
  ASSERT_EQ(m.count, 1);
  EXPECT_EQ(m.absorbed[0], kAnyStream);
  // Freed with no pending work (a synchronous upstream), it takes its
  // neighbour's stream.
  m = s.put_back(segment(0), kAnyStream);
  EXPECT_EQ(m.key, 5u);
  EXPECT_EQ(m.count, 1);
  EXPECT_EQ(s.piece_count(), 1u);
  const Taken t = s.take(6 * MiB, 7);
  EXPECT_EQ(t.ptr, segment(0));
  EXPECT_EQ(t.freed_key, 5u);
}

TEST(CachingSegments, AFreeTwiceIsRefused) {
  Segments s;
  s.add(segment(0), 4 * MiB, 2 * MiB, 1);
  s.put_back(segment(0), 1);
  try {
    s.put_back(segment(0), 1);
    FAIL() << "no error";
  } catch (const cumem::core::Error& e) {
    EXPECT_EQ(e.status(), cumem::core::Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("freed twice"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.free_bytes(), 4 * MiB);
}

}  // namespace
