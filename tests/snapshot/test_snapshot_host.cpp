// Snapshots, the memory history, statistics as JSON and the summary, on the
// host resource and the adaptors over it (no driver needed): what a
// snapshot lists adds up with each resource's own statistics, blocks cover
// their segments, the history records what happened with sizes, streams,
// threads and stacks in a bounded ring, and every error is a status with a
// message.
#include <sys/syscall.h>
#include <unistd.h>

#include <cumem/cumem.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

uint64_t id_of(const cumem::Resource& r) {
  const cumem::Snapshot s = cumem::Snapshot::take(r);
  return s.resources().at(0).id;
}

std::vector<cumem_memory_event_t> events_of(const cumem::Snapshot& s, uint64_t resource) {
  std::vector<cumem_memory_event_t> out;
  for (const auto& e : s.events())
    if (e.resource_id == resource) out.push_back(e);
  return out;
}

// Every segment's blocks lie end to end over it, in address order.
void expect_blocks_cover_segments(const cumem::Snapshot& s) {
  for (const auto& seg : s.segments()) {
    uint64_t at = seg.address;
    for (const auto& b : s.blocks(seg)) {
      EXPECT_EQ(b.address, at) << "a gap or overlap in the segment at " << seg.address;
      at += b.size;
    }
    EXPECT_EQ(at, seg.address + seg.size) << "blocks do not fill the segment at " << seg.address;
  }
}

const cumem_snapshot_block_t* block_at(const std::vector<cumem_snapshot_block_t>& blocks,
                                       const void* ptr) {
  for (const auto& b : blocks)
    if (b.address == reinterpret_cast<uintptr_t>(ptr)) return &b;
  return nullptr;
}

class History : public ::testing::Test {
 protected:
  void TearDown() override { cumem::memory_history_stop(); }
  static void start(uint64_t max_entries = 0, bool stacks = false) {
    cumem_memory_history_options_t o = cumem::memory_history_options();
    o.max_entries = max_entries;
    o.stacks = stacks ? CUMEM_TRUE : CUMEM_FALSE;
    cumem::memory_history_start(o);
  }
};

TEST_F(History, RecordsAllocationsAndFreesWithSizeStreamAndThread) {
  cumem::Resource host = cumem::Resource::host();
  start();
  void* a = host.allocate_raw(100);
  void* b = host.allocate_raw(200);
  host.deallocate_raw(a, 100);
  const cumem::Snapshot s = cumem::Snapshot::take(host);
  const auto events = events_of(s, id_of(host));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].action, CUMEM_MEMORY_ACTION_ALLOCATE);
  EXPECT_EQ(events[0].address, reinterpret_cast<uintptr_t>(a));
  EXPECT_EQ(events[0].size, 100u);
  EXPECT_EQ(events[1].action, CUMEM_MEMORY_ACTION_ALLOCATE);
  EXPECT_EQ(events[1].size, 200u);
  EXPECT_EQ(events[2].action, CUMEM_MEMORY_ACTION_FREE);
  EXPECT_EQ(events[2].address, reinterpret_cast<uintptr_t>(a));
  for (const auto& e : events) {
    EXPECT_EQ(e.stream, 1u) << "a NULL stream is the legacy default stream, CU_STREAM_LEGACY";
    EXPECT_EQ(e.thread_id, static_cast<uint32_t>(syscall(SYS_gettid)));
    EXPECT_EQ(e.stack_id, 0u) << "no stacks were asked for";
    EXPECT_GT(e.time_ns, uint64_t{1600000000} * 1000000000u);
  }
  EXPECT_LE(events[0].time_ns, events[2].time_ns);
  // The live allocation is in the snapshot with its requested size; the
  // freed one is not.
  ASSERT_EQ(s.segments().size(), 1u);
  const auto seg = s.segments()[0];
  EXPECT_EQ(seg.kind, CUMEM_SEGMENT_ALLOCATION);
  EXPECT_EQ(seg.address, reinterpret_cast<uintptr_t>(b));
  EXPECT_EQ(s.blocks(seg).at(0).requested_size, 200u);
  EXPECT_EQ(s.blocks(seg).at(0).state, CUMEM_BLOCK_IN_USE);
  host.deallocate_raw(b, 200);
}

