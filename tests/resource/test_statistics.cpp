// Statistics that mean what they say, on the host resource (no GPU): a
// wrong free size cannot wrap bytes_in_use, and peak_bytes_in_use is never
// read below bytes_in_use, even while reset_peak races with allocations.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

TEST(Statistics, FreeWithASizeAboveBytesInUseIsRefused) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &r));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 100, nullptr, &p));
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(r, p, 200, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "not the allocation's");
  cumem_resource_statistics_t s = statistics_of(r);
  EXPECT_EQ(s.bytes_in_use, 100u);
  EXPECT_EQ(s.live_allocations, 1u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, p, 100, nullptr));
  s = statistics_of(r);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.live_allocations, 0u);
  cumem_resource_release(r);
}

TEST(Statistics, PeakIsNeverBelowInUseWhileResetRaces) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &r));
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0}, reads{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 8; ++t)
    workers.emplace_back([&, t] {
      const size_t size = 64 + 64 * static_cast<size_t>(t);
      while (!stop.load(std::memory_order_relaxed)) {
        void* p = nullptr;
        if (cumem_resource_allocate_raw(r, size, nullptr, &p) != CUMEM_SUCCESS) return;
        cumem_resource_deallocate_raw(r, p, size, nullptr);
      }
    });
  std::thread resetter([&] {
    while (!stop.load(std::memory_order_relaxed)) cumem_resource_reset_peak(r);
  });
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const cumem_resource_statistics_t s = statistics_of(r);
      if (s.peak_bytes_in_use < s.bytes_in_use) bad.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  stop = true;
  for (auto& w : workers) w.join();
  resetter.join();
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(bad.load(), 0) << "snapshots with peak below in-use, of " << reads.load();
  const cumem_resource_statistics_t s = statistics_of(r);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.live_allocations, 0u);
  cumem_resource_release(r);
}

TEST(Statistics, HostAlignmentIsCappedAtTwoMebibytes) {
  cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  o.alignment = size_t{1} << 32;
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT, "2097152");
  EXPECT_EQ(r, nullptr);
  o.alignment = size_t{1} << 21;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&o, &r));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 1, nullptr, &p));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (uintptr_t{1} << 21), 0u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, p, 1, nullptr));
  cumem_resource_release(r);
}

}  // namespace
