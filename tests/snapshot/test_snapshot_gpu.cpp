// Snapshots on a GPU (gpu suite; each test skips without a device): the
// device's pool with the history, a caching adaptor over it on two streams,
// the expandable cache's pages, a virtual resource's ranges, and the cache's
// out-of-memory message over a pool with a max_size.
#include <cumem/cumem.hpp>

#include <cstdio>
#include <fstream>
#include <vector>

#include "gpu_fixture.hpp"

namespace {

constexpr size_t MiB = size_t{1} << 20;

class SnapshotGpu : public GpuTest {
 protected:
  void TearDown() override {
    cumem_memory_history_stop();
    GpuTest::TearDown();
  }
  cumem::Device dev() const { return cumem::Device::retain(device); }
};

void expect_blocks_cover_segments(const cumem::Snapshot& s) {
  for (const auto& seg : s.segments()) {
    uint64_t at = seg.address;
    for (const auto& b : s.blocks(seg)) {
      EXPECT_EQ(b.address, at);
      at += b.size;
    }
    EXPECT_EQ(at, seg.address + seg.size);
  }
}

TEST_F(SnapshotGpu, ThePoolSaysItsAttributesAndTheHistoryItsAllocations) {
  cumem::Resource pool = cumem::Resource::device(dev());
  cumem::Stream stream = cumem::Stream::create(dev());
  cumem_memory_history_options_t o = cumem::memory_history_options();
  o.stacks = CUMEM_TRUE;
  cumem::memory_history_start(o);
  std::vector<std::pair<void*, size_t>> live;
  for (size_t n : {size_t{1000}, 2 * MiB, 64 * MiB}) live.emplace_back(pool.allocate_raw(n, stream), n);
  const cumem::Snapshot s = cumem::Snapshot::take(pool);
  EXPECT_NE(std::string(s.json()).find("\"pool\":{\"release_threshold\":"), std::string::npos);
  ASSERT_EQ(s.segments().size(), 3u);
  uint64_t in_use = 0;
  for (const auto& seg : s.segments()) {
    EXPECT_EQ(seg.kind, CUMEM_SEGMENT_ALLOCATION);
    EXPECT_EQ(seg.device_id, 0);
    const auto b = s.blocks(seg).at(0);
    EXPECT_EQ(b.stream, reinterpret_cast<uintptr_t>(stream.native()));
    EXPECT_NE(b.stack_id, 0u);
    EXPECT_EQ(s.frames(b.stack_id).at(0).function, std::string("cumem_resource_allocate_raw"));
    in_use += b.requested_size;
  }
  EXPECT_EQ(in_use, 1000 + 66 * MiB);
  const cumem_pool_attributes_t a = pool.pool_get_attributes();
  EXPECT_GE(a.used_mem_current, in_use);
  for (const auto& [p, n] : live) pool.deallocate_raw(p, n, stream);
  stream.synchronize();
}

TEST_F(SnapshotGpu, ACacheOverThePoolAddsUpOnTwoStreams) {
  cumem::Resource pool = cumem::Resource::device(dev());
  cumem::Resource cache = cumem::Resource::caching(pool);
  cumem::Stream s1 = cumem::Stream::create(dev()), s2 = cumem::Stream::create(dev());
  cumem::memory_history_start();
  void* a = cache.allocate_raw(MiB, s1);
  void* b = cache.allocate_raw(3 * MiB, s2);
  void* c = cache.allocate_raw(4096, s1);
  cache.deallocate_raw(b, 3 * MiB, s2);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  expect_blocks_cover_segments(s);
  const cumem_caching_statistics_t st = cache.caching_statistics();
  EXPECT_EQ(s.totals().bytes_reserved, st.bytes_reserved);
  EXPECT_EQ(s.totals().bytes_cached, st.bytes_cached);
  bool saw_cached_on_s2 = false, saw_a = false;
  for (const auto& blk : s.blocks()) {
    if (blk.address == reinterpret_cast<uintptr_t>(a)) {
      saw_a = true;
      EXPECT_EQ(blk.state, CUMEM_BLOCK_IN_USE);
      EXPECT_EQ(blk.stream, reinterpret_cast<uintptr_t>(s1.native()));
      EXPECT_EQ(blk.requested_size, MiB);
    }
    if (blk.address == reinterpret_cast<uintptr_t>(b)) {
      EXPECT_EQ(blk.state, CUMEM_BLOCK_CACHED);
      saw_cached_on_s2 = blk.stream == reinterpret_cast<uintptr_t>(s2.native());
    }
  }
  EXPECT_TRUE(saw_a);
  EXPECT_TRUE(saw_cached_on_s2) << "a cached block names the stream it was freed on";
  for (const auto& seg : s.segments())
    EXPECT_EQ(seg.resource_id, s.resources()[0].id) << "the pool's allocations are the cache's segments";
  const std::string path = ::testing::TempDir() + "cumem_snapshot_gpu.json";
  s.write_json(path);
  std::ifstream in(path);
  EXPECT_TRUE(in.good());
  std::remove(path.c_str());
  cache.deallocate_raw(a, MiB, s1);
  cache.deallocate_raw(c, 4096, s1);
}

TEST_F(SnapshotGpu, TheExpandableCacheMapsAndUnmapsPages) {
  cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
  if (!p.virtual_memory_management) GTEST_SKIP() << "the device has no virtual memory management";
  cumem::Resource pool = cumem::Resource::device(dev());
  cumem_caching_resource_options_t o = cumem::caching_resource_options();
  o.expandable = CUMEM_TRUE;
  cumem::Resource cache = cumem::Resource::caching(pool, o);
  cumem::Stream stream = cumem::Stream::create(dev());
  cumem::memory_history_start();
  void* a = cache.allocate_raw(30 * MiB, stream);
  void* b = cache.allocate_raw(15 * MiB, stream);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  expect_blocks_cover_segments(s);
  ASSERT_FALSE(s.segments().empty());
  EXPECT_EQ(s.segments()[0].kind, CUMEM_SEGMENT_EXPANDABLE);
  EXPECT_EQ(s.segments()[0].stream, reinterpret_cast<uintptr_t>(stream.native()));
  EXPECT_EQ(s.totals().bytes_reserved, cache.caching_statistics().bytes_reserved);
  EXPECT_GT(s.totals().bytes_unmapped, 0u);
  int maps = 0;
  for (const auto& e : s.events()) maps += e.action == CUMEM_MEMORY_ACTION_SEGMENT_MAP;
  EXPECT_EQ(maps, 2);
  cache.deallocate_raw(b, 15 * MiB, stream);
  cache.trim_cache(0);
  int unmaps = 0;
  for (const auto& e : cumem::Snapshot::take(cache).events())
    unmaps += e.action == CUMEM_MEMORY_ACTION_SEGMENT_UNMAP;
  EXPECT_GE(unmaps, 1);
  cache.deallocate_raw(a, 30 * MiB, stream);
}

TEST_F(SnapshotGpu, AVirtualBufferIsItsMappedRangeAndItsReserve) {
  cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
  if (!p.virtual_memory_management) GTEST_SKIP() << "the device has no virtual memory management";
  cumem_virtual_resource_options_t o = cumem::virtual_resource_options();
  o.reserve_size = 256 * MiB;
  cumem::Resource r = cumem::Resource::virtual_memory(dev(), o);
  cumem::Buffer buffer = r.allocate(5 * MiB);
  const cumem::Snapshot s = cumem::Snapshot::take(r);
  ASSERT_EQ(s.segments().size(), 1u);
  const auto blocks = s.blocks(s.segments()[0]);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].state, CUMEM_BLOCK_IN_USE);
  EXPECT_EQ(blocks[0].requested_size, 5 * MiB);
  EXPECT_EQ(blocks[1].state, CUMEM_BLOCK_UNMAPPED);
  EXPECT_EQ(s.segments()[0].size, 256 * MiB);
}