TEST_F(History, TheRingKeepsTheNewestEvents) {
  cumem::Resource host = cumem::Resource::host();
  start(8);
  for (size_t i = 1; i <= 20; ++i) host.deallocate_raw(host.allocate_raw(i * 64), i * 64);
  const cumem::Snapshot s = cumem::Snapshot::take(host);
  const auto events = s.events();
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(s.totals().events_recorded, 40u);
  EXPECT_EQ(s.totals().events_dropped, 32u);
  // The last four pairs, oldest first.
  EXPECT_EQ(events[0].size, 17u * 64);
  EXPECT_EQ(events[7].size, 20u * 64);
  EXPECT_EQ(events[7].action, CUMEM_MEMORY_ACTION_FREE);
}

TEST_F(History, OffRecordsNothingAndStartEmpties) {
  cumem::Resource host = cumem::Resource::host();
  start();
  host.deallocate_raw(host.allocate_raw(64), 64);
  cumem::memory_history_stop();
  host.deallocate_raw(host.allocate_raw(64), 64);
  EXPECT_EQ(cumem::Snapshot::take(host).totals().events_recorded, 2u)
      << "events stay after stop, and none is added";
  start();
  EXPECT_EQ(cumem::Snapshot::take(host).totals().events_recorded, 0u) << "a start begins anew";
}

TEST_F(History, StacksBeginAtTheFunctionTheProgramCalled) {
  cumem::Resource host = cumem::Resource::host();
  start(0, true);
  void* p = host.allocate_raw(4096);
  const cumem::Snapshot s = cumem::Snapshot::take(host);
  const auto events = events_of(s, id_of(host));
  ASSERT_EQ(events.size(), 1u);
  ASSERT_NE(events[0].stack_id, 0u);
  const auto frames = s.frames(events[0].stack_id);
  ASSERT_GE(frames.size(), 2u);
  EXPECT_STREQ(frames[0].function, "cumem_resource_allocate_raw")
      << "libcumem's own frames are left out but its entry point";
  EXPECT_EQ(frames[0].depth, frames.size());
  EXPECT_NE(std::string(frames[0].module).find("libcumem"), std::string::npos);
  // The block has the same stack.
  const auto seg = s.segments().at(0);
  EXPECT_EQ(s.blocks(seg).at(0).stack_id, events[0].stack_id);
  host.deallocate_raw(p, 4096);
}

TEST_F(History, RefusesARingLargerThanItsLimit) {
  cumem_memory_history_options_t o = cumem::memory_history_options();
  o.max_entries = (uint64_t{1} << 26) + 1;
  CUMEM_EXPECT_ERROR(cumem_memory_history_start(&o), CUMEM_ERROR_INVALID_ARGUMENT, "max_entries");
  cumem_memory_history_options_t zero{};
  CUMEM_EXPECT_ERROR(cumem_memory_history_start(&zero), CUMEM_ERROR_INVALID_ARGUMENT,
                     "zero-filled");
  CUMEM_ASSERT_OK(cumem_memory_history_start(nullptr));  // the defaults
}

TEST_F(History, OutOfMemoryIsAnEventOfTheResourceThatRefused) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource limit = cumem::Resource::limit(host, 1024);
  start();
  void* p = nullptr;
  EXPECT_EQ(cumem_resource_allocate_raw(limit.get(), 4096, nullptr, &p), CUMEM_ERROR_OUT_OF_MEMORY);
  const cumem::Snapshot s = cumem::Snapshot::take(limit);
  const auto events = events_of(s, id_of(limit));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].action, CUMEM_MEMORY_ACTION_OUT_OF_MEMORY);
  EXPECT_EQ(events[0].size, 4096u);
  EXPECT_EQ(events[0].detail, 0u) << "host memory: no device to ask";
}

