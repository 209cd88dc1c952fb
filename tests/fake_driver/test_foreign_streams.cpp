// The caching adaptor on streams libcumem did not make (a framework's:
// PyTorch's side streams, CuPy's, any wrapped CUstream), on the fake
// capturing driver (fake_capture_driver.cpp, named in $CUMEM_LIBCUDA), which
// counts every driver call and every record on a destroyed stream. Such a
// stream may be destroyed while the cache holds blocks freed on it, so the
// cache never queues work on it later than the call that named it: a block
// freed there is reused on another stream after a record of the stream's
// free marker that covers its free (Stream::mark_free). Large frees record
// at once, small ones every 16th free.
#include <cuda.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "capture_fixture.hpp"
#include "test_util.hpp"

namespace {

using capture_test::Capture;

// A caching adaptor over a pool, and a foreign stream made with the
// driver and wrapped (`wrapped`), beside the fixture's libcumem stream.
class ForeignStream : public Capture {
 protected:
  void SetUp() override {
    Capture::SetUp();
    if (HasFatalFailure()) return;
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
    CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
    ASSERT_EQ(fake.stream_create(&foreign, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
    CUMEM_ASSERT_OK(cumem_stream_wrap(device, foreign, &wrapped));
  }
  void TearDown() override {
    destroy_foreign();
    cumem_resource_release(cache);
    cumem_resource_release(pool);
    Capture::TearDown();
  }
  // The owner destroys its stream (the wrapper goes first).
  void destroy_foreign() {
    cumem_stream_release(wrapped);
    wrapped = nullptr;
    if (foreign) {
      EXPECT_EQ(fake.stream_destroy(foreign), CUDA_SUCCESS);
    }
    foreign = nullptr;
  }
  // `n` more streams made with the driver, as a framework makes its own.
  std::vector<CUstream> make_streams(int n) {
    std::vector<CUstream> made;
    for (int i = 0; i < n; ++i) {
      CUstream s = nullptr;
      EXPECT_EQ(fake.stream_create(&s, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
      made.push_back(s);
    }
    return made;
  }
  void destroy_streams(const std::vector<CUstream>& streams) {
    for (CUstream s : streams) EXPECT_EQ(fake.stream_destroy(s), CUDA_SUCCESS);
  }
  void* allocate(size_t size, cumem_stream_t* on) {
    void* p = nullptr;
    EXPECT_EQ(cumem_resource_allocate_raw(cache, size, on, &p), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return p;
  }
  void deallocate(void* p, size_t size, cumem_stream_t* on) {
    EXPECT_EQ(cumem_resource_deallocate_raw(cache, p, size, on), CUMEM_SUCCESS)
        << cumem_last_error_message();
  }
  // Buffers allocated on `on`, then freed without a stream: on their own
  // (remembered) stream. Returns their addresses.
  std::vector<void*> release_buffers(size_t count, size_t size, cumem_stream_t* on) {
    std::vector<cumem_buffer_t*> buffers(count);
    std::vector<void*> at;
    for (cumem_buffer_t*& b : buffers) {
      EXPECT_EQ(cumem_resource_allocate(cache, size, on, &b), CUMEM_SUCCESS);
      void* p = nullptr;
      EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS);
      at.push_back(p);
    }
    for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
    return at;
  }
  cumem_caching_statistics_t statistics() {
    cumem_caching_statistics_t st = CUMEM_CACHING_STATISTICS_INIT;
    EXPECT_EQ(cumem_caching_resource_get_statistics(cache, &st), CUMEM_SUCCESS);
    return st;
  }
  // Driver calls that order a reuse: a wait for an event, or for the device.
  int waits() { return fake.calls("cuStreamWaitEvent") + fake.calls("cuCtxSynchronize"); }

  cumem_resource_t* pool = nullptr;
  cumem_resource_t* cache = nullptr;
  CUstream foreign = nullptr;
  cumem_stream_t* wrapped = nullptr;
};

bool contains(const std::vector<void*>& v, void* p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

// The owner destroys its stream while the cache holds blocks freed on it:
// their reuse on another stream never touches the dead stream (found on the
// H200 with CuPy: cuEventRecord on it crashed); it waits for a record of the
// stream's free marker made while the stream was named. A large piece's
// free records at once; sixteen small frees take one record.
TEST_F(ForeignStream, ABlockFreedOnAStreamThatIsGoneIsReusedSafely) {
  const size_t large = size_t{8} << 20;
  void* p = allocate(large, wrapped);
  fake.reset_calls();
  deallocate(p, large, wrapped);
  EXPECT_EQ(fake.calls("cuEventRecord"), 1) << "a large piece's free records the marker";
  // Reused on the same stream: no order needed while it lives.
  void* again = allocate(large, wrapped);
  EXPECT_EQ(again, p);
  deallocate(again, large, wrapped);
  std::vector<void*> small(16);
  for (void*& q : small) q = allocate(4096, wrapped);
  fake.reset_calls();
  for (void* q : small) deallocate(q, 4096, wrapped);
  EXPECT_EQ(fake.calls("cuEventRecord"), 1) << "16 small frees, one record";
  destroy_foreign();
  fake.reset_calls();
  const cumem_caching_statistics_t before = statistics();
  deallocate(allocate(large, stream), large, stream);
  void* reused = allocate(4096, stream);
  EXPECT_TRUE(contains(small, reused)) << "a small block, reused";
  deallocate(reused, 4096, stream);
  const cumem_caching_statistics_t after = statistics();
  EXPECT_EQ(after.stream_reuses - before.stream_reuses, 2u) << "both blocks served the other stream";
  EXPECT_EQ(after.misses, before.misses) << "with no new memory";
  EXPECT_EQ(fake.calls("cuEventRecord on a destroyed stream"), 0);
  EXPECT_EQ(fake.calls("cuStreamWaitEvent"), 2) << "each reuse waits for the marker";
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0) << "and not for the device";
}

// A pair of small blocks on a foreign stream costs a driver call only every
// kMarkEvery frees; a block its last record does not cover is not reused on
// another stream (no wait for the device either) until a later record
// covers it.
TEST_F(ForeignStream, SmallFreesRecordTheMarkerEverySixteenth) {
  fake.reset_calls();
  for (int i = 0; i < 160; ++i) deallocate(allocate(256, wrapped), 256, wrapped);
  EXPECT_EQ(fake.calls("cuEventRecord"), 10) << "160 pairs, a record every 16th free";
  EXPECT_EQ(waits(), 0);
  // One more free: not covered (the 160th was recorded).
  void* uncovered = allocate(256, wrapped);
  deallocate(uncovered, 256, wrapped);
  fake.reset_calls();
  void* other = allocate(256, stream);
  EXPECT_NE(other, uncovered) << "another stream does not take the uncovered block";
  EXPECT_EQ(waits(), 0);
  // Fifteen more frees (of another size class) on the foreign stream: the
  // sixteenth uncovered one records, covering the first.
  std::vector<void*> more(15);
  for (void*& q : more) q = allocate(4096, wrapped);
  for (void* q : more) deallocate(q, 4096, wrapped);
  EXPECT_EQ(fake.calls("cuEventRecord"), 1);
  void* covered = allocate(256, stream);
  EXPECT_EQ(covered, uncovered) << "covered now, it serves another stream";
  EXPECT_EQ(fake.calls("cuStreamWaitEvent"), 1) << "after the marker";
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0);
  deallocate(covered, 256, stream);
  deallocate(other, 256, stream);
}

// Threads freeing on one foreign stream and allocating on another share the
// marker's counts without a lock between records: no block is handed to the
// other stream without a wait for a record that covers it, and none waits
// for the device (run under ThreadSanitizer too).
TEST_F(ForeignStream, ThreadsShareTheMarker) {
  const cumem_caching_statistics_t before = statistics();
  fake.reset_calls();
  constexpr int kThreads = 4, kRounds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      // Every block is freed on the foreign stream; those the other
      // stream takes are reuses across streams.
      for (int i = 0; i < kRounds; ++i) {
        void* p = allocate(512, wrapped);
        void* q = allocate(512, stream);
        deallocate(p, 512, wrapped);
        deallocate(q, 512, wrapped);
      }
    });
  for (std::thread& t : threads) t.join();
  const uint64_t reuses = statistics().stream_reuses - before.stream_reuses;
  EXPECT_GT(reuses, 0u) << "blocks moved between the streams";
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0) << "never a wait for the device";
  // Each reuse waits for the marker, which is recorded about every 16th
  // free (more often when threads pass the count together: the bound is
  // loose; a record per free would pass it eight times).
  EXPECT_EQ(fake.calls("cuStreamWaitEvent"), reuses);
  EXPECT_LE(fake.calls("cuEventRecord"), kThreads * kRounds * 2 / 8);
}

// Frees where a foreign stream was only remembered (buffers released
// without a stream, as CuPy frees) record nothing on it; the next
// allocation on it (named, so alive) covers them once kMarkEvery are
// uncovered, and their blocks then serve other streams after the marker.
TEST_F(ForeignStream, FreesWhereItWasRememberedAreCoveredAtItsNextAllocation) {
  fake.reset_calls();
  const std::vector<void*> freed = release_buffers(16, 4096, wrapped);
  EXPECT_EQ(fake.calls("cuEventRecord"), 0) << "nothing queued where the stream was remembered";
  void* fresh = allocate(4096, stream);
  EXPECT_FALSE(contains(freed, fresh)) << "not covered yet";
  EXPECT_EQ(waits(), 0);
  fake.reset_calls();
  void* on_foreign = allocate(65536, wrapped);  // a class the cache holds none of
  EXPECT_EQ(fake.calls("cuEventRecord"), 1) << "the allocation on the stream records its marker";
  void* p = allocate(4096, stream);
  EXPECT_TRUE(contains(freed, p)) << "covered, it serves";
  EXPECT_EQ(fake.calls("cuStreamWaitEvent"), 1);
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0);
  deallocate(p, 4096, stream);
  deallocate(fresh, 4096, stream);
  deallocate(on_foreign, 65536, wrapped);
}

