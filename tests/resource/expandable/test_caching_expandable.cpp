// The expandable caching adaptor through the public C API on the VMM fake
// driver, whose device memory is host memory (so blocks can be written and
// read here): large blocks are pieces of a stream's range with pages mapped
// on demand and reused at any size, pages are unmapped when the cache gives
// memory back (after the device's work) and the ranges freed, out of memory
// gives the cache back and retries, and every test ends with nothing held
// in the fake. The upstream is a callback resource that says it is device
// memory of device 0 (it serves the small blocks from malloc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fake_vmm.hpp"
#include "host_upstream.hpp"
#include "test_util.hpp"

namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

cumem_caching_statistics_t caching_of(const cumem_resource_t* r) {
  cumem_caching_statistics_t c = CUMEM_CACHING_STATISTICS_INIT;
  EXPECT_EQ(cumem_caching_resource_get_statistics(r, &c), CUMEM_SUCCESS)
      << cumem_last_error_message();
  return c;
}

class ExpandableCache : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(fake.missing(), "");
    fake.reset();
    fake.set_memory(uint64_t{1} << 30);  // ranges of 1.125 GiB
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    CUMEM_ASSERT_OK(host_upstream_create(device, &upstream));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    cache = make(20 * MiB);  // the tests count pages of 20 MiB
    ASSERT_NE(cache, nullptr) << cumem_last_error_message();
  }
  void TearDown() override {
    cumem_resource_release(cache);
    cumem_stream_release(stream);
    cumem_resource_release(upstream);
    cumem_device_release(device);
    const FakeVmmCounts c = fake.counts();
    EXPECT_EQ(c.live_reservations, 0u) << "a range was never freed";
    EXPECT_EQ(c.live_handles, 0u) << "a page was never released";
    EXPECT_EQ(c.live_mappings, 0u) << "a page was never unmapped";
    EXPECT_EQ(c.live_bytes, 0u);
    EXPECT_EQ(upstream_bytes.load(), 0) << "the upstream's small blocks came back";
    fake.reset();
  }

  cumem_resource_t* make(uint64_t page_size) {
    cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
    o.expandable = CUMEM_TRUE;
    o.page_size = page_size;
    cumem_resource_t* r = nullptr;
    return cumem_caching_resource_create_with_options(upstream, &o, &r) == CUMEM_SUCCESS ? r : nullptr;
  }
  // A failed allocation ends the test (gtest reports the exception), so
  // that no test goes on to use a null block.
  void* allocate(size_t size, cumem_stream_t* on = nullptr) {
    void* p = nullptr;
    if (cumem_resource_allocate_raw(cache, size, on ? on : stream, &p) != CUMEM_SUCCESS)
      throw std::runtime_error("allocating " + std::to_string(size) +
                               " bytes failed: " + cumem_last_error_message());
    return p;
  }
  void free(void* p, size_t size, cumem_stream_t* on = nullptr) {
    EXPECT_EQ(cumem_resource_deallocate_raw(cache, p, size, on ? on : stream), CUMEM_SUCCESS)
        << cumem_last_error_message();
  }

  FakeVmm fake;
  cumem_device_t* device = nullptr;
  cumem_resource_t* upstream = nullptr;
  cumem_resource_t* cache = nullptr;
  cumem_stream_t* stream = nullptr;
};

TEST_F(ExpandableCache, ALargeBlockIsMappedPagesOfTheStreamsRange) {
  void* a = allocate(30 * MiB);
  FakeVmmCounts c = fake.counts();
  EXPECT_EQ(c.reserves, 1u) << "one range for the stream";
  EXPECT_EQ(c.maps, 2u) << "two pages of 20 MiB";
  EXPECT_EQ(c.live_bytes, 40 * MiB);
  std::memset(a, 0x5a, 30 * MiB);  // usable (the fake's device memory is host memory)
  // The rest of the second page serves the next block: nothing mapped.
  void* b = allocate(10 * MiB);
  EXPECT_EQ(b, static_cast<char*>(a) + 30 * MiB);
  EXPECT_EQ(fake.counts().maps, 2u);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.bytes_reserved, 40 * MiB);
  EXPECT_EQ(s.pages_mapped, 2u);
  EXPECT_EQ(s.misses, 1u) << "a block on new pages is a miss";
  EXPECT_EQ(s.hits, 1u) << "a block from mapped free pages is a hit";
  EXPECT_EQ(upstream_bytes.load(), 0) << "large blocks never reach the upstream";
  // Small blocks come from a range of their own: a page mapped there, its
  // rest free for the next small misses; never from the upstream.
  const FakeVmmCounts before_small = fake.counts();
  void* small = allocate(4 * KiB);
  EXPECT_EQ(upstream_bytes.load(), 0) << "small blocks never reach the upstream";
  EXPECT_EQ(fake.counts().reserves, before_small.reserves + 1) << "the small blocks' range";
  EXPECT_EQ(fake.counts().maps, before_small.maps + 1);
  EXPECT_TRUE(small < a || small >= static_cast<char*>(a) + 60 * MiB)
      << "not in the large blocks' range";
  void* small2 = allocate(64 * KiB);
  EXPECT_EQ(fake.counts().maps, before_small.maps + 1) << "the page's rest served it";
  s = caching_of(cache);
  EXPECT_EQ(s.bytes_reserved, 60 * MiB);
  EXPECT_EQ(s.misses, 2u) << "the small block on a new page is a miss";
  EXPECT_EQ(s.hits, 2u) << "the small block from the page's rest is a hit";
  free(small, 4 * KiB);
  free(small2, 64 * KiB);
  free(a, 30 * MiB);
  free(b, 10 * MiB);
  EXPECT_EQ(caching_of(cache).bytes_cached, 60 * MiB) << "every page mapped is cached";
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 0u);
}

