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

TEST(CachingThreadCache, ASmallBlockComesBackPreferablyFromTheSameStream) {
  ThreadCache c;
  ASSERT_TRUE(c.keep_small({at(1), 1024, 7}));
  ASSERT_TRUE(c.keep_small({at(2), 1024, 9}));
  ASSERT_TRUE(c.keep_small({at(3), 2048, 7}));
  EXPECT_EQ(c.cached(), 4096u);
  EXPECT_EQ(c.small_cached(), 4096u);
  Block b;
  ASSERT_TRUE(c.take(1024, 7, b));
  EXPECT_EQ(b.ptr, at(1)) << "the block freed on stream 7, though not the newest";
  ASSERT_TRUE(c.take(1024, 7, b));
  EXPECT_EQ(b.ptr, at(2)) << "then any stream's";
  EXPECT_EQ(b.key, 9u) << "with the stream it was freed on, for ordering";
  EXPECT_FALSE(c.take(1024, 7, b));
  EXPECT_FALSE(c.take(1152, 7, b)) << "no other class serves";
  EXPECT_EQ(c.cached(), 2048u);
}

TEST(CachingThreadCache, SmallBlocksStopAtTheCap) {
  ThreadCache c;
  uint64_t kept = 0;
  for (uint64_t i = 0; c.keep_small({at(i), 128 * KiB, 1}); ++i) kept += 128 * KiB;
  EXPECT_EQ(kept, kShardCap) << "exactly the cap, then no more";
  EXPECT_EQ(c.small_cached(), kShardCap);
  Block b;
  ASSERT_TRUE(c.take(128 * KiB, 1, b));
  EXPECT_TRUE(c.keep_small({at(9999), 128 * KiB, 1})) << "room again after a take";
}

TEST(CachingThreadCache, ALargeBlockComesBackOnlyForItsSizeAndStream) {
  ThreadCache c;
  c.keep_large({at(1), 2 * MiB, 5});
  Block b;
  EXPECT_FALSE(c.take(2 * MiB, 6, b)) << "another stream goes to the central pieces";
  EXPECT_FALSE(c.take(4 * MiB, 5, b)) << "another size too";
  ASSERT_TRUE(c.take(2 * MiB, 5, b));
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
  EXPECT_FALSE(c.take(512, 1, b));
}

}  // namespace