// A trim that keeps an uncovered block waited for the device: the block
// then serves any stream, with nothing to wait for.
TEST_F(ForeignStream, AnUncoveredBlockATrimKeepsServesAnyStream) {
  void* freed = release_buffers(1, 4096, wrapped)[0];  // not covered
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, uint64_t{1} << 30));
  fake.reset_calls();
  void* p = allocate(4096, stream);
  EXPECT_EQ(p, freed) << "kept by the trim, the block serves another stream";
  EXPECT_EQ(waits(), 0) << "with no order to wait for";
  deallocate(p, 4096, stream);
}

// A buffer released (on its remembered stream) after the stream's owner
// destroyed it: the free queues nothing on it, and its block serves no
// other stream (no record will cover it) until the cache gives it back,
// after a wait for the device.
TEST_F(ForeignStream, ABufferReleasedAfterItsStreamIsGoneNeverTouchesIt) {
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(cache, 4096, wrapped, &b));
  void* freed = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &freed));
  destroy_foreign();
  fake.reset_calls();
  // The capture question's error on the buffer's stream says it is gone;
  // nothing is recorded on it.
  cumem_buffer_release(b);
  EXPECT_EQ(fake.calls("cuEventRecord"), 0);
  void* p = allocate(4096, stream);
  EXPECT_NE(p, freed) << "the uncovered block serves no other stream";
  EXPECT_EQ(fake.calls("cuEventRecord on a destroyed stream"), 0);
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0);
  deallocate(p, 4096, stream);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(fake.calls("cuEventRecord on a destroyed stream"), 0);
  EXPECT_GE(fake.calls("cuCtxSynchronize"), 1) << "given back after a wait for the device";
  EXPECT_EQ(statistics().bytes_cached, 0u) << "nothing stays cached";
}