TEST_F(ExpandableCache, TheFragmentationExampleTakesOnlyWhatIsLive) {
  // PyTorch's example: 8 x 16 MiB live, freed, then 4 x 32 MiB live.
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(allocate(16 * MiB));
  EXPECT_EQ(fake.counts().live_bytes, 140 * MiB) << "128 MiB in 7 pages";
  for (void* p : blocks) free(p, 16 * MiB);
  blocks.clear();
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(allocate(32 * MiB));
    std::memset(blocks.back(), i + 1, 32 * MiB);
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(static_cast<unsigned char*>(blocks[i])[32 * MiB - 1], i + 1) << "no overlap";
  EXPECT_EQ(fake.counts().live_bytes, 140 * MiB) << "the freed 16 MiB blocks served 32 MiB ones";
  EXPECT_EQ(caching_of(cache).peak_bytes_reserved, 140 * MiB);
  for (void* p : blocks) free(p, 32 * MiB);
}

TEST_F(ExpandableCache, TrimUnmapsAfterTheDevicesWorkAndFreesTheRanges) {
  void* a = allocate(50 * MiB);
  void* b = allocate(3 * MiB);
  void* small = allocate(64 * KiB);
  free(a, 50 * MiB);
  free(b, 3 * MiB);
  free(small, 64 * KiB);
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  void* stream_native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &stream_native));
  fake.busy_stream(static_cast<CUstream>(stream_native));  // work still queued
  const FakeVmmCounts before = fake.counts();
  EXPECT_EQ(before.live_bytes, 80 * MiB) << "3 pages of large blocks, one of small ones";
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  cumem_bool_t done = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_stream_query(stream, &done));
  EXPECT_EQ(done, CUMEM_TRUE) << "the trim waited for the device before unmapping";
  const FakeVmmCounts after = fake.counts();
  EXPECT_EQ(after.unmaps - before.unmaps, 4u);
  EXPECT_EQ(after.live_bytes, 0u);
  EXPECT_EQ(after.live_reservations, 0u) << "the empty ranges were freed";
  const cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.bytes_reserved, 0u);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.pages_unmapped, 4u);
  EXPECT_EQ(upstream_bytes.load(), 0);
  // The cache works on after it: a new range.
  void* again = allocate(5 * MiB);
  EXPECT_EQ(fake.counts().reserves, before.reserves + 1);
  free(again, 5 * MiB);
  cumem_stream_release(other);
}

// A page the driver refuses to unmap stays in the books as mapped and free:
// the trim stops there, the cache's reserved bytes agree with the driver's,
// the page serves the next block without a new mapping, and a later trim
// takes it (found in review: the books once said unmapped whatever
// cuMemUnmap returned, and the next map over the page failed).
TEST_F(ExpandableCache, APageTheDriverRefusesToUnmapStaysCachedAndServesAgain) {
  void* a = allocate(60 * MiB);  // three pages, one span once freed
  free(a, 60 * MiB);
  fake.fail("cuMemUnmap", 2, CUDA_ERROR_UNKNOWN);  // the second page
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(fake.counts().live_bytes, 40 * MiB) << "the refused page and the one after it";
  EXPECT_EQ(s.bytes_reserved, 40 * MiB) << "the books agree with the driver";
  EXPECT_EQ(s.bytes_cached, 40 * MiB);
  EXPECT_EQ(s.pages_unmapped, 1u);
  const uint64_t maps = fake.counts().maps;
  void* b = allocate(40 * MiB);
  EXPECT_EQ(fake.counts().maps, maps) << "the pages still mapped serve it";
  free(b, 40 * MiB);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  s = caching_of(cache);
  EXPECT_EQ(s.bytes_reserved, 0u);
  EXPECT_EQ(fake.counts().live_bytes, 0u);
}

TEST_F(ExpandableCache, ABlockInUseKeepsItsPagesThroughATrim) {
  void* a = allocate(40 * MiB);
  void* b = allocate(40 * MiB);
  std::memset(b, 7, 40 * MiB);
  free(a, 40 * MiB);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(fake.counts().live_bytes, 40 * MiB) << "a's pages went, b's stayed";
  EXPECT_EQ(static_cast<unsigned char*>(b)[40 * MiB - 1], 7);
  // The hole a left is mapped again for a block that fits it.
  void* c = allocate(30 * MiB);
  EXPECT_EQ(c, a);
  EXPECT_EQ(fake.counts().live_bytes, 80 * MiB);
  free(b, 40 * MiB);
  free(c, 30 * MiB);
}

TEST_F(ExpandableCache, FragmentsArePagesRecycledBeforeNewOnesAreMapped) {
  fake.set_memory(100 * MiB);
  void* a = allocate(60 * MiB);
  void* b = allocate(20 * MiB);
  free(a, 60 * MiB);
  // 70 MiB fits neither a's 60 MiB nor next to the 80 MiB mapped: a's three
  // free pages are unmapped (after a wait for the device) and four mapped
  // after b, so the cache holds what it held before plus one page, and the
  // device's memory is not exhausted.
  void* c = allocate(70 * MiB);
  ASSERT_NE(c, nullptr);
  std::memset(c, 1, 70 * MiB);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.oom_retries, 0u) << "no out of memory on the way";
  EXPECT_EQ(s.pages_unmapped, 3u) << "a's pages";
  EXPECT_EQ(s.pages_mapped, 4u + 4u);
  EXPECT_EQ(s.bytes_reserved, 100 * MiB);
  EXPECT_EQ(fake.counts().live_bytes, 100 * MiB);
  EXPECT_EQ(fake.counts().live_mappings, 5u) << "b's and c's pages";
  // a's memory went back to the device: 40 MiB more are not there.
  void* d = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(cache, 40 * MiB, stream, &d),
                     CUMEM_ERROR_OUT_OF_MEMORY, "could not map pages for");
  free(c, 70 * MiB);
  d = allocate(40 * MiB);
  EXPECT_EQ(d, c) << "c's free pages serve it";
  EXPECT_EQ(fake.counts().live_bytes, 100 * MiB);
  free(d, 40 * MiB);
  free(b, 20 * MiB);
}

