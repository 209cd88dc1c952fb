// The caching adaptor over host upstreams (no GPU): reuse, rounding, large
// blocks split and merged, the out-of-memory path that gives the cache back
// and retries, release, blocks freed by another thread, and many threads. Stream ordering over GPU upstreams is in the conformance
// suite (gpu).
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

cumem_caching_statistics_t caching_of(const cumem_resource_t* r) {
  cumem_caching_statistics_t c = CUMEM_CACHING_STATISTICS_INIT;
  EXPECT_EQ(cumem_caching_resource_get_statistics(r, &c), CUMEM_SUCCESS)
      << cumem_last_error_message();
  return c;
}

class Caching : public ::testing::Test {
 protected:
  void SetUp() override {
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
    CUMEM_ASSERT_OK(cumem_caching_resource_create(host, &cache));
  }
  void TearDown() override {
    EXPECT_EQ(cumem_resource_release(cache), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_resource_release(host), CUMEM_SUCCESS);
  }
  cumem_resource_t* host = nullptr;
  cumem_resource_t* cache = nullptr;
};

TEST_F(Caching, AFreedBlockIsHandedOutAgainWithoutTheUpstream) {
  void* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 1000, nullptr, &a));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, a, 1000, nullptr));
  void* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 1000, nullptr, &b));
  EXPECT_EQ(a, b);
  // Sizes that round to the same block (1000 -> 1024) share it too.
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, b, 1000, nullptr));
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 1020, nullptr, &b));
  EXPECT_EQ(a, b);
  const cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 2u);
  EXPECT_EQ(c.bytes_reserved, 1024u);
  EXPECT_EQ(c.bytes_cached, 0u);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 1024u) << "the upstream holds the rounded block";
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 1020u) << "the cache counts what was asked";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, b, 1020, nullptr));
  EXPECT_EQ(caching_of(cache).bytes_cached, 1024u);
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 0u);
}

TEST_F(Caching, SizesAreRoundedAsDocumented) {
  // 8 steps per power of two up to 16 MiB, 2 MiB steps above; requests
  // above 128 KiB and under 10 MiB take a 20 MiB segment (the rest cached).
  const struct {
    size_t size;
    uint64_t reserved;
  } cases[] = {{1, 512}, {513, 576}, {1000, 1024}, {4097, 4608},
               {128 << 10, 128 << 10}, {(128 << 10) + 1, 20 << 20}, {256 << 10, 20 << 20},
               {(1 << 20) - 1, 20 << 20}, {(1 << 20) + 1, 20 << 20}, {(5 << 20) + 1, 20 << 20},
               {(10 << 20) - 1, 10 << 20}, {(9 << 20) + 1, 10 << 20}, {(13 << 20) + 1, 14 << 20},
               {(17 << 20) + 1, 18 << 20}, {(33 << 20) + 1, 34 << 20}};
  for (const auto& c : cases) {
    CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));  // reserve only this block
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, c.size, nullptr, &p));
    EXPECT_EQ(caching_of(cache).bytes_reserved, c.reserved) << "size " << c.size;
    EXPECT_EQ(statistics_of(host).bytes_in_use, c.reserved) << "size " << c.size;
    std::memset(p, 0x7f, c.size);  // the whole size is usable
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, p, c.size, nullptr));
  }
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(caching_of(cache).bytes_reserved, 0u);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u) << "released blocks went back to the upstream";
}