// Memory for the callback resources below (host memory the tests call the
// device's: nothing touches it), 256-byte aligned as device memory is.
void* block_of(size_t size) { return std::aligned_alloc(256, (size + 255) / 256 * 256); }

// The framework entry points use a framework's stream without taking a
// reference on its wrapper: they borrow this thread's cached wrapper for
// the call (src/native_stream.hpp, BorrowedStream). A resource that calls
// back into libcumem on more streams than the thread's cache holds (16)
// must not replace the borrowed wrapper under the call: the allocation is
// still recorded on, and freed on, the stream it was made on.
struct NestedLookups {
  cumem_resource_t* cache = nullptr;
  std::vector<CUstream> others;
  std::vector<CUstream> allocated_on, freed_on;
};

TEST_F(ForeignStream, AFrameworkCallKeepsItsStreamThroughNestedLookups) {
  NestedLookups nested;
  nested.cache = cache;
  nested.others = make_streams(20);
  cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
  c.memory_kind = CUMEM_MEMORY_DEVICE;
  c.user_data = &nested;
  c.allocate = [](size_t size, void* stream, void* user, void** out) -> int32_t {
    auto* n = static_cast<NestedLookups*>(user);
    n->allocated_on.push_back(static_cast<CUstream>(stream));
    // Pairs on every other stream: more lookups than the cache has entries.
    for (CUstream other : n->others) {
      void* p = nullptr;
      if (cumem_resource_allocate_native(n->cache, 256, other, &p) != CUMEM_SUCCESS ||
          cumem_resource_deallocate_native(n->cache, p, 256, other) != CUMEM_SUCCESS)
        return 1;
    }
    *out = block_of(size);
    return *out ? 0 : 1;
  };
  c.deallocate = [](void* ptr, size_t, void* stream, void* user) {
    static_cast<NestedLookups*>(user)->freed_on.push_back(static_cast<CUstream>(stream));
    std::free(ptr);
  };
  cumem_resource_t* calling_back = nullptr;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(device, &c, &calling_back));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, calling_back));
  fake.reset_calls();
  for (int round = 0; round < 3; ++round) {
    void* p = cumem_torch_alloc(1024, 0, foreign);
    ASSERT_NE(p, nullptr) << cumem_last_error_message();
    cumem_torch_free(p, 1024, 0, foreign);
    void* q = cumem_cupy_malloc(nullptr, 512, 0);  // legacy stream; its free names none
    ASSERT_NE(q, nullptr) << cumem_last_error_message();
    cumem_cupy_free(nullptr, q, 0);
  }
  const std::vector<CUstream> expected = {foreign, nullptr, foreign, nullptr, foreign, nullptr};
  EXPECT_EQ(nested.allocated_on, expected);
  EXPECT_EQ(nested.freed_on, expected) << "each free on the allocation's stream";
  // A record of another stream would order each free after that one's
  // work (a framework's stream: by waiting for the device).
  EXPECT_EQ(fake.calls("cuStreamWaitEvent"), 0) << "no free was ordered after another stream";
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0) << "no free waited for the device";
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_release(calling_back);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  destroy_streams(nested.others);
}