// The large blocks a thread keeps for itself go to the central pieces when
// it asks for a large block they cannot serve: there they merge, and the
// best fit sees them, so the request does not cut up a larger free piece
// (the trainings' traces held up to 1 % more when it did).
TEST_F(ExpandableCache, AThreadsKeptLargeBlocksMergeBeforeItsLargeMisses) {
  void* a = allocate(1 * MiB);
  void* b = allocate(1 * MiB);
  void* guard = allocate(1 * MiB);
  // Too large for a thread to keep: the free piece goes to the central
  // pieces, with the first page's free rest after it.
  void* f = allocate(80 * MiB);
  free(f, 80 * MiB);
  free(a, 1 * MiB);  // kept by this thread
  free(b, 1 * MiB);
  EXPECT_EQ(caching_of(cache).bytes_cached, 97 * MiB + 2 * MiB);
  void* c = allocate(2 * MiB);
  EXPECT_EQ(c, a) << "a and b, merged, fit it best: the 97 MiB piece stays whole";
  EXPECT_EQ(caching_of(cache).pages_mapped, 5u) << "nothing mapped for it";
  void* d = allocate(97 * MiB);
  EXPECT_EQ(d, static_cast<char*>(guard) + 1 * MiB) << "the whole piece after the guard";
  EXPECT_EQ(caching_of(cache).pages_mapped, 5u);
  free(d, 97 * MiB);
  free(c, 2 * MiB);
  free(guard, 1 * MiB);
}

// Fragments whose work is done go without a wait for the device: the
// cache asks a marker recorded after their free (here the device has
// caught up with the host, so the marker is complete at once).
TEST_F(ExpandableCache, FragmentsWhoseWorkIsDoneAreRecycledWithoutAWait) {
  fake.set_memory(100 * MiB);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  void* a = allocate(60 * MiB);
  void* b = allocate(20 * MiB);
  fake.busy_stream(static_cast<CUstream>(native));  // a kernel that uses a
  free(a, 60 * MiB);
  fake.finish_stream(static_cast<CUstream>(native));  // it has run
  const uint64_t unmaps = fake.counts().unmaps;
  void* c = allocate(70 * MiB);
  ASSERT_NE(c, nullptr);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.recycles, 1u);
  EXPECT_EQ(s.recycle_waits, 0u) << "a's work was done: no wait";
  EXPECT_EQ(s.pages_unmapped, 3u) << "a's pages";
  EXPECT_EQ(fake.counts().unmaps - unmaps, 3u);
  EXPECT_EQ(s.bytes_reserved, 100 * MiB) << "no more than it held, plus one page";
  free(c, 70 * MiB);
  free(b, 20 * MiB);
}

// A fragment whose work may still run is never unmapped before it is done:
// when mapping in its place would take the cache more than 1 % above what
// it held (here 60 MiB more than 80), the device is waited for first.
TEST_F(ExpandableCache, FragmentsWithWorkQueuedAreRecycledAfterAWait) {
  fake.set_memory(100 * MiB);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  void* a = allocate(60 * MiB);
  void* b = allocate(20 * MiB);
  fake.busy_stream(static_cast<CUstream>(native));  // a kernel that uses a, still queued
  free(a, 60 * MiB);
  const uint64_t unmaps = fake.counts().unmaps;
  void* c = allocate(70 * MiB);
  ASSERT_NE(c, nullptr);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.recycles, 1u);
  EXPECT_EQ(s.recycle_waits, 1u);
  EXPECT_EQ(fake.counts().unmaps - unmaps, 3u) << "a's pages, after the wait";
  cumem_bool_t idle = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_stream_query(stream, &idle));
  EXPECT_EQ(idle, CUMEM_TRUE) << "the kernel that used a ran before a's pages went";
  // Once more with the device behind: a marker from the last recycle is
  // complete by then, but the new fragment was freed after it.
  free(c, 70 * MiB);
  void* d = allocate(20 * MiB);
  fake.busy_stream(static_cast<CUstream>(native));
  free(d, 20 * MiB);
  free(b, 20 * MiB);
  void* e = allocate(30 * MiB);  // fits the free pages: no recycle
  EXPECT_EQ(caching_of(cache).recycles, 1u);
  free(e, 30 * MiB);
  fake.finish_stream(static_cast<CUstream>(native));
}

// A fragment with work queued that is small beside what the cache holds
// (within 1 % of its high-water mark) stays mapped: the cache maps new
// pages for the block and does not wait for the device (a wait drains the
// queue the host filled ahead of it); a later miss recycles the fragment
// once its marker says done. (Before, every such recycle waited.)
TEST_F(ExpandableCache, SmallFragmentsWithWorkQueuedStayWithoutAWait) {
  fake.set_memory(uint64_t{4} << 30);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  void* big1 = allocate(1000 * MiB);
  void* big2 = allocate(1000 * MiB);
  void* a = allocate(20 * MiB);
  void* b = allocate(20 * MiB);
  fake.busy_stream(static_cast<CUstream>(native));  // a kernel that uses a, still queued
  free(a, 20 * MiB);
  const uint64_t unmaps = fake.counts().unmaps;
  void* c = allocate(30 * MiB);  // a's page is too small for it: a fragment
  ASSERT_NE(c, nullptr);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.recycle_waits, 0u) << "no wait for a 20 MiB fragment beside 2 GiB";
  EXPECT_EQ(s.recycles, 0u) << "nothing was unmapped";
  EXPECT_EQ(fake.counts().unmaps, unmaps) << "a's page stays while its work is queued";
  cumem_bool_t idle = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_stream_query(stream, &idle));
  EXPECT_EQ(idle, CUMEM_FALSE) << "the device was not waited for";
  // The work has run: the next miss recycles a's page, still without a wait.
  fake.finish_stream(static_cast<CUstream>(native));
  void* d = allocate(30 * MiB);
  s = caching_of(cache);
  EXPECT_EQ(s.recycles, 1u);
  EXPECT_EQ(s.recycle_waits, 0u);
  EXPECT_EQ(fake.counts().unmaps - unmaps, 1u) << "a's page, once done";
  free(d, 30 * MiB);
  free(c, 30 * MiB);
  free(b, 20 * MiB);
  free(big2, 1000 * MiB);
  free(big1, 1000 * MiB);
}