TEST_F(History, TheCacheRecordsItsSegmentsAndTrims) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource cache = cumem::Resource::caching(host);
  start();
  void* p = cache.allocate_raw(MiB);
  cache.deallocate_raw(p, MiB);
  cache.trim_cache(0);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  const auto events = events_of(s, id_of(cache));
  std::vector<cumem_memory_action_t> actions;
  for (const auto& e : events) actions.push_back(e.action);
  const std::vector<cumem_memory_action_t> expected = {
      CUMEM_MEMORY_ACTION_SEGMENT_ALLOC, CUMEM_MEMORY_ACTION_ALLOCATE, CUMEM_MEMORY_ACTION_FREE,
      CUMEM_MEMORY_ACTION_SEGMENT_FREE, CUMEM_MEMORY_ACTION_TRIM};
  EXPECT_EQ(actions, expected);
  ASSERT_EQ(events.size(), expected.size());
  EXPECT_EQ(events[0].size, 20 * MiB) << "a request under 10 MiB takes a 20 MiB segment";
  EXPECT_EQ(events[0].address, reinterpret_cast<uintptr_t>(p));
  EXPECT_EQ(events[1].size, MiB);
  EXPECT_EQ(events[3].size, 20 * MiB);
  EXPECT_EQ(events[4].size, 20 * MiB) << "a trim says how much it gave back";
  EXPECT_EQ(events[4].detail, 0u) << "and how much it was asked to keep";
  // The upstream saw the segment as its own allocation and free.
  const auto upstream = events_of(s, id_of(host));
  ASSERT_EQ(upstream.size(), 2u);
  EXPECT_EQ(upstream[0].size, 20 * MiB);
  EXPECT_EQ(upstream[1].action, CUMEM_MEMORY_ACTION_FREE);
}

class CachingSnapshot : public ::testing::Test {
 protected:
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource cache = cumem::Resource::caching(host);
};

TEST_F(CachingSnapshot, SegmentsAndBlocksAddUpWithTheCachesStatistics) {
  const std::vector<size_t> sizes = {1000, 4 * KiB, MiB, 3 * MiB, 12 * MiB, 200 * KiB};
  std::vector<void*> ptrs;
  for (size_t n : sizes) ptrs.push_back(cache.allocate_raw(n));
  cache.deallocate_raw(ptrs[1], sizes[1]);
  cache.deallocate_raw(ptrs[3], sizes[3]);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  const auto resources = s.resources();
  ASSERT_EQ(resources.size(), 2u);
  EXPECT_EQ(resources[0].kind, CUMEM_RESOURCE_CACHING);
  EXPECT_EQ(resources[1].kind, CUMEM_RESOURCE_HOST);
  EXPECT_EQ(resources[0].upstream_id, resources[1].id);
  EXPECT_EQ(std::string(resources[0].name).rfind("caching over host resource", 0), 0u)
      << resources[0].name;
  EXPECT_EQ(resources[0].device_id, -1);

  const cumem_caching_statistics_t c = cache.caching_statistics();
  const cumem_snapshot_totals_t t = s.totals();
  EXPECT_EQ(t.bytes_reserved, c.bytes_reserved);
  EXPECT_EQ(t.bytes_cached, c.bytes_cached);
  EXPECT_EQ(resources[0].bytes_reserved, c.bytes_reserved);
  EXPECT_EQ(resources[0].bytes_in_use, 1000u + MiB + 12 * MiB + 200 * KiB);
  EXPECT_EQ(t.bytes_unmapped, 0u);
  expect_blocks_cover_segments(s);

  int small = 0, large = 0;
  for (const auto& seg : s.segments()) {
    EXPECT_EQ(seg.resource_id, resources[0].id) << "the host resource adds no segments: the "
                                                   "history is off";
    if (seg.kind == CUMEM_SEGMENT_SMALL) ++small;
    if (seg.kind == CUMEM_SEGMENT_SEGMENT) ++large;
  }
  EXPECT_EQ(small, 2) << "1000 B and 4 KiB: one upstream allocation each";
  EXPECT_EQ(large, 1) << "one 20 MiB segment holds the 1 MiB, 3 MiB, 12 MiB and 200 KiB blocks";
  const auto blocks = s.blocks();
  for (size_t i : {0, 2, 4, 5}) {
    const auto* b = block_at(blocks, ptrs[i]);
    ASSERT_NE(b, nullptr) << "block " << i;
    EXPECT_EQ(b->state, CUMEM_BLOCK_IN_USE);
    EXPECT_EQ(b->requested_size, 0u) << "unknown: the history was off";
    EXPECT_GE(b->size, sizes[i]);
  }
  for (size_t i : {1, 3}) {
    const auto* b = block_at(blocks, ptrs[i]);
    ASSERT_NE(b, nullptr) << "block " << i;
    EXPECT_EQ(b->state, CUMEM_BLOCK_CACHED) << "kept by this thread's cache";
  }
  for (size_t i : {0, 2, 4, 5}) cache.deallocate_raw(ptrs[i], sizes[i]);
}