// Calls nested deeper than the thread's cache has entries (16), each on a
// stream of its own: every entry is lent, so the innermost calls use
// wrappers made for them alone; each allocation is still made and freed on
// its stream, and the cache serves again once the calls return.
struct DeepNesting {
  std::vector<CUstream> streams;
  size_t depth = 0;
  std::vector<std::pair<void*, CUstream>> inner;  // what the nested calls got
  std::vector<CUstream> allocated_on, freed_on;
};

TEST_F(ForeignStream, CallsNestedDeeperThanTheStreamCacheUseWrappersOfTheirOwn) {
  DeepNesting deep;
  deep.streams = make_streams(20);
  cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
  c.memory_kind = CUMEM_MEMORY_DEVICE;
  c.user_data = &deep;
  c.allocate = [](size_t size, void* stream, void* user, void** out) -> int32_t {
    auto* d = static_cast<DeepNesting*>(user);
    d->allocated_on.push_back(static_cast<CUstream>(stream));
    // Each call allocates once more through the framework, on the next
    // stream, until all 20 are in use.
    if (++d->depth < d->streams.size()) {
      CUstream next = d->streams[d->depth];
      void* p = cumem_torch_alloc(256, 0, next);
      if (!p) return 1;
      d->inner.emplace_back(p, next);
    }
    *out = block_of(size);
    return *out ? 0 : 1;
  };
  c.deallocate = [](void* ptr, size_t, void* stream, void* user) {
    static_cast<DeepNesting*>(user)->freed_on.push_back(static_cast<CUstream>(stream));
    std::free(ptr);
  };
  cumem_resource_t* nesting = nullptr;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(device, &c, &nesting));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nesting));
  fake.reset_calls();
  void* outer = cumem_torch_alloc(1024, 0, deep.streams[0]);
  ASSERT_NE(outer, nullptr) << cumem_last_error_message();
  ASSERT_EQ(deep.inner.size(), deep.streams.size() - 1);
  EXPECT_EQ(deep.allocated_on, deep.streams) << "each call on its own stream";
  for (auto& [p, s] : deep.inner) cumem_torch_free(p, 256, 0, s);
  cumem_torch_free(outer, 1024, 0, deep.streams[0]);
  std::vector<CUstream> expected;  // the order of the frees above
  for (auto& [p, s] : deep.inner) expected.push_back(s);
  expected.push_back(deep.streams[0]);
  EXPECT_EQ(deep.freed_on, expected) << "each free on its allocation's stream";
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0) << "no free was ordered after another stream";
  // The cache is lent to nobody now: a plain pair on each stream works.
  deep.depth = deep.streams.size();  // no more nesting
  for (CUstream s : deep.streams) {
    void* p = cumem_torch_alloc(512, 0, s);
    ASSERT_NE(p, nullptr) << cumem_last_error_message();
    cumem_torch_free(p, 512, 0, s);
  }
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_release(nesting);
  destroy_streams(deep.streams);
}

