// Handle lifetime as the header's conventions promise it: wrong-type,
// released and surplus releases are refused with a message, never a crash,
// and never destroy an object that libcumem still uses.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

class Handles : public ::testing::Test {
 protected:
  void SetUp() override { CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &resource)); }
  void TearDown() override { EXPECT_EQ(cumem_resource_release(resource), CUMEM_SUCCESS); }
  cumem_resource_t* resource = nullptr;
};

TEST_F(Handles, ReleaseOfNullSucceeds) {
  EXPECT_EQ(cumem_buffer_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_resource_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_device_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_stream_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_event_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_program_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_library_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_kernel_release(nullptr), CUMEM_SUCCESS);
}

TEST_F(Handles, ReleaseOfAnotherTypeIsRefusedAndChangesNothing) {
  CUMEM_EXPECT_ERROR(cumem_buffer_release(reinterpret_cast<cumem_buffer_t*>(resource)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "is a cumem_resource_t, not a cumem_buffer_t");
  CUMEM_EXPECT_ERROR(cumem_stream_release(reinterpret_cast<cumem_stream_t*>(resource)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "not a cumem_stream_t");
  // The resource is untouched: it still allocates.
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 64, nullptr, &b));
  CUMEM_EXPECT_ERROR(cumem_resource_release(reinterpret_cast<cumem_resource_t*>(b)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "is a cumem_buffer_t, not a cumem_resource_t");
  EXPECT_EQ(cumem_buffer_release(b), CUMEM_SUCCESS);
}

TEST_F(Handles, DoubleReleaseAndUseAfterReleaseAreReported) {
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 64, nullptr, &b));
  EXPECT_EQ(cumem_buffer_release(b), CUMEM_SUCCESS);
  // Until its slot is reused, the dead handle is recognised as dead.
  size_t size = 7;
  CUMEM_EXPECT_ERROR(cumem_buffer_size(b, &size), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  EXPECT_EQ(size, 7u);
  CUMEM_EXPECT_ERROR(cumem_buffer_retain(b), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  CUMEM_EXPECT_ERROR(cumem_buffer_release(b), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  cumem_resource_statistics_t st = CUMEM_RESOURCE_STATISTICS_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_statistics(resource, &st));
  EXPECT_EQ(st.live_allocations, 0u);
}

TEST_F(Handles, SurplusReleaseNeverDestroysWhatABufferUses) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &r));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4096, nullptr, &b));
  EXPECT_EQ(cumem_resource_release(r), CUMEM_SUCCESS);
  // The user holds no reference any more: a second release is refused, and
  // the buffer's own reference keeps the resource alive.
  CUMEM_EXPECT_ERROR(cumem_resource_release(r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "released once too often");
  cumem_resource_statistics_t st = CUMEM_RESOURCE_STATISTICS_INIT;
  CUMEM_EXPECT_ERROR(cumem_resource_get_statistics(r, &st), CUMEM_ERROR_INVALID_ARGUMENT,
                     "released");
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xab, 1, nullptr));
  // The buffer hands the same resource back, as a live handle again.
  cumem_resource_t* again = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_resource(b, &again));
  EXPECT_EQ(again, r);
  CUMEM_ASSERT_OK(cumem_resource_get_statistics(again, &st));
  EXPECT_EQ(st.bytes_in_use, 4096u);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  EXPECT_EQ(cumem_buffer_release(b), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_resource_release(again), CUMEM_SUCCESS);
  CUMEM_EXPECT_ERROR(cumem_resource_release(again), CUMEM_ERROR_INVALID_ARGUMENT, "released");
}

TEST_F(Handles, RetainCountsOneMoreRelease) {
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 16, nullptr, &b));
  CUMEM_ASSERT_OK(cumem_buffer_retain(b));
  EXPECT_EQ(cumem_buffer_release(b), CUMEM_SUCCESS);
  size_t size = 0;
  CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));  // one reference left
  EXPECT_EQ(size, 16u);
  EXPECT_EQ(cumem_buffer_release(b), CUMEM_SUCCESS);
  CUMEM_EXPECT_ERROR(cumem_buffer_release(b), CUMEM_ERROR_INVALID_ARGUMENT, "released");
}

