// Snapshots of a pool on the capturing fake driver (tests/fake_driver/
// fake_capture_driver.cpp), which has a default memory pool: the pool's
// attributes, its allocations from the history (each its own segment),
// the cache's segments over it listed once, trims, and the device's free
// memory in an out-of-memory event.
#include <cuda.h>
#include <cumem/cumem.hpp>

#include <string>

#include "test_util.hpp"

namespace {

constexpr size_t MiB = size_t{1} << 20;

class PoolSnapshot : public ::testing::Test {
 protected:
  void TearDown() override { cumem::memory_history_stop(); }
  cumem::Device device = cumem::Device::get(0);
  cumem::Resource pool = cumem::Resource::device(device);
};

TEST_F(PoolSnapshot, APoolSaysItsAttributesAndTheHistoryItsAllocations) {
  cumem::Snapshot s = cumem::Snapshot::take(pool);
  ASSERT_EQ(s.resources().size(), 1u);
  EXPECT_EQ(s.resources()[0].kind, CUMEM_RESOURCE_DEVICE);
  EXPECT_EQ(s.resources()[0].device_id, 0);
  const std::string json(s.json());
  EXPECT_NE(json.find("\"pool\":{\"release_threshold\":18446744073709551615,"), std::string::npos)
      << json;
  EXPECT_EQ(s.segments().size(), 0u) << "the driver lists no allocations";

  cumem::memory_history_start();
  cumem::Stream stream = cumem::Stream::create(device);
  void* a = pool.allocate_raw(3 * MiB, stream);
  void* b = pool.allocate_raw(5000, stream);
  s = cumem::Snapshot::take(pool);
  const auto segments = s.segments();
  ASSERT_EQ(segments.size(), 2u);
  for (const auto& seg : segments) {
    EXPECT_EQ(seg.kind, CUMEM_SEGMENT_ALLOCATION);
    EXPECT_EQ(seg.device_id, 0);
    const auto blocks = s.blocks(seg);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_EQ(blocks[0].stream, reinterpret_cast<uintptr_t>(stream.native()));
    EXPECT_EQ(blocks[0].requested_size, seg.size);
  }
  EXPECT_EQ(s.totals().bytes_in_use, 3 * MiB + 5000);
  pool.pool_trim(0);
  s = cumem::Snapshot::take(pool);
  const auto events = s.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().action, CUMEM_MEMORY_ACTION_TRIM);
  EXPECT_EQ(events.back().detail, 0u);
  pool.deallocate_raw(a, 3 * MiB, stream);
  pool.deallocate_raw(b, 5000, stream);
  stream.synchronize();
}

TEST_F(PoolSnapshot, ACacheOverThePoolListsItsSegmentsOnce) {
  cumem::memory_history_start();
  cumem::Resource cache = cumem::Resource::caching(pool);
  void* p = cache.allocate_raw(MiB);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  ASSERT_EQ(s.segments().size(), 1u)
      << "the pool's allocation is the cache's segment: not a segment of the pool too";
  EXPECT_EQ(s.segments()[0].resource_id, s.resources()[0].id);
  EXPECT_EQ(s.segments()[0].size, 20 * MiB);
  EXPECT_EQ(s.blocks().at(0).requested_size, MiB) << "the cache's own record, not the pool's";
  cache.deallocate_raw(p, MiB);
}

TEST_F(PoolSnapshot, OutOfMemorySaysHowMuchTheDeviceHasFree) {
  cumem::Resource limit = cumem::Resource::limit(pool, MiB);
  cumem::memory_history_start();
  void* p = nullptr;
  EXPECT_EQ(cumem_resource_allocate_raw(limit.get(), 2 * MiB, nullptr, &p), CUMEM_ERROR_OUT_OF_MEMORY);
  const cumem::Snapshot s = cumem::Snapshot::take(limit);
  const auto events = s.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].action, CUMEM_MEMORY_ACTION_OUT_OF_MEMORY);
  uint64_t free_bytes = 0, total = 0;
  CUMEM_ASSERT_OK(cumem_device_memory_info(device.get(), &free_bytes, &total));
  EXPECT_EQ(events[0].detail, free_bytes);
}

TEST_F(PoolSnapshot, CapturesBegunThroughLibcumemAreEvents) {
  cumem::Stream stream = cumem::Stream::create(device);
  cumem::memory_history_start();
  stream.begin_capture(CUMEM_CAPTURE_MODE_RELAXED);
  const cumem::Graph graph = stream.end_capture_graph();
  const auto events = cumem::Snapshot::take(pool).events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].action, CUMEM_MEMORY_ACTION_CAPTURE_BEGIN);
  EXPECT_EQ(events[0].stream, reinterpret_cast<uintptr_t>(stream.native()));
  EXPECT_EQ(events[0].detail, static_cast<uint64_t>(CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_EQ(events[0].resource_id, 0u) << "a capture belongs to no resource";
  EXPECT_EQ(events[1].action, CUMEM_MEMORY_ACTION_CAPTURE_END);
  EXPECT_EQ(events[1].stream, events[0].stream);
}

TEST(PoolSnapshotProcess, ResourcesTheCoreMadeForItselfAreListed) {
  // The frameworks' entry points use the device's memory resource, which
  // the core makes on first use without a user handle.
  void* p = cumem_torch_alloc(1 << 20, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  bool listed = false;
  std::string seen;
  const cumem::Snapshot snapshot = cumem::Snapshot::take();  // the names live in it
  for (const auto& r : snapshot.resources()) {
    seen += std::string(r.name) + " (" + std::to_string(r.bytes_in_use) + " bytes in use); ";
    listed |= std::string(r.name) == "default pool of device 0" && r.bytes_in_use == (1u << 20);
  }
  EXPECT_TRUE(listed) << seen;
  cumem_torch_free(p, 1 << 20, 0, nullptr);
}

}  // namespace