// A framework resource of no device (host memory the device maps): the
// allocation finds its stream's device from the driver, and the record
// keeps it, so that a free on another thread (whose cache of wrappers has
// none for the stream yet) makes its wrapper on that device without asking
// for it again: one cuStreamGetDevice (the new wrapper's own check), not
// two (which would also fail where the stream captures).
TEST_F(ForeignStream, AFreeOnAnotherThreadKnowsTheStreamsDevice) {
  cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
  c.device_accessible = CUMEM_TRUE;
  c.allocate = [](size_t size, void*, void*, void** out) -> int32_t {
    *out = block_of(size);
    return *out ? 0 : 1;
  };
  c.deallocate = [](void* ptr, size_t, void*, void*) { std::free(ptr); };
  cumem_resource_t* mapped = nullptr;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(nullptr, &c, &mapped));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, mapped));
  fake.reset_calls();
  void* p = cumem_torch_alloc(4096, 0, foreign);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  const int asked = fake.calls("cuStreamGetDevice");
  EXPECT_EQ(asked, 2) << "the allocation: the stream's device, then the wrapper's check";
  std::thread([&] { cumem_torch_free(p, 4096, 0, foreign); }).join();
  EXPECT_EQ(fake.calls("cuStreamGetDevice"), asked + 1)
      << "the free on another thread asked for the stream's device again";
  EXPECT_EQ(statistics_of(mapped).live_allocations, 0u);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_release(mapped);
}