// Pages mapped in the place of a fragment whose work was queued (the
// recycling's slack above the high-water mark) are a loan: once the
// fragment's work has run, large frees give back as much in free pages
// whose work is done, so that the cache returns to its high-water mark
// (a second training run ends where the first did; before, the slack
// stayed mapped for good). Until the work has run, nothing goes.
TEST_F(ExpandableCache, PagesMappedInThePlaceOfQueuedFragmentsAreGivenBackOnceTheWorkIsDone) {
  fake.set_memory(uint64_t{4} << 30);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  void* big1 = allocate(1000 * MiB);
  void* big2 = allocate(1000 * MiB);
  void* x = allocate(100 * MiB);  // freed and allocated again below: central pieces
  // Between x and a: a free x would merge with a free a, whose piece would
  // then carry the stamp of x's latest free (never known done here).
  void* y = allocate(20 * MiB);
  void* a = allocate(20 * MiB);
  void* b = allocate(20 * MiB);
  const uint64_t before = caching_of(cache).bytes_reserved;
  fake.busy_stream(static_cast<CUstream>(native));  // a kernel that uses a, still queued
  free(a, 20 * MiB);
  const uint64_t unmaps = fake.counts().unmaps;
  // a's page is too small for c: two new pages, one of them in a's place
  // (had a's work been done, a's page would have been unmapped first).
  void* c = allocate(30 * MiB);
  ASSERT_NE(c, nullptr);
  std::memset(c, 0x5a, 30 * MiB);
  const uint64_t mark = before + 20 * MiB;  // what the cache would hold then
  EXPECT_EQ(caching_of(cache).bytes_reserved, mark + 20 * MiB) << "a's page, loaned";
  EXPECT_EQ(caching_of(cache).recycle_waits, 0u);
  // Large frees while a's work is queued: nothing is given back.
  const auto cycle = [&](int n) {
    for (int i = 0; i < n; ++i) {
      free(x, 100 * MiB);
      x = allocate(100 * MiB);
    }
  };
  cycle(40);
  EXPECT_EQ(fake.counts().unmaps, unmaps) << "a's page stays while its work is queued";
  EXPECT_EQ(caching_of(cache).bytes_reserved, mark + 20 * MiB);
  // The work has run: the next frees give back a's page, without a wait.
  fake.finish_stream(static_cast<CUstream>(native));
  cycle(40);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.bytes_reserved, mark) << "back at the high-water mark";
  EXPECT_EQ(fake.counts().unmaps - unmaps, 1u) << "a's page, once done";
  EXPECT_EQ(s.recycle_waits, 0u);
  // Nothing handed out lost its pages.
  EXPECT_EQ(static_cast<unsigned char*>(c)[30 * MiB - 1], 0x5a);
  std::memset(b, 1, 20 * MiB);
  std::memset(x, 2, 100 * MiB);
  // A miss for a's size now maps again: a's page is gone.
  void* d = allocate(20 * MiB);
  ASSERT_NE(d, nullptr);
  std::memset(d, 3, 20 * MiB);
  free(d, 20 * MiB);
  free(c, 30 * MiB);
  free(b, 20 * MiB);
  free(y, 20 * MiB);
  free(x, 100 * MiB);
  free(big2, 1000 * MiB);
  free(big1, 1000 * MiB);
}

// Each stream that maps pages gets a marker (an event); many streams (one
// per request, say) leave at most 16 of them, not one each.
TEST_F(ExpandableCache, RecycleMarkersStayBoundedOverManyStreams) {
  const uint64_t events = fake.counts().live_events;
  std::vector<std::pair<void*, cumem_stream_t*>> held;
  for (int i = 0; i < 40; ++i) {
    cumem_stream_t* s = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s));
    held.emplace_back(allocate(20 * MiB, s), s);  // new pages in the stream's range: a marker
  }
  EXPECT_EQ(caching_of(cache).pages_mapped, 40u) << "every stream mapped its own";
  EXPECT_LE(fake.counts().live_events - events, 16u);
  for (auto& [p, s] : held) {
    free(p, 20 * MiB, s);
    cumem_stream_release(s);
  }
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
}

// Small blocks pack into the pages of a range of their own: 320 blocks of
// 64 KiB fill one 20 MiB page. Freed, they stay cached by class (the
// thread's cache); a run of another class then merges them back into the
// page's free pieces before any page is mapped, so classes a workload
// stopped asking for serve new ones (a driver pool took 32 MiB for a few
// MiB of small blocks, and blocks of a class served only that class).
TEST_F(ExpandableCache, SmallBlocksOfOldClassesServeNewClassesWithoutNewPages) {
  const uint64_t maps = fake.counts().maps;
  std::vector<void*> blocks;
  for (int i = 0; i < 320; ++i) blocks.push_back(allocate(64 * KiB));
  EXPECT_EQ(fake.counts().maps, maps + 1) << "one page holds them all";
  for (size_t i = 0; i < blocks.size(); ++i)
    std::memset(blocks[i], static_cast<int>(i & 0xff), 64 * KiB);
  for (size_t i = 0; i < blocks.size(); ++i)
    EXPECT_EQ(static_cast<unsigned char*>(blocks[i])[64 * KiB - 1], i & 0xff) << "no overlap";
  for (void* p : blocks) free(p, 64 * KiB);
  blocks.clear();
  // Another class: served from the merged page, nothing mapped.
  for (int i = 0; i < 200; ++i) blocks.push_back(allocate(96 * KiB));
  EXPECT_EQ(fake.counts().maps, maps + 1) << "the 64 KiB blocks served the 96 KiB ones";
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.bytes_reserved, 20 * MiB);
  EXPECT_EQ(s.misses, 1u) << "one page mapped";
  EXPECT_EQ(s.bytes_cached, 20 * MiB - 200 * 96 * KiB) << "the page's rest";
  // The old class again: the page's rest serves what fits, then a new page.
  void* old_class = allocate(64 * KiB);
  EXPECT_EQ(fake.counts().maps, maps + 1);
  for (void* p : blocks) free(p, 96 * KiB);
  free(old_class, 64 * KiB);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  EXPECT_EQ(fake.counts().live_bytes, 0u) << "the small blocks' page unmapped";
  EXPECT_EQ(caching_of(cache).bytes_reserved, 0u);
}