TEST_F(SnapshotGpu, TheCachesOutOfMemoryNamesItsLargestFreeBlockAndTheDevicesFreeMemory) {
  cumem_pool_options_t po = cumem::pool_options();
  po.new_pool = CUMEM_TRUE;
  po.max_size = 64 * MiB;
  cumem::Resource pool = cumem::Resource::device(dev(), po);
  cumem::Resource cache = cumem::Resource::caching(pool);
  cumem::Stream stream = cumem::Stream::create(dev());
  cumem::memory_history_start();
  std::vector<void*> ptrs;
  for (int i = 0; i < 60; ++i) ptrs.push_back(cache.allocate_raw(MiB, stream));
  for (int i = 0; i < 60; i += 2) cache.deallocate_raw(ptrs[static_cast<size_t>(i)], MiB, stream);
  void* p = nullptr;
  ASSERT_EQ(cumem_resource_allocate_raw(cache.get(), 8 * MiB, stream.get(), &p), CUMEM_ERROR_OUT_OF_MEMORY);
  const std::string message = cumem_last_error_message();
  EXPECT_NE(message.find("the largest 1048576 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("fragmentation 96.7%"), std::string::npos) << message;
  EXPECT_NE(message.find("the pool reserves"), std::string::npos) << message;
  bool oom = false;
  for (const auto& e : cumem::Snapshot::take(cache).events())
    if (e.action == CUMEM_MEMORY_ACTION_OUT_OF_MEMORY && e.resource_id == cumem::Snapshot::take(cache).resources()[0].id) {
      oom = true;
      EXPECT_GT(e.detail, 0u) << "the device's free memory";
    }
  EXPECT_TRUE(oom);
  for (int i = 1; i < 60; i += 2) cache.deallocate_raw(ptrs[static_cast<size_t>(i)], MiB, stream);
  stream.synchronize();
}

}  // namespace