TEST_F(Caching, OutOfMemoryGivesTheCacheBackAndRetries) {
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(host, 4096, &limit));
  cumem_resource_t* c = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(limit, &c));
  void* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(c, 2048, nullptr, &a));
  // Freed by another thread: cached there, where this thread's miss does
  // not look (it gives back only its own cache), so the upstream refuses.
  std::thread([&] {
    EXPECT_EQ(cumem_resource_deallocate_raw(c, a, 2048, nullptr), CUMEM_SUCCESS);
  }).join();  // cached: 2048 held
  void* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(c, 3000, nullptr, &b));  // 3072 fits only without it
  cumem_caching_statistics_t s = caching_of(c);
  EXPECT_EQ(s.oom_retries, 1u);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.bytes_reserved, 3072u);
  // Beyond the limit even with an empty cache: the message says it all.
  void* x = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(c, 2048, nullptr, &x), CUMEM_ERROR_OUT_OF_MEMORY,
                     "in use of");
  const std::string m = cumem_last_error_message();
  EXPECT_NE(m.find("2048 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("limit of 4096 bytes"), std::string::npos) << m;
  EXPECT_EQ(x, nullptr);
  EXPECT_EQ(caching_of(c).oom_retries, 2u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(c, b, 3000, nullptr));
  cumem_resource_release(c);  // gives the cached block back
  EXPECT_EQ(statistics_of(limit).bytes_in_use, 0u);
  cumem_resource_release(limit);
}

TEST_F(Caching, BuffersAndPropertiesWork) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(cache, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_CACHING);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(cache, 100, nullptr, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 9, 1, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  cumem_buffer_release(b);
  EXPECT_EQ(caching_of(cache).bytes_cached, 512u);
  cumem_caching_statistics_t s = CUMEM_CACHING_STATISTICS_INIT;
  CUMEM_EXPECT_ERROR(cumem_caching_resource_get_statistics(host, &s), CUMEM_ERROR_NOT_SUPPORTED,
                     "not a caching adaptor");
  CUMEM_EXPECT_ERROR(cumem_caching_resource_release_cached(host), CUMEM_ERROR_NOT_SUPPORTED,
                     "not a caching adaptor");
  cumem_resource_t* none = nullptr;
  CUMEM_EXPECT_ERROR(cumem_caching_resource_create(nullptr, &none), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'upstream'");
}

TEST_F(Caching, SixteenThreadsNeverShareABlock) {
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const size_t size = 64u << (i % 8);
        void* p = nullptr;
        if (cumem_resource_allocate_raw(cache, size, nullptr, &p) != CUMEM_SUCCESS) {
          ++bad;
          return;
        }
        const unsigned char mark = static_cast<unsigned char>(t * 16 + i % 16);
        std::memset(p, mark, size);
        std::this_thread::yield();
        for (size_t k = 0; k < size; k += 61)
          if (static_cast<unsigned char*>(p)[k] != mark) ++bad;
        cumem_resource_deallocate_raw(cache, p, size, nullptr);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  const cumem_resource_statistics_t s = statistics_of(cache);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.total_allocations, 32000u);
  const cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.hits + c.misses, 32000u);
  EXPECT_EQ(c.bytes_cached, c.bytes_reserved) << "everything freed is cached";
  EXPECT_GT(c.hits, 30000u) << "a thread's blocks are reused by that thread";
}

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

TEST_F(Caching, ALargeBlockIsSplitForSmallerLargeRequests) {
  void* whole = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 16 * MiB, nullptr, &whole));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, whole, 16 * MiB, nullptr));
  // 3 MiB is a whole number of its steps (256 KiB): both requests are
  // pieces of the one 16 MiB block.
  void* a = nullptr;
  void* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 2 * MiB, nullptr, &a));
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 3 * MiB, nullptr, &b));
  EXPECT_EQ(a, whole);
  EXPECT_EQ(b, static_cast<char*>(whole) + 2 * MiB);
  std::memset(a, 1, 2 * MiB);
  std::memset(b, 2, 3 * MiB);
  EXPECT_EQ(static_cast<unsigned char*>(a)[2 * MiB - 1], 1);
  cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 2u);
  EXPECT_EQ(c.bytes_reserved, 16 * MiB) << "nothing more was asked of the upstream";
  EXPECT_EQ(c.bytes_cached, 11 * MiB) << "the rest of the block stays free";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, a, 2 * MiB, nullptr));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, b, 3 * MiB, nullptr));
  EXPECT_EQ(caching_of(cache).bytes_cached, 16 * MiB);
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 0u);
}