TEST_F(Handles, SliceKeepsItsParentAfterTheUserReleasesIt) {
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 256, nullptr, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x5a, 1, nullptr));
  cumem_buffer_t* view = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(b, 128, 128, &view));
  EXPECT_EQ(cumem_buffer_release(b), CUMEM_SUCCESS);
  CUMEM_EXPECT_ERROR(cumem_buffer_release(b), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(view, &p));
  EXPECT_EQ(static_cast<unsigned char*>(p)[127], 0x5a);
  EXPECT_EQ(cumem_buffer_release(view), CUMEM_SUCCESS);
}

// A resource's references are counted per thread while the user holds a
// handle (buffers from many threads, freed on other threads), and all of
// them come back when the handle goes: the resource is destroyed exactly
// when its last buffer is, even when the handle goes while other threads
// are releasing buffers. Observed through a caching adaptor, which gives
// its blocks back to the host resource only when it is destroyed.
TEST_F(Handles, AResourceLivesExactlyAsLongAsItsBuffersFromManyThreads) {
  for (int round = 0; round < 3; ++round) {
    cumem_resource_t* host = nullptr;
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
    cumem_resource_t* cache = nullptr;
    CUMEM_ASSERT_OK(cumem_caching_resource_create(host, &cache));
    std::mutex mutex;
    std::vector<cumem_buffer_t*> pool;  // buffers one thread made, another frees
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 3000; ++i) {
          cumem_buffer_t* b = nullptr;
          if (cumem_resource_allocate(cache, 64 + static_cast<size_t>((t * 7 + i) % 4000), nullptr,
                                      &b) != CUMEM_SUCCESS) {
            ++failures;
            return;
          }
          cumem_buffer_t* other = nullptr;
          {
            std::lock_guard<std::mutex> lock(mutex);
            pool.push_back(b);
            if (pool.size() > 200 + static_cast<size_t>(t)) {
              other = pool.front();
              pool.erase(pool.begin());
            }
          }
          if (other && cumem_buffer_release(other) != CUMEM_SUCCESS) ++failures;
        }
      });
    for (auto& th : threads) th.join();
    ASSERT_EQ(failures.load(), 0);
    ASSERT_GT(pool.size(), 100u);
    cumem_resource_statistics_t st = CUMEM_RESOURCE_STATISTICS_INIT;
    CUMEM_ASSERT_OK(cumem_resource_get_statistics(cache, &st));
    EXPECT_EQ(st.live_allocations, pool.size());
    // The handle goes: before (round 0), while (round 1) or after (round 2)
    // other threads release the buffers.
    if (round == 0) {
      EXPECT_EQ(cumem_resource_release(cache), CUMEM_SUCCESS);
    }
    const size_t half = pool.size() / 2;
    std::thread a([&] {
      for (size_t i = 0; i < half; ++i)
        if (cumem_buffer_release(pool[i]) != CUMEM_SUCCESS) ++failures;
    });
    std::thread b([&] {
      for (size_t i = half; i + 1 < pool.size(); ++i)
        if (cumem_buffer_release(pool[i]) != CUMEM_SUCCESS) ++failures;
    });
    if (round == 1) {
      EXPECT_EQ(cumem_resource_release(cache), CUMEM_SUCCESS);
    }
    a.join();
    b.join();
    EXPECT_EQ(failures.load(), 0);
    if (round == 2) {
      EXPECT_EQ(cumem_resource_release(cache), CUMEM_SUCCESS);
    }
    // One buffer left: it keeps the cache, and with it the cached blocks.
    CUMEM_ASSERT_OK(cumem_resource_get_statistics(host, &st));
    EXPECT_GT(st.bytes_in_use, 0u) << "the cache lives while a buffer of it does";
    EXPECT_EQ(cumem_buffer_release(pool.back()), CUMEM_SUCCESS);
    CUMEM_ASSERT_OK(cumem_resource_get_statistics(host, &st));
    EXPECT_EQ(st.bytes_in_use, 0u) << "round " << round
                                   << ": the cache was destroyed with its last buffer";
    EXPECT_EQ(cumem_resource_release(host), CUMEM_SUCCESS);
  }
}

}  // namespace