TEST_F(CachingSnapshot, TheHistoryGivesRequestedSizesAndTheUpstreamAddsNothing) {
  cumem::memory_history_start();
  void* small = cache.allocate_raw(1000);
  void* large = cache.allocate_raw(MiB + 1);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  cumem::memory_history_stop();
  const auto blocks = s.blocks();
  ASSERT_NE(block_at(blocks, small), nullptr);
  EXPECT_EQ(block_at(blocks, small)->requested_size, 1000u);
  ASSERT_NE(block_at(blocks, large), nullptr);
  EXPECT_EQ(block_at(blocks, large)->requested_size, MiB + 1);
  EXPECT_EQ(block_at(blocks, large)->stream, 1u) << "allocated on the legacy default stream";
  EXPECT_EQ(s.totals().bytes_requested, 1000u + MiB + 1) << "the blocks in use, as asked for";
  for (const auto& seg : s.segments())
    EXPECT_NE(seg.resource_id, s.resources()[1].id)
        << "the host resource's allocations are the cache's segments, listed once";
  cache.deallocate_raw(small, 1000);
  cache.deallocate_raw(large, MiB + 1);
}

TEST_F(CachingSnapshot, FragmentationIsTheFreeMemoryOutsideTheLargestFreeBlock) {
  std::vector<void*> ptrs;
  for (int i = 0; i < 10; ++i) ptrs.push_back(cache.allocate_raw(MiB));
  for (int i = 0; i < 10; i += 2) cache.deallocate_raw(ptrs[static_cast<size_t>(i)], MiB);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  const auto t = s.totals();
  EXPECT_EQ(t.bytes_reserved, 20 * MiB);
  EXPECT_EQ(t.bytes_cached, 15 * MiB);
  EXPECT_EQ(t.largest_free_block, 10 * MiB) << "the segment's untouched tail";
  EXPECT_EQ(t.fragmented_bytes, 5 * MiB) << "five free 1 MiB blocks between blocks in use";
  EXPECT_EQ(t.bytes_in_use, 5 * MiB);
  for (int i = 1; i < 10; i += 2) cache.deallocate_raw(ptrs[static_cast<size_t>(i)], MiB);
}

TEST(Snapshot, AdaptorsPassThroughToTheirUpstream) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource cache = cumem::Resource::caching(host);
  cumem::Resource limit = cumem::Resource::limit(cache, 64 * MiB);
  void* p = limit.allocate_raw(MiB);
  const cumem::Snapshot s = cumem::Snapshot::take(limit);
  const auto r = s.resources();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].kind, CUMEM_RESOURCE_LIMIT);
  EXPECT_EQ(r[1].kind, CUMEM_RESOURCE_CACHING);
  EXPECT_EQ(r[0].upstream_id, r[1].id);
  EXPECT_EQ(r[2].upstream_id, 0u);
  EXPECT_EQ(r[0].bytes_in_use, MiB);
  ASSERT_EQ(s.segments().size(), 1u);
  EXPECT_EQ(s.segments()[0].resource_id, r[1].id);
  limit.deallocate_raw(p, MiB);
}