TEST_F(Caching, FreedPiecesMergeBackIntoTheirBlock) {
  void* whole = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 16 * MiB, nullptr, &whole));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, whole, 16 * MiB, nullptr));
  void* pieces[8] = {};
  for (void*& p : pieces) CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 2 * MiB, nullptr, &p));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(pieces[i], static_cast<char*>(whole) + i * 2 * MiB);
  // Freed in an order that leaves holes before the merges close them.
  for (int i : {1, 3, 5, 7, 0, 2, 4, 6})
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, pieces[i], 2 * MiB, nullptr));
  void* again = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 16 * MiB, nullptr, &again));
  EXPECT_EQ(again, whole) << "the eight pieces merged into the 16 MiB block";
  const cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 9u);
  EXPECT_EQ(c.bytes_reserved, 16 * MiB);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, again, 16 * MiB, nullptr));
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(caching_of(cache).bytes_reserved, 0u);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u) << "the whole block went back";
}

TEST_F(Caching, ReleaseGivesBackWholeBlocksAndKeepsSplitOnesInUse) {
  void* whole = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 12 * MiB, nullptr, &whole));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, whole, 12 * MiB, nullptr));
  void* kept = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 2 * MiB, nullptr, &kept));
  void* other = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 10 * MiB, nullptr, &other));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, other, 10 * MiB, nullptr));
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  const cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.bytes_reserved, 12 * MiB) << "the block with a piece in use stays";
  EXPECT_EQ(c.bytes_cached, 10 * MiB);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 12 * MiB);
  std::memset(kept, 3, 2 * MiB);  // still usable
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, kept, 2 * MiB, nullptr));
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u);
}

TEST_F(Caching, TrimKeepsAtMostWhatItIsAskedToKeep) {
  // Cached: one whole 12 MiB block, 20 small blocks of 64 KiB (1.25 MiB),
  // and a 20 MiB segment with a 2 MiB piece in use (18 MiB free in it).
  void* whole = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 12 * MiB, nullptr, &whole));
  std::vector<void*> small(20);
  for (void*& p : small) CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 64 * KiB, nullptr, &p));
  void* kept = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 2 * MiB, nullptr, &kept));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, whole, 12 * MiB, nullptr));
  for (void* p : small) CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, p, 64 * KiB, nullptr));
  const uint64_t small_bytes = 20 * 64 * KiB;
  EXPECT_EQ(caching_of(cache).bytes_cached, 12 * MiB + small_bytes + 18 * MiB);

  // Keep 18 MiB and the small blocks: the whole 12 MiB block goes; the
  // partly used segment cannot.
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 18 * MiB + small_bytes));
  cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.bytes_cached, 18 * MiB + small_bytes);
  EXPECT_EQ(c.bytes_reserved, 20 * MiB + small_bytes);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 20 * MiB + small_bytes);

  // What stays is handed out again.
  const uint64_t hits = c.hits;
  void* again = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 64 * KiB, nullptr, &again));
  EXPECT_EQ(caching_of(cache).hits, hits + 1);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, again, 64 * KiB, nullptr));

  // Keep 18 MiB + 10 blocks: the 10 others go (the segment still cannot).
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 18 * MiB + 10 * 64 * KiB));
  EXPECT_EQ(caching_of(cache).bytes_cached, 18 * MiB + 10 * 64 * KiB);
  // Keep nothing: every small block goes; the segment stays while in use.
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  EXPECT_EQ(caching_of(cache).bytes_cached, 18 * MiB);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 20 * MiB);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, kept, 2 * MiB, nullptr));
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  c = caching_of(cache);
  EXPECT_EQ(c.bytes_cached, 0u);
  EXPECT_EQ(c.bytes_reserved, 0u);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u);

  // Only caching adaptors trim.
  CUMEM_EXPECT_ERROR(cumem_caching_resource_trim(host, 0), CUMEM_ERROR_NOT_SUPPORTED,
                     "is not a caching adaptor");
  CUMEM_EXPECT_ERROR(cumem_caching_resource_trim(nullptr, 0), CUMEM_ERROR_INVALID_ARGUMENT,
                     "resource");
}