// Small blocks freed on one stream serve a new class only on that stream:
// another stream maps pages of its own range rather than take them without
// an order after their work. After a trim (a wait for the device) any
// stream takes the page's free pieces.
TEST_F(ExpandableCache, SmallBlocksMergeOnlyForTheStreamThatFreedThem) {
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  const uint64_t maps = fake.counts().maps;
  std::vector<void*> blocks;
  for (int i = 0; i < 320; ++i) blocks.push_back(allocate(64 * KiB));
  for (void* p : blocks) free(p, 64 * KiB);
  void* elsewhere = allocate(96 * KiB, other);
  EXPECT_EQ(fake.counts().maps, maps + 2) << "a page of the other stream's range";
  EXPECT_TRUE(std::find(blocks.begin(), blocks.end(), elsewhere) == blocks.end());
  // The stream's own blocks are still its to reuse at once.
  void* again = allocate(64 * KiB);
  EXPECT_EQ(fake.counts().maps, maps + 2);
  EXPECT_TRUE(std::find(blocks.begin(), blocks.end(), again) != blocks.end());
  free(again, 64 * KiB);
  free(elsewhere, 96 * KiB, other);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 40 * MiB));  // keeps both pages
  EXPECT_EQ(fake.counts().live_bytes, 40 * MiB);
  std::vector<void*> more;
  for (int i = 0; i < 300; ++i) more.push_back(allocate(64 * KiB, other));
  EXPECT_EQ(fake.counts().maps, maps + 2) << "after the wait, the first page serves any stream";
  for (void* p : more) free(p, 64 * KiB, other);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  EXPECT_EQ(fake.counts().live_bytes, 0u);
  cumem_stream_release(other);
}

// A small block that needs a page when the device is full gives the cache
// back (the large block's free pages) and is served; the wait for the
// device makes the small page's free rest any stream's; once that is used
// up too, a clear error.
TEST_F(ExpandableCache, ASmallBlockOutOfMemoryUnmapsTheCacheAndRetries) {
  fake.set_memory(40 * MiB);
  void* large = allocate(30 * MiB);
  free(large, 30 * MiB);  // 40 MiB of pages cached: the device is full
  void* small = allocate(4 * KiB);
  ASSERT_NE(small, nullptr);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.oom_retries, 1u);
  EXPECT_EQ(s.bytes_reserved, 20 * MiB);
  void* big = allocate(20 * MiB);  // the last page
  // Another stream's small block: no page left for its own range; after
  // the retry's wait, the first page's rest serves it.
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  std::vector<void*> blocks{allocate(128 * KiB, other)};
  EXPECT_EQ(caching_of(cache).oom_retries, 2u);
  EXPECT_GT(blocks[0], small);
  EXPECT_LT(blocks[0], static_cast<char*>(small) + 20 * MiB) << "in the first small page";
  EXPECT_EQ(fake.counts().live_bytes, 40 * MiB);
  // The page's rest used up: a clear error.
  cumem_status_t st = CUMEM_SUCCESS;
  for (int i = 0; i < 200 && st == CUMEM_SUCCESS; ++i) {
    void* p = nullptr;
    st = cumem_resource_allocate_raw(cache, 128 * KiB, other, &p);
    if (st == CUMEM_SUCCESS) blocks.push_back(p);
  }
  EXPECT_EQ(st, CUMEM_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(cumem_last_error_message()).find("a page for a small block"),
            std::string::npos)
      << cumem_last_error_message();
  EXPECT_EQ(blocks.size(), 20 * MiB / (128 * KiB) - 1) << "every 128 KiB the page held";
  for (void* p : blocks) free(p, 128 * KiB, other);
  free(small, 4 * KiB);
  free(big, 20 * MiB);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(other));
  cumem_stream_release(other);
}

TEST_F(ExpandableCache, OutOfMemoryUnmapsTheCacheAndRetries) {
  fake.set_memory(100 * MiB);
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  void* a = allocate(20 * MiB);
  void* b = allocate(40 * MiB);
  // Freed on another stream: b's piece cannot join pages mapped for this
  // stream until the device is waited for, and it neighbours the range's
  // unmapped space, so it is no fragment to recycle either.
  free(b, 40 * MiB, other);
  // 60 MiB more does not fit next to the 60 MiB mapped; out of memory gives
  // the cache back (b's pages), and the block is served.
  void* c = allocate(60 * MiB);
  ASSERT_NE(c, nullptr);
  std::memset(c, 1, 60 * MiB);
  cumem_caching_statistics_t s = caching_of(cache);
  EXPECT_EQ(s.oom_retries, 1u);
  EXPECT_EQ(s.bytes_reserved, 80 * MiB);
  EXPECT_EQ(fake.counts().live_bytes, 80 * MiB);
  EXPECT_EQ(c, b) << "mapped again where b was";
  void* b2 = allocate(20 * MiB);
  // Beyond the device even with an empty cache: a clear error.
  void* x = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(cache, 30 * MiB, stream, &x),
                     CUMEM_ERROR_OUT_OF_MEMORY, "could not map pages for");
  EXPECT_EQ(x, nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("in use of"), std::string::npos)
      << cumem_last_error_message();
  EXPECT_EQ(caching_of(cache).oom_retries, 2u);
  // Larger than the device: refused at once, nothing given back or reserved.
  const uint64_t reserves = fake.counts().reserves;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(cache, size_t{1} << 50, stream, &x),
                     CUMEM_ERROR_OUT_OF_MEMORY, "larger than the address range");
  EXPECT_EQ(fake.counts().reserves, reserves);
  EXPECT_EQ(caching_of(cache).oom_retries, 2u);
  free(a, 20 * MiB);
  free(b2, 20 * MiB);
  free(c, 60 * MiB);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(other));
  cumem_stream_release(other);
}