TEST(Snapshot, TheTrackingAdaptorGivesStacksWithoutTheHistory) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource tracking = cumem::Resource::tracking(host, true);
  void* a = tracking.allocate_raw(300);
  void* b = tracking.allocate_raw(500);
  const cumem::Snapshot s = cumem::Snapshot::take(tracking);
  ASSERT_EQ(s.segments().size(), 2u);
  for (const auto& seg : s.segments()) {
    EXPECT_EQ(seg.kind, CUMEM_SEGMENT_ALLOCATION);
    const auto blocks = s.blocks(seg);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_NE(blocks[0].stack_id, 0u);
    EXPECT_FALSE(s.frames(blocks[0].stack_id).empty());
  }
  EXPECT_EQ(s.blocks().at(0).requested_size + s.blocks().at(1).requested_size, 800u);
  tracking.deallocate_raw(a, 300);
  tracking.deallocate_raw(b, 500);
}

TEST(Snapshot, OfTheProcessListsEveryLiveResource) {
  uint64_t id = 0;
  {
    cumem::Resource host = cumem::Resource::host();
    id = id_of(host);
    const auto all = cumem::Snapshot::take().resources();
    EXPECT_TRUE(std::any_of(all.begin(), all.end(),
                            [&](const cumem_snapshot_resource_t& r) { return r.id == id; }));
  }
  const auto all = cumem::Snapshot::take().resources();
  EXPECT_TRUE(std::none_of(all.begin(), all.end(),
                           [&](const cumem_snapshot_resource_t& r) { return r.id == id; }))
      << "a released resource is gone";
}

TEST(Snapshot, JsonAndFiles) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource cache = cumem::Resource::caching(host);
  void* p = cache.allocate_raw(64);
  const cumem::Snapshot s = cumem::Snapshot::take(cache);
  const std::string json(s.json());
  EXPECT_EQ(json.rfind("{\"schema\":\"cumem.snapshot\",\"version\":1,", 0), 0u) << json.substr(0, 80);
  EXPECT_NE(json.find("\"name\":\"caching over host resource"), std::string::npos);
  EXPECT_NE(json.find("\"kind\":\"small\""), std::string::npos);
  EXPECT_EQ(s.json().data(), s.json().data()) << "made once and kept";
  const std::string path = ::testing::TempDir() + "cumem_snapshot_test.json";
  s.write_json(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), json);
  std::remove(path.c_str());
  CUMEM_EXPECT_ERROR(cumem_snapshot_write_json(s.get(), "/nonexistent-dir/x.json"),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cannot write '/nonexistent-dir/x.json'");
  CUMEM_EXPECT_ERROR(cumem_snapshot_write_json(s.get(), ""), CUMEM_ERROR_INVALID_ARGUMENT, "empty");
  cache.deallocate_raw(p, 64);
}