TEST_F(Caching, BlocksFreedByAnotherThreadAreCountedAndReleased) {
  // One thread allocates, another frees: counts stay exact, and release
  // finds the blocks in the freeing thread's cache.
  constexpr int kBlocks = 1000;
  std::vector<void*> blocks(kBlocks);
  std::thread producer([&] {
    for (void*& p : blocks) ASSERT_EQ(cumem_resource_allocate_raw(cache, 3000, nullptr, &p), CUMEM_SUCCESS);
  });
  producer.join();
  EXPECT_EQ(statistics_of(cache).bytes_in_use, uint64_t{kBlocks} * 3000);
  std::thread consumer([&] {
    for (void* p : blocks) ASSERT_EQ(cumem_resource_deallocate_raw(cache, p, 3000, nullptr), CUMEM_SUCCESS);
  });
  consumer.join();
  cumem_resource_statistics_t s = statistics_of(cache);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.live_allocations, 0u);
  EXPECT_EQ(s.total_allocations, uint64_t{kBlocks});
  EXPECT_EQ(s.peak_bytes_in_use, uint64_t{kBlocks} * 3000) << "one thread allocated: exact";
  EXPECT_EQ(caching_of(cache).bytes_cached, uint64_t{kBlocks} * 3072);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u);
}

TEST_F(Caching, AThreadCacheAboveItsCapSharesWithOtherThreads) {
  // 300 blocks of 1 MiB freed by one thread: past its 64 MiB, the rest
  // go to the central cache, where another thread finds them.
  constexpr int kBlocks = 300;
  std::vector<void*> blocks(kBlocks);
  for (void*& p : blocks) CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, MiB, nullptr, &p));
  for (void* p : blocks) CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, p, MiB, nullptr));
  const uint64_t misses = caching_of(cache).misses;
  std::vector<void*> taken(kBlocks - 64);
  std::thread other([&] {
    for (void*& p : taken)
      ASSERT_EQ(cumem_resource_allocate_raw(cache, MiB, nullptr, &p), CUMEM_SUCCESS);
  });
  other.join();
  const cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.misses, misses) << "the other thread was served from the central cache";
  EXPECT_EQ(c.bytes_cached, 64 * MiB);
  EXPECT_EQ(c.bytes_reserved, uint64_t{kBlocks} * MiB);
  for (void* p : taken) CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, p, MiB, nullptr));
}

TEST_F(Caching, MidSizedRequestsShareTwentyMebibyteSegments) {
  // Four 4 MiB requests: one upstream allocation of 20 MiB serves them all.
  void* blocks[4] = {};
  for (void*& p : blocks) CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4 * MiB, nullptr, &p));
  for (int i = 1; i < 4; ++i) EXPECT_EQ(blocks[i], static_cast<char*>(blocks[0]) + i * 4 * MiB);
  cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 3u);
  EXPECT_EQ(c.bytes_reserved, 20 * MiB);
  EXPECT_EQ(c.bytes_cached, 4 * MiB);
  for (void* p : blocks) std::memset(p, 5, 4 * MiB);  // all usable, no overlap to corrupt
  for (void* p : blocks) CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, p, 4 * MiB, nullptr));
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(caching_of(cache).bytes_reserved, 0u) << "the segment merged and went back whole";
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u);
}