TEST_F(ExpandableCache, EachStreamGrowsItsOwnRangeAndReusesAnothersBlocksInOrder) {
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  void* a = allocate(30 * MiB, stream);
  void* b = allocate(30 * MiB, other);
  EXPECT_EQ(fake.counts().reserves, 2u) << "one range per stream";
  free(b, 30 * MiB, other);
  // A block freed on `other` serves `stream` (ordered after other's work)
  // before any new page is mapped.
  const uint64_t maps = fake.counts().maps;
  void* c = allocate(30 * MiB, stream);
  EXPECT_EQ(c, b);
  EXPECT_EQ(fake.counts().maps, maps);
  EXPECT_EQ(caching_of(cache).stream_reuses, 1u);
  free(a, 30 * MiB, stream);
  free(c, 30 * MiB, stream);
  cumem_stream_release(other);
}

TEST_F(ExpandableCache, TheDefaultPagesAre8MiBForBlocksOf16MiBOrMoreAnd2MiBForTheOthers) {
  cumem_resource_t* def = make(0);
  ASSERT_NE(def, nullptr) << cumem_last_error_message();
  void* large = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(def, 30 * MiB, stream, &large));
  EXPECT_EQ(caching_of(def).pages_mapped, 4u) << "30 MiB in four 8 MiB pages";
  EXPECT_EQ(caching_of(def).bytes_reserved, 32 * MiB);
  EXPECT_EQ(fake.counts().reserves, 1u);
  // 5 MiB fits no free piece (2 MiB are left) and is under 16 MiB: 2 MiB
  // pages, in a range of their own.
  void* medium = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(def, 5 * MiB, stream, &medium));
  EXPECT_EQ(caching_of(def).pages_mapped, 4u + 3u) << "5 MiB in three 2 MiB pages";
  EXPECT_EQ(caching_of(def).bytes_reserved, 38 * MiB);
  EXPECT_EQ(fake.counts().reserves, 2u);
  std::memset(large, 0x11, 30 * MiB);  // both usable
  std::memset(medium, 0x22, 5 * MiB);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(def, large, 30 * MiB, stream));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(def, medium, 5 * MiB, stream));
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(def, 0));
  EXPECT_EQ(caching_of(def).pages_unmapped, 7u);
  EXPECT_EQ(fake.counts().live_reservations, 0u) << "both ranges freed";
  cumem_resource_release(def);
}

TEST_F(ExpandableCache, ThePageSizeIsAnOptionAtTheGranularity) {
  cumem_resource_t* four = make(4 * MiB);
  ASSERT_NE(four, nullptr) << cumem_last_error_message();
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(four, 5 * MiB, stream, &p));
  EXPECT_EQ(caching_of(four).pages_mapped, 2u) << "5 MiB in two 4 MiB pages";
  EXPECT_EQ(caching_of(four).bytes_reserved, 8 * MiB);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(four, p, 5 * MiB, stream));
  cumem_resource_release(four);  // gives everything back
  EXPECT_EQ(make(3 * MiB), nullptr);
  const std::string m = cumem_last_error_message();
  EXPECT_NE(m.find("not a multiple of the granularity"), std::string::npos) << m;
  EXPECT_NE(m.find("2097152 bytes"), std::string::npos) << m;
  EXPECT_EQ(cumem_last_error_message(), m);
}

TEST_F(ExpandableCache, ADeviceWithoutVirtualMemoryIsNotSupported) {
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0);
  cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  o.expandable = CUMEM_TRUE;
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_caching_resource_create_with_options(upstream, &o, &r),
                     CUMEM_ERROR_NOT_SUPPORTED, "cumem_caching_resource_create_with_options");
  EXPECT_EQ(r, nullptr);
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, -2);
}

TEST_F(ExpandableCache, ThreadsOnStreamsOfTheirOwnNeverShareABlock) {
  constexpr int kThreads = 6;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      cumem_stream_t* s = nullptr;
      if (cumem_stream_create(device, nullptr, &s) != CUMEM_SUCCESS) {
        ++bad;
        return;
      }
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::pair<void*, size_t>> live;
      for (int i = 0; i < 300; ++i) {
        if (live.size() < 6 && (rng() % 3 != 0 || live.empty())) {
          const size_t size = (size_t{200} << 10) + rng() % (6 * MiB);
          void* p = nullptr;
          if (cumem_resource_allocate_raw(cache, size, s, &p) != CUMEM_SUCCESS) {
            ++bad;
            break;
          }
          std::memset(p, t + 1, size);
          live.emplace_back(p, size);
        } else {
          const size_t k = rng() % live.size();
          const auto [p, size] = live[k];
          const auto* bytes = static_cast<const unsigned char*>(p);
          for (size_t j = 0; j < size; j += 4093)
            if (bytes[j] != t + 1) ++bad;
          cumem_resource_deallocate_raw(cache, p, size, s);
          live.erase(live.begin() + static_cast<long>(k));
        }
      }
      for (const auto& [p, size] : live) cumem_resource_deallocate_raw(cache, p, size, s);
      cumem_stream_release(s);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 0u);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  EXPECT_EQ(fake.counts().live_bytes, 0u);
  EXPECT_EQ(caching_of(cache).bytes_reserved, 0u);
}

}  // namespace

