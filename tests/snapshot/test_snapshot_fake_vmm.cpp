// Snapshots of virtual memory on the VMM fake driver, whose device memory
// is host memory: the expandable cache's ranges (pages mapped and unmapped
// address space, segment_map / segment_unmap in the history) and the
// virtual resource's ranges (the mapped part of each and its reserve).
#include <cumem/cumem.hpp>

#include <cstdlib>

#include "fake_vmm.hpp"
#include "test_util.hpp"

namespace {

constexpr size_t MiB = size_t{1} << 20;

int32_t upstream_allocate(size_t size, void*, void*, void** out) {
  *out = std::aligned_alloc(256, (size + 255) / 256 * 256);
  return *out ? 0 : 1;
}
void upstream_deallocate(void* ptr, size_t, void*, void*) { std::free(ptr); }

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

class FakeVmmSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(fake.missing(), "");
    fake.reset();
    fake.set_memory(uint64_t{1} << 30);  // ranges of 1.125 GiB
    device = cumem::Device::get(0);
    cumem_resource_callbacks_t c = cumem::resource_callbacks();
    c.memory_kind = CUMEM_MEMORY_DEVICE;
    c.allocate = upstream_allocate;
    c.deallocate = upstream_deallocate;
    c.stream_ordered = CUMEM_TRUE;
    upstream = cumem::Resource::callback(device, c);
  }
  void TearDown() override {
    cumem::memory_history_stop();
    fake.reset();
  }
  FakeVmm fake;
  cumem::Device device;
  cumem::Resource upstream;
};

TEST_F(FakeVmmSnapshot, AnExpandableRangeShowsItsPagesAndItsUnmappedSpace) {
  cumem_caching_resource_options_t o = cumem::caching_resource_options();
  o.expandable = CUMEM_TRUE;
  o.page_size = 20 * MiB;  // the pages counted below
  cumem::Resource cache = cumem::Resource::caching(upstream, o);
  cumem::memory_history_start();
  void* a = cache.allocate_raw(30 * MiB);  // maps two 20 MiB pages
  void* c = cache.allocate_raw(15 * MiB);  // the free 10 MiB and one page more
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  expect_blocks_cover_segments(s);
  const auto segments = s.segments();
  ASSERT_EQ(segments.size(), 1u) << "one range for the legacy default stream";
  EXPECT_EQ(segments[0].kind, CUMEM_SEGMENT_EXPANDABLE);
  EXPECT_EQ(segments[0].size, 1160 * MiB) << "the device's memory and an eighth, in whole pages";
  EXPECT_EQ(segments[0].stream, 1u) << "its pages are mapped for the legacy default stream";
  EXPECT_EQ(segments[0].device_id, 0);
  const auto blocks = s.blocks(segments[0]);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].state, CUMEM_BLOCK_IN_USE);
  EXPECT_EQ(blocks[0].address, reinterpret_cast<uintptr_t>(a));
  EXPECT_EQ(blocks[0].requested_size, 30 * MiB);
  EXPECT_EQ(blocks[1].state, CUMEM_BLOCK_IN_USE);
  EXPECT_EQ(blocks[1].address, reinterpret_cast<uintptr_t>(c));
  EXPECT_EQ(blocks[2].state, CUMEM_BLOCK_CACHED) << "the rest of the third page";
  EXPECT_EQ(blocks[2].size, 15 * MiB);
  EXPECT_EQ(blocks[3].state, CUMEM_BLOCK_UNMAPPED);
  const auto t = s.totals();
  EXPECT_EQ(t.bytes_reserved, 60 * MiB) << "what is mapped";
  EXPECT_EQ(t.bytes_reserved, cache.caching_statistics().bytes_reserved);
  EXPECT_EQ(t.bytes_unmapped, 1100 * MiB);
  std::vector<std::pair<uint64_t, uint64_t>> maps;
  for (const auto& e : s.events())
    if (e.action == CUMEM_MEMORY_ACTION_SEGMENT_MAP) maps.emplace_back(e.address, e.size);
  const auto base = reinterpret_cast<uintptr_t>(a);
  const std::vector<std::pair<uint64_t, uint64_t>> expected_maps = {{base, 40 * MiB},
                                                                    {base + 40 * MiB, 20 * MiB}};
  EXPECT_EQ(maps, expected_maps);

  // Given back: the page free whole is unmapped, and the history says where.
  cache.deallocate_raw(c, 15 * MiB);
  cache.trim_cache(0);
  const cumem::Snapshot after = cumem::Snapshot::take(cache);
  bool unmapped = false, trimmed = false;
  for (const auto& e : after.events()) {
    if (e.action == CUMEM_MEMORY_ACTION_SEGMENT_UNMAP) {
      EXPECT_EQ(e.address, base + 40 * MiB);
      EXPECT_EQ(e.size, 20 * MiB);
      unmapped = true;
    }
    if (e.action == CUMEM_MEMORY_ACTION_TRIM) {
      EXPECT_EQ(e.size, 20 * MiB);
      trimmed = true;
    }
  }
  EXPECT_TRUE(unmapped && trimmed);
  EXPECT_EQ(after.totals().bytes_reserved, 40 * MiB);
  const auto after_blocks = after.blocks(after.segments().at(0));
  ASSERT_EQ(after_blocks.size(), 3u);
  EXPECT_EQ(after_blocks[0].size, 30 * MiB);
  EXPECT_EQ(after_blocks[1].state, CUMEM_BLOCK_CACHED) << "the tail of a page still in use";
  EXPECT_EQ(after_blocks[1].size, 10 * MiB);
  EXPECT_EQ(after_blocks[2].state, CUMEM_BLOCK_UNMAPPED);
  cache.deallocate_raw(a, 30 * MiB);
}