// A thread's cache of native stream wrappers (cumem_resource_allocate_native,
// the framework entry points) holds them until the thread exits, then lets
// them go: the last wrapper of a stream takes its free marker (an event,
// recorded by a large free) with it.
TEST_F(ForeignStream, AThreadsCachedWrapperOfAStreamGoesWithTheThread) {
  const std::vector<CUstream> own = make_streams(1);
  constexpr size_t kLarge = size_t{4} << 20;
  std::mutex mutex;
  std::condition_variable changed;
  bool used = false, go = false;
  std::thread t([&] {
    void* p = nullptr;
    EXPECT_EQ(cumem_resource_allocate_native(cache, kLarge, own[0], &p), CUMEM_SUCCESS)
        << cumem_last_error_message();
    EXPECT_EQ(cumem_resource_deallocate_native(cache, p, kLarge, own[0]), CUMEM_SUCCESS)
        << cumem_last_error_message();
    std::unique_lock<std::mutex> lock(mutex);
    used = true;
    changed.notify_all();
    changed.wait(lock, [&] { return go; });
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return used; });
  }
  EXPECT_GE(fake.calls("cuEventCreate"), 1) << "the large free recorded the stream's marker";
  const int destroyed = fake.calls("cuEventDestroy");
  // The cache's blocks let go of the stream; the thread's wrapper holds it.
  cumem_resource_release(cache);
  cache = nullptr;
  EXPECT_EQ(fake.calls("cuEventDestroy"), destroyed);
  {
    std::lock_guard<std::mutex> lock(mutex);
    go = true;
  }
  changed.notify_all();
  t.join();
  EXPECT_EQ(fake.calls("cuEventDestroy"), destroyed + 1)
      << "the thread's exit let go of the last wrapper, and its marker";
  destroy_streams(own);
}

// A thread's cache entry lent last, then replaced by lookups that lend
// nothing (a stream libcumem made, the allocation's stream of a free on
// another stream), is never lent for its old stream again: that stream's
// wrapper is made anew (so that any shortcut to the entry lent last, as
// 90760e3 tried, forgets it when it is replaced).
TEST_F(ForeignStream, AReplacedCacheEntryIsNotLentAgain) {
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, cache));
  // s[0]: the stream lent last; s[1..15] fill the cache; s[16]: another
  // thread's allocation.
  const std::vector<CUstream> s = make_streams(17);
  cumem_stream_t* owned = nullptr;
  void* owned_native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &owned));
  CUMEM_ASSERT_OK(cumem_stream_native(owned, &owned_native));
  void* elsewhere = nullptr;
  std::thread([&] { elsewhere = cumem_torch_alloc(256, 0, s[16]); }).join();
  ASSERT_NE(elsewhere, nullptr) << cumem_last_error_message();
  std::thread([&] {
    // A fresh cache: s[0] in its first entry, then fifteen more.
    for (int i = 0; i < 16; ++i) {
      void* p = cumem_torch_alloc(256, 0, s[i]);
      ASSERT_NE(p, nullptr) << cumem_last_error_message();
      cumem_torch_free(p, 256, 0, s[i]);
    }
    void* p = cumem_torch_alloc(256, 0, s[0]);  // lent last
    ASSERT_NE(p, nullptr) << cumem_last_error_message();
    cumem_torch_free(p, 256, 0, s[0]);
    // Freed on a stream libcumem made (lent nothing) after s[16]'s work:
    // both lookups take entries, the first of them s[0]'s.
    cumem_torch_free(elsewhere, 256, 0, owned_native);
    const int asked = fake.calls("cuStreamGetDevice");
    p = cumem_torch_alloc(256, 0, s[0]);
    ASSERT_NE(p, nullptr) << cumem_last_error_message();
    EXPECT_EQ(fake.calls("cuStreamGetDevice"), asked + 1)
        << "s[0]'s wrapper was made again (its device checked), not lent from the entry "
           "another stream took";
    cumem_torch_free(p, 256, 0, s[0]);
  }).join();
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_stream_release(owned);
  destroy_streams(s);
}

}  // namespace