TEST_F(Caching, AMidSizedRequestFallsBackToItsOwnSizeWhenTheSegmentDoesNotFit) {
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(host, 8 * MiB, &limit));
  cumem_resource_t* c = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(limit, &c));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(c, 3 * MiB, nullptr, &p));
  EXPECT_EQ(caching_of(c).bytes_reserved, 3 * MiB) << "20 MiB is over the limit: 3 MiB asked";
  EXPECT_EQ(caching_of(c).oom_retries, 0u) << "not a retry: the segment was optional";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(c, p, 3 * MiB, nullptr));
  cumem_resource_release(c);
  EXPECT_EQ(statistics_of(limit).bytes_in_use, 0u);
  cumem_resource_release(limit);
}

TEST_F(Caching, ALargeMissUsesLargeBlocksAnotherThreadKept) {
  // The way PyTorch's backward pass frees on a thread of its own: a block
  // freed (and kept) by another thread serves this thread's smaller request.
  void* whole = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 16 * MiB, nullptr, &whole));
  std::thread([&] {
    EXPECT_EQ(cumem_resource_deallocate_raw(cache, whole, 16 * MiB, nullptr), CUMEM_SUCCESS);
  }).join();
  void* part = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 8 * MiB, nullptr, &part));
  EXPECT_EQ(part, whole) << "split from the other thread's block";
  const cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.bytes_reserved, 16 * MiB);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, part, 8 * MiB, nullptr));
}

TEST_F(Caching, SmallBlocksAnotherThreadKeptServeThisThread) {
  // PyTorch's backward pass frees the forward pass's small blocks on a
  // thread of its own, which keeps them (up to its cap): the next step's
  // forward pass gets them back instead of new upstream memory. Ten
  // rounds of 100 blocks of 64 KiB, allocated here, freed by one other
  // thread that lives through all of them.
  constexpr int kBlocks = 100, kRounds = 10;
  constexpr size_t kSize = 64 << 10;
  std::vector<void*> blocks(kBlocks);
  std::atomic<int> freed{0}, to_free{0};
  std::thread backward([&] {
    for (int r = 1; r <= kRounds; ++r) {
      while (to_free.load() < r) std::this_thread::yield();
      for (void* p : blocks)
        EXPECT_EQ(cumem_resource_deallocate_raw(cache, p, kSize, nullptr), CUMEM_SUCCESS);
      freed.store(r);
    }
  });
  for (int r = 1; r <= kRounds; ++r) {
    for (void*& p : blocks) ASSERT_EQ(cumem_resource_allocate_raw(cache, kSize, nullptr, &p), CUMEM_SUCCESS);
    to_free.store(r);
    while (freed.load() < r) std::this_thread::yield();
  }
  backward.join();
  const cumem_caching_statistics_t c = caching_of(cache);
  EXPECT_EQ(c.misses, uint64_t{kBlocks}) << "only the first round went to the upstream";
  EXPECT_EQ(c.bytes_reserved, uint64_t{kBlocks} * kSize)
      << "the other thread does not hoard a round's blocks each round";
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 0u);
}

TEST_F(Caching, TrimReachesWhatTheUpstreamChainHolds) {
  // A cache over a limit over another cache: trimming the outer one gives
  // its blocks to the inner cache, and the request passes through the limit
  // adaptor to the inner cache, which gives them to the host resource.
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(cache, uint64_t{1} << 30, &limit));
  cumem_resource_t* outer = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(limit, &outer));
  void* small = nullptr;
  void* large = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(outer, 4000, nullptr, &small));
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(outer, 3 * MiB, nullptr, &large));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(outer, small, 4000, nullptr));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(outer, large, 3 * MiB, nullptr));
  EXPECT_GT(statistics_of(host).bytes_in_use, 0u);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(outer));
  EXPECT_GT(caching_of(cache).bytes_cached, 0u) << "release_cached stops at the inner cache";
  EXPECT_GT(statistics_of(host).bytes_in_use, 0u);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(outer, 0));
  EXPECT_EQ(caching_of(outer).bytes_reserved, 0u);
  EXPECT_EQ(caching_of(cache).bytes_reserved, 0u) << "the inner cache was trimmed too";
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u);
  cumem_resource_release(outer);
  cumem_resource_release(limit);
}

}  // namespace