// An expandable cache's small blocks are pieces of a range of their own:
// the block in use, a freed one the thread keeps (cached), the rest of the
// page (cached) and the unmapped space; trimmed, the page goes.
TEST_F(FakeVmmSnapshot, AnExpandableCachesSmallBlocksArePiecesOfTheirOwnRange) {
  constexpr size_t KiB = size_t{1} << 10;
  cumem_caching_resource_options_t o = cumem::caching_resource_options();
  o.expandable = CUMEM_TRUE;
  o.page_size = 20 * MiB;
  cumem::Resource cache = cumem::Resource::caching(upstream, o);
  cumem::memory_history_start();
  void* a = cache.allocate_raw(4 * KiB);
  void* b = cache.allocate_raw(64 * KiB);
  cache.deallocate_raw(b, 64 * KiB);  // kept by this thread
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  expect_blocks_cover_segments(s);
  const auto segments = s.segments();
  ASSERT_EQ(segments.size(), 1u) << "the small blocks' range alone (no large block yet)";
  EXPECT_EQ(segments[0].kind, CUMEM_SEGMENT_EXPANDABLE);
  const auto blocks = s.blocks(segments[0]);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].address, reinterpret_cast<uintptr_t>(a));
  EXPECT_EQ(blocks[0].state, CUMEM_BLOCK_IN_USE);
  EXPECT_EQ(blocks[0].size, 4 * KiB);
  EXPECT_EQ(blocks[1].address, reinterpret_cast<uintptr_t>(b));
  EXPECT_EQ(blocks[1].state, CUMEM_BLOCK_CACHED) << "kept by the thread";
  EXPECT_EQ(blocks[2].state, CUMEM_BLOCK_CACHED) << "the rest of the page";
  EXPECT_EQ(blocks[2].size, 20 * MiB - 68 * KiB);
  EXPECT_EQ(blocks[3].state, CUMEM_BLOCK_UNMAPPED);
  EXPECT_EQ(s.totals().bytes_reserved, 20 * MiB);
  size_t maps = 0;
  for (const auto& e : s.events())
    if (e.action == CUMEM_MEMORY_ACTION_SEGMENT_MAP) {
      EXPECT_EQ(e.size, 20 * MiB);
      ++maps;
    }
  EXPECT_EQ(maps, 1u);
  cache.deallocate_raw(a, 4 * KiB);
  cache.trim_cache(0);
  const cumem::Snapshot after = cumem::Snapshot::take(cache);
  EXPECT_EQ(after.totals().bytes_reserved, 0u);
  EXPECT_TRUE(after.segments().empty()) << "the range freed with its page";
}

TEST_F(FakeVmmSnapshot, AVirtualBufferIsItsRangeMappedAndReserved) {
  cumem_virtual_resource_options_t o = cumem::virtual_resource_options();
  o.reserve_size = 64 * MiB;
  cumem::Resource r = cumem::Resource::virtual_memory(device, o);
  cumem::memory_history_start(cumem::memory_history_options());
  cumem::Buffer buffer = r.allocate(3 * MiB);
  const cumem::Snapshot s = cumem::Snapshot::take(r);
  expect_blocks_cover_segments(s);
  ASSERT_EQ(s.segments().size(), 1u);
  const auto seg = s.segments()[0];
  EXPECT_EQ(seg.kind, CUMEM_SEGMENT_VIRTUAL_RANGE);
  EXPECT_EQ(seg.address, reinterpret_cast<uintptr_t>(buffer.ptr()));
  EXPECT_EQ(seg.size, 64 * MiB);
  const auto blocks = s.blocks(seg);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].state, CUMEM_BLOCK_IN_USE);
  EXPECT_EQ(blocks[0].requested_size, 3 * MiB);
  EXPECT_EQ(blocks[0].size % (2 * MiB), 0u) << "mapped in granules";
  EXPECT_EQ(blocks[1].state, CUMEM_BLOCK_UNMAPPED);
  EXPECT_EQ(s.totals().bytes_unmapped, 64 * MiB - blocks[0].size);
  const std::string json(s.json());
  EXPECT_NE(json.find("\"virtual\":{\"granularity\":"), std::string::npos);
  EXPECT_NE(json.find("\"kind\":\"virtual_range\""), std::string::npos);
}

}  // namespace