TEST(Snapshot, IndicesAndStacksOutsideTheSnapshotAreRefused) {
  cumem::Resource host = cumem::Resource::host();
  const cumem::Snapshot s = cumem::Snapshot::take(host);
  cumem_snapshot_segment_t seg = CUMEM_SNAPSHOT_SEGMENT_INIT;
  CUMEM_EXPECT_ERROR(cumem_snapshot_get_segment(s.get(), 0, &seg), CUMEM_ERROR_OUT_OF_RANGE,
                     "index 0 is past the snapshot's 0 segments");
  cumem_snapshot_resource_t r = CUMEM_SNAPSHOT_RESOURCE_INIT;
  CUMEM_EXPECT_ERROR(cumem_snapshot_get_resource(s.get(), 1, &r), CUMEM_ERROR_OUT_OF_RANGE,
                     "1 resources");
  cumem_snapshot_block_t b = CUMEM_SNAPSHOT_BLOCK_INIT;
  CUMEM_EXPECT_ERROR(cumem_snapshot_get_block(s.get(), 0, &b), CUMEM_ERROR_OUT_OF_RANGE, "blocks");
  cumem_memory_event_t e = CUMEM_MEMORY_EVENT_INIT;
  CUMEM_EXPECT_ERROR(cumem_snapshot_get_event(s.get(), 0, &e), CUMEM_ERROR_OUT_OF_RANGE, "events");
  cumem_stack_frame_t f = CUMEM_STACK_FRAME_INIT;
  CUMEM_EXPECT_ERROR(cumem_snapshot_get_frame(s.get(), 0, 0, &f), CUMEM_ERROR_NOT_FOUND,
                     "0 means none");
  CUMEM_EXPECT_ERROR(cumem_snapshot_get_frame(s.get(), 7, 0, &f), CUMEM_ERROR_NOT_FOUND, "stack 7");
  // A resource handle is not a snapshot.
  CUMEM_EXPECT_ERROR(cumem_snapshot_retain(reinterpret_cast<cumem_snapshot_t*>(host.get())),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cumem_resource_t");
}

TEST(StatisticsJson, NamesEveryLayerAndItsKindsNumbers) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource cache = cumem::Resource::caching(host);
  void* p = cache.allocate_raw(MiB);
  const std::string json = cache.statistics_json();
  EXPECT_EQ(json.rfind("{\"schema\":\"cumem.statistics\",\"version\":1,\"scope\":\"stack\"", 0), 0u)
      << json;
  EXPECT_NE(json.find("\"kind\":\"caching\""), std::string::npos);
  EXPECT_NE(json.find("\"kind\":\"host\""), std::string::npos);
  EXPECT_NE(json.find("\"caching\":{\"bytes_cached\":" + std::to_string(19 * MiB) +
                      ",\"bytes_reserved\":" + std::to_string(20 * MiB)),
            std::string::npos)
      << json;
  const std::string all = cumem::statistics_json();
  EXPECT_NE(all.find("\"scope\":\"process\""), std::string::npos);
  // Like snprintf.
  char small[10];
  size_t n = 0;
  CUMEM_ASSERT_OK(cumem_resource_statistics_json(cache.get(), small, sizeof small, &n));
  EXPECT_EQ(n, json.size());
  EXPECT_EQ(std::string(small), json.substr(0, 9));
  CUMEM_ASSERT_OK(cumem_resource_statistics_json(cache.get(), nullptr, 0, &n));
  EXPECT_EQ(n, json.size());
  CUMEM_EXPECT_ERROR(cumem_resource_statistics_json(cache.get(), nullptr, 4, &n),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'buffer'");
  cache.deallocate_raw(p, MiB);
}

TEST(MemorySummary, ShowsAdaptorsAboveTheirUpstreams) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource cache = cumem::Resource::caching(host);
  void* p = cache.allocate_raw(MiB);
  const std::string text = cumem::memory_summary();
  const std::string cache_line = "  #" + std::to_string(id_of(cache)) + " caching over host resource";
  const std::string host_line = "      #" + std::to_string(id_of(host)) + " host resource";
  const size_t at_cache = text.find(cache_line);
  ASSERT_NE(at_cache, std::string::npos) << text;
  EXPECT_NE(text.find(host_line, at_cache), std::string::npos) << text;
  EXPECT_NE(text.find("reserved 20.00 MiB"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("libcumem memory summary (pid " + std::to_string(getpid()), 0), 0u);
  cache.deallocate_raw(p, MiB);
}

TEST(OutOfMemory, TheCacheNamesItsLargestFreeBlockAndItsFragmentation) {
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource limit = cumem::Resource::limit(host, 64 * MiB);
  cumem::Resource cache = cumem::Resource::caching(limit);
  // Three 20 MiB segments filled with 1 MiB blocks, every other one freed:
  // 30 MiB free, none of it in a piece of more than 1 MiB.
  std::vector<void*> ptrs;
  for (int i = 0; i < 60; ++i) ptrs.push_back(cache.allocate_raw(MiB));
  for (int i = 0; i < 60; i += 2) cache.deallocate_raw(ptrs[static_cast<size_t>(i)], MiB);
  void* p = nullptr;
  const cumem_status_t st = cumem_resource_allocate_raw(cache.get(), 8 * MiB, nullptr, &p);
  ASSERT_EQ(st, CUMEM_ERROR_OUT_OF_MEMORY);
  const std::string message = cumem_last_error_message();
  EXPECT_NE(message.find("its segments still hold 31457280 bytes (30.00 MiB) free in 30 blocks"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the largest 1048576 bytes (1.00 MiB)"), std::string::npos) << message;
  EXPECT_NE(message.find("fragmentation 96.7%"), std::string::npos) << message;
  for (int i = 1; i < 60; i += 2) cache.deallocate_raw(ptrs[static_cast<size_t>(i)], MiB);
}

}  // namespace