// Peer access through the generic call (what PyTorch's enablePeerAccess
// asks of the extension): an expandable cache over a virtual-memory
// resource (PeerAccessible, as the device's pool is on a GPU) grants the
// peer its pages (the large and the small blocks'), present and in ranges
// reserved later, and its upstream's memory; revoking takes both back. Over the host-memory upstream of
// the fixture it is refused, naming that upstream.
TEST_F(ExpandableCache, PeerAccessCoversThePagesOfLargeAndSmallBlocks) {
  cumem_device_t* peer = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(1, &peer));
  void* refused = allocate(30 * MiB);  // pages of the fixture's cache over host memory
  const uint64_t access_calls = fake.counts().set_access;
  CUMEM_EXPECT_ERROR(cumem_resource_set_peer_access(cache, peer, CUMEM_TRUE),
                     CUMEM_ERROR_NOT_SUPPORTED, "has no peer access to set");
  EXPECT_EQ(fake.counts().set_access, access_calls) << "refused before any range changed";
  EXPECT_EQ(fake.access_of(refused, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  free(refused, 30 * MiB);

  cumem_resource_t* vmm = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, nullptr, &vmm));
  cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  o.expandable = CUMEM_TRUE;
  o.page_size = 20 * MiB;
  cumem_resource_t* over_vmm = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(vmm, &o, &over_vmm));
  auto alloc = [&](size_t size, cumem_stream_t* on) {
    void* p = nullptr;
    EXPECT_EQ(cumem_resource_allocate_raw(over_vmm, size, on, &p), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return p;
  };
  void* large = alloc(30 * MiB, stream);
  void* small = alloc(4 * KiB, stream);
  EXPECT_EQ(fake.access_of(large, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_EQ(fake.access_of(small, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  cumem_bool_t rw = CUMEM_TRUE;
  CUMEM_EXPECT_ERROR(cumem_resource_get_peer_access(over_vmm, peer, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_read_write");
  CUMEM_EXPECT_ERROR(cumem_resource_set_peer_access(over_vmm, nullptr, CUMEM_TRUE),
                     CUMEM_ERROR_INVALID_ARGUMENT, "peer");
  CUMEM_EXPECT_ERROR(cumem_resource_set_peer_access(nullptr, peer, CUMEM_TRUE),
                     CUMEM_ERROR_INVALID_ARGUMENT, "resource");
  CUMEM_ASSERT_OK(cumem_resource_get_peer_access(over_vmm, peer, &rw));
  EXPECT_EQ(rw, CUMEM_FALSE);

  CUMEM_ASSERT_OK(cumem_resource_set_peer_access(over_vmm, peer, CUMEM_TRUE));
  EXPECT_EQ(fake.access_of(large, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(fake.access_of(static_cast<char*>(large) + 39 * MiB, 1),
            CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "the whole second page";
  EXPECT_EQ(fake.access_of(small, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUMEM_ASSERT_OK(cumem_resource_get_peer_access(over_vmm, peer, &rw));
  EXPECT_EQ(rw, CUMEM_TRUE);
  CUMEM_ASSERT_OK(cumem_resource_get_peer_access(over_vmm, device, &rw));
  EXPECT_EQ(rw, CUMEM_TRUE) << "the cache's own device";
  // Later pages: more of the range, and another stream's new range.
  void* more = alloc(50 * MiB, stream);
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  void* elsewhere = alloc(30 * MiB, other);
  void* small2 = alloc(64 * KiB, other);
  for (void* p : {more, elsewhere, small2})
    EXPECT_EQ(fake.access_of(p, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

  CUMEM_EXPECT_ERROR(cumem_resource_set_peer_access(over_vmm, device, CUMEM_FALSE),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cannot revoke");
  CUMEM_ASSERT_OK(cumem_resource_set_peer_access(over_vmm, peer, CUMEM_FALSE));
  for (void* p : {large, more, elsewhere, small, small2})
    EXPECT_EQ(fake.access_of(p, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_EQ(fake.access_of(large, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "its own device keeps it";

  for (auto [p, n, s] : {std::tuple{large, 30 * MiB, stream}, {more, 50 * MiB, stream},
                         {elsewhere, 30 * MiB, other}, {small, 4 * KiB, stream},
                         {small2, 64 * KiB, other}})
    EXPECT_EQ(cumem_resource_deallocate_raw(over_vmm, p, n, s), CUMEM_SUCCESS);
  cumem_resource_release(over_vmm);
  cumem_resource_release(vmm);
  cumem_stream_release(other);
  cumem_device_release(peer);
}

// With nothing configured, the framework entry points (PyTorch's and
// CuPy's) allocate from the expandable cache over the device's memory
// resource, here a virtual-memory resource (the fake has no pools): large
// and small blocks map pages, neither comes from that resource.
TEST_F(ExpandableCache, TheFrameworkDefaultIsTheExpandableCacheOverTheDevicesMemory) {
  cumem_resource_t* vmm = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, nullptr, &vmm));
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, vmm));
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &r));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_CACHING);
  void* large = cumem_torch_alloc(30 * MiB, 0, nullptr);
  ASSERT_NE(large, nullptr) << cumem_last_error_message();
  EXPECT_GE(caching_of(r).pages_mapped, 1u) << "a large block maps pages";
  EXPECT_EQ(statistics_of(vmm).live_allocations, 0u) << "not from the upstream";
  void* small = cumem_torch_alloc(4 * KiB, 0, nullptr);
  ASSERT_NE(small, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(vmm).live_allocations, 0u) << "the small block is pages too";
  EXPECT_GE(caching_of(r).pages_mapped, 2u) << "a page of the small blocks' range";
  cumem_torch_free(large, 30 * MiB, 0, nullptr);
  cumem_torch_free(small, 4 * KiB, 0, nullptr);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(r, 0));
  cumem_resource_release(r);
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, nullptr));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_release(vmm);
}

// Made with the POSIX fd handle type, the cache shares a block, large or
// small, as the pages that hold it: one fd per page, the block's offset in the first, and
// an importer's buffer that is the block alone (here in this process: the
// fake's pages are shared memory files, so writes through either mapping
// show in the other).
TEST_F(ExpandableCache, ALargeBlockSharesAsThePagesThatHoldIt) {
  cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  o.expandable = CUMEM_TRUE;
  o.page_size = 20 * MiB;
  o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
  cumem_resource_t* shared = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(upstream, &o, &shared));
  void* a = nullptr;
  void* b = nullptr;
  void* small = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_native(shared, 30 * MiB, stream, &a));
  CUMEM_ASSERT_OK(cumem_resource_allocate_native(shared, 10 * MiB, stream, &b));
  CUMEM_ASSERT_OK(cumem_resource_allocate_native(shared, 4 * KiB, stream, &small));
  ASSERT_EQ(b, static_cast<char*>(a) + 30 * MiB) << "b lies in a's second page";

  cumem_virtual_ipc_handle_t* h = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_get_virtual_ipc_handle_native(shared, b, 0, &h));
  uint32_t n = 0;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(h, &n));
  EXPECT_EQ(n, 1u) << "b's one page";
  cumem_buffer_t* imported = nullptr;
  cumem_buffer_t* imported_small = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_from_virtual_ipc_handle(device, h, stream, &imported));
  cumem_virtual_ipc_handle_release(h);
  void* ip = nullptr;
  size_t isize = 0;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(imported, &ip));
  CUMEM_ASSERT_OK(cumem_buffer_size(imported, &isize));
  EXPECT_EQ(isize, 10 * MiB) << "the block alone, not its page";
  EXPECT_NE(ip, b) << "mapped anew";
  std::memset(b, 0x3c, 10 * MiB);
  EXPECT_EQ(static_cast<unsigned char*>(ip)[0], 0x3c);
  EXPECT_EQ(static_cast<unsigned char*>(ip)[10 * MiB - 1], 0x3c);
  static_cast<unsigned char*>(ip)[5] = 0x77;
  EXPECT_EQ(static_cast<unsigned char*>(b)[5], 0x77) << "one memory, two mappings";

  // a spans two pages; shared as less than the block, the pages under it.
  CUMEM_ASSERT_OK(cumem_resource_get_virtual_ipc_handle_native(shared, a, 30 * MiB, &h));
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(h, &n));
  EXPECT_EQ(n, 2u);
  cumem_virtual_ipc_handle_release(h);
  CUMEM_ASSERT_OK(cumem_resource_get_virtual_ipc_handle_native(shared, a, 1 * MiB, &h));
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(h, &n));
  EXPECT_EQ(n, 1u) << "1 MiB of a lies in its first page";
  // The fds again, taken from this process by pid where the kernel lets it.
  std::vector<int32_t> fds(n);
  for (uint32_t i = 0; i < n; ++i) CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd(h, i, &fds[i]));
  size_t length = 0;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_descriptor(h, nullptr, 0, &length));
  std::vector<uint8_t> descriptor(length);
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_descriptor(h, descriptor.data(), length, &length));
  cumem_virtual_ipc_handle_t* again = nullptr;
  const cumem_status_t st = cumem_virtual_ipc_handle_from_pid(
      descriptor.data(), length, static_cast<int32_t>(getpid()), fds.data(), n, &again);
  if (st == CUMEM_SUCCESS) {
    cumem_buffer_t* second = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_from_virtual_ipc_handle(device, again, stream, &second));
    void* sp = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_ptr(second, &sp));
    static_cast<unsigned char*>(a)[100] = 0x42;
    EXPECT_EQ(static_cast<unsigned char*>(sp)[100], 0x42);
    CUMEM_ASSERT_OK(cumem_buffer_close(second, stream));
    cumem_buffer_release(second);
    cumem_virtual_ipc_handle_release(again);
  } else {
    EXPECT_EQ(st, CUMEM_ERROR_NOT_SUPPORTED) << cumem_last_error_message();
  }
  // The wrong pid is refused before any fd is taken.
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_from_pid(descriptor.data(), length, 1, fds.data(),
                                                       n, &again),
                     st == CUMEM_SUCCESS ? CUMEM_ERROR_INVALID_ARGUMENT : CUMEM_ERROR_NOT_SUPPORTED,
                     "");
  cumem_virtual_ipc_handle_release(h);

  // A small block shares as its page; not as a buffer of the upstream.
  CUMEM_ASSERT_OK(cumem_resource_get_virtual_ipc_handle_native(shared, small, 0, &h));
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(h, &n));
  EXPECT_EQ(n, 1u) << "the small block's one page";
  CUMEM_ASSERT_OK(cumem_buffer_from_virtual_ipc_handle(device, h, stream, &imported_small));
  cumem_virtual_ipc_handle_release(h);
  CUMEM_ASSERT_OK(cumem_buffer_ptr(imported_small, &ip));
  CUMEM_ASSERT_OK(cumem_buffer_size(imported_small, &isize));
  EXPECT_EQ(isize, 4 * KiB) << "the block alone";
  std::memset(small, 0x5a, 4 * KiB);
  EXPECT_EQ(static_cast<unsigned char*>(ip)[4 * KiB - 1], 0x5a);
  cumem_ipc_descriptor_t d;
  CUMEM_EXPECT_ERROR(cumem_resource_get_ipc_descriptor_native(shared, small, 0, &d),
                     CUMEM_ERROR_NOT_SUPPORTED, "virtual IPC handle");

  // What cannot be shared says why.
  CUMEM_EXPECT_ERROR(cumem_resource_get_virtual_ipc_handle_native(shared, static_cast<char*>(a) + 512,
                                                                  0, &h),
                     CUMEM_ERROR_INVALID_ARGUMENT, "no block");
  CUMEM_EXPECT_ERROR(cumem_resource_get_virtual_ipc_handle_native(shared, b, 10 * MiB + 1, &h),
                     CUMEM_ERROR_INVALID_ARGUMENT, "the block there has");
  void* plain = allocate(30 * MiB);  // the fixture's cache: no handle type
  CUMEM_EXPECT_ERROR(cumem_resource_get_virtual_ipc_handle_native(cache, plain, 0, &h),
                     CUMEM_ERROR_NOT_SUPPORTED, "without the POSIX fd handle type");
  free(plain, 30 * MiB);
  // A buffer of the cache shares the same way.
  cumem_buffer_t* buffer = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(shared, 24 * MiB, stream, &buffer));
  CUMEM_ASSERT_OK(cumem_buffer_get_virtual_ipc_handle(buffer, &h));
  cumem_virtual_ipc_handle_release(h);
  CUMEM_ASSERT_OK(cumem_buffer_close(buffer, stream));
  cumem_buffer_release(buffer);

  CUMEM_ASSERT_OK(cumem_buffer_close(imported, stream));
  cumem_buffer_release(imported);
  CUMEM_ASSERT_OK(cumem_buffer_close(imported_small, stream));
  cumem_buffer_release(imported_small);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_native(shared, a, 30 * MiB, stream));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_native(shared, b, 10 * MiB, stream));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_native(shared, small, 4 * KiB, stream));
  cumem_resource_release(shared);
  // Other handle types are refused.
  o.handle_types = CUMEM_IPC_HANDLE_FABRIC;
  cumem_resource_t* refused = nullptr;
  CUMEM_EXPECT_ERROR(cumem_caching_resource_create_with_options(upstream, &o, &refused),
                     CUMEM_ERROR_INVALID_ARGUMENT, "only the POSIX fd handle type");
}
