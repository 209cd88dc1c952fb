// The per-thread front alone (src/resources/caching/thread_cache.hpp): what
// a thread keeps, what it hands out again, and what it lets go.
#include <gtest/gtest.h>

#include <vector>

#include "resources/caching/thread_cache.hpp"

namespace {

using namespace cumem::core::caching;
constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;

// Distinct addresses, never touched.
void* at(uint64_t n) { return reinterpret_cast<void*>(uintptr_t{1} << 32 | n << 9); }

// No block freed on a foreign stream is covered by its marker's record.
bool none_covered(const Block&) { return false; }

TEST(CachingThreadCache, ASmallBlockComesBackPreferablyFromTheSameStream) {
  ThreadCache c;
  ASSERT_TRUE(c.keep_small({at(1), 1024, 7}));
  ASSERT_TRUE(c.keep_small({at(2), 1024, 9}));
  ASSERT_TRUE(c.keep_small({at(3), 2048, 7}));
  EXPECT_EQ(c.cached(), 4096u);
  EXPECT_EQ(c.small_cached(), 4096u);
  Block b;
  ASSERT_TRUE(c.take(1024, 7, b, none_covered));
  EXPECT_EQ(b.ptr, at(1)) << "the block freed on stream 7, though not the newest";
  ASSERT_TRUE(c.take(1024, 7, b, none_covered));
  EXPECT_EQ(b.ptr, at(2)) << "then any stream's";
  EXPECT_EQ(b.key, 9u) << "with the stream it was freed on, for ordering";
  EXPECT_FALSE(c.take(1024, 7, b, none_covered));
  EXPECT_FALSE(c.take(1152, 7, b, none_covered)) << "no other class serves";
  EXPECT_EQ(c.cached(), 2048u);
}

// A small block freed on a foreign stream (a mark) serves another stream
// only once its marker's record covers it; its own stream at once.
TEST(CachingThreadCache, AMarkedBlockServesAnotherStreamOnlyOnceCovered) {
  ThreadCache c;
  ASSERT_TRUE(c.keep_small({at(1), 1024, 9, 0}));  // not foreign
  ASSERT_TRUE(c.keep_small({at(2), 1024, 8, 3}));  // foreign, mark 3
  ASSERT_TRUE(c.keep_small({at(3), 1024, 8, 4}));  // foreign, mark 4
  uint64_t covered = 3;
  std::vector<uint64_t> asked;
  auto ready = [&](const Block& b) {
    asked.push_back(b.mark);
    return b.mark <= covered;
  };
  Block b;
  ASSERT_TRUE(c.take(1024, 7, b, ready));
  EXPECT_EQ(b.ptr, at(2)) << "the newest covered block, not the uncovered newer one";
  EXPECT_EQ(asked, (std::vector<uint64_t>{4, 3}));
  ASSERT_TRUE(c.take(1024, 7, b, ready));
  EXPECT_EQ(b.ptr, at(1)) << "an unmarked block needs no record";
  EXPECT_FALSE(c.take(1024, 7, b, ready)) << "mark 4 waits for a record";
  ASSERT_TRUE(c.take(1024, 8, b, ready));
  EXPECT_EQ(b.ptr, at(3)) << "its own stream reuses it at once";
  EXPECT_EQ(c.cached(), 0u);
}

// Only the newest kReadyScan blocks are looked at for another stream.
TEST(CachingThreadCache, TheSearchForACoveredBlockIsBounded) {
  ThreadCache c;
  ASSERT_TRUE(c.keep_small({at(0), 512, 9, 0}));
  for (uint64_t i = 1; i <= kReadyScan; ++i) ASSERT_TRUE(c.keep_small({at(i), 512, 8, i}));
  int asked = 0;
  Block b;
  EXPECT_FALSE(c.take(512, 7, b, [&](const Block&) { return ++asked, false; }));
  EXPECT_EQ(asked, kReadyScan);
  ASSERT_TRUE(c.take(512, 8, b, none_covered)) << "found by its stream";
  EXPECT_EQ(b.ptr, at(kReadyScan));
}

TEST(CachingThreadCache, SmallBlocksStopAtTheCap) {
  ThreadCache c;
  uint64_t kept = 0;
  for (uint64_t i = 0; c.keep_small({at(i), 128 * KiB, 1}); ++i) kept += 128 * KiB;
  EXPECT_EQ(kept, kShardCap) << "exactly the cap, then no more";
  EXPECT_EQ(c.small_cached(), kShardCap);
  Block b;
  ASSERT_TRUE(c.take(128 * KiB, 1, b, none_covered));
  EXPECT_TRUE(c.keep_small({at(9999), 128 * KiB, 1})) << "room again after a take";
}

TEST(CachingThreadCache, ALargeBlockComesBackOnlyForItsSizeAndStream) {
  ThreadCache c;
  c.keep_large({at(1), 2 * MiB, 5});
  Block b;
  EXPECT_FALSE(c.take(2 * MiB, 6, b, none_covered)) << "another stream goes to the central pieces";
  EXPECT_FALSE(c.take(4 * MiB, 5, b, none_covered)) << "another size too";
  ASSERT_TRUE(c.take(2 * MiB, 5, b, none_covered));
  EXPECT_EQ(b.ptr, at(1));
  EXPECT_EQ(c.cached(), 0u);
}

TEST(CachingThreadCache, TheOldestLargeBlocksMakeRoom) {
  ThreadCache c;
  for (uint64_t i = 0; i < kThreadLarge; ++i) {
    c.keep_large({at(i), MiB, 1});
    EXPECT_FALSE(c.over_large_limit());
  }
  c.keep_large({at(100), MiB, 1});
  ASSERT_TRUE(c.over_large_limit()) << "one block over kThreadLarge";
  EXPECT_EQ(c.evict_oldest().ptr, at(0));
  EXPECT_FALSE(c.over_large_limit());
  // Bytes count too: two 40 MiB blocks pass the 64 MiB cap.
  ThreadCache d;
  d.keep_large({at(1), 40 * MiB, 1});
  EXPECT_FALSE(d.over_large_limit());
  d.keep_large({at(2), 40 * MiB, 1});
  ASSERT_TRUE(d.over_large_limit());
  EXPECT_EQ(d.evict_oldest().ptr, at(1));
  EXPECT_FALSE(d.over_large_limit());
  EXPECT_TRUE(ThreadCache::keeps_large(kShardCap));
  EXPECT_FALSE(ThreadCache::keeps_large(kShardCap + 2 * MiB)) << "larger blocks are never kept";
}

TEST(CachingThreadCache, DrainingGivesEveryBlockOnceAndEmpties) {
  ThreadCache c;
  c.keep_small({at(1), 512, 1});
  c.keep_small({at(2), 4096, 2});
  c.keep_large({at(3), 3 * MiB, 3});
  std::vector<void*> large, small;
  c.drain_large([&](const Block& b) { large.push_back(b.ptr); });
  EXPECT_EQ(large, std::vector<void*>{at(3)});
  EXPECT_EQ(c.cached(), 4608u) << "the small blocks stay";
  c.drain_small([&](const Block& b) { small.push_back(b.ptr); });
  EXPECT_EQ(small.size(), 2u);
  EXPECT_EQ(c.cached(), 0u);
  EXPECT_EQ(c.small_cached(), 0u);
  Block b;
  EXPECT_FALSE(c.take(512, 1, b, none_covered));
}

}  // namespace
