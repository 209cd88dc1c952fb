// The caching adaptor under stream capture, on the fake capturing driver
// (fake_capture_driver.cpp, named in $CUMEM_LIBCUDA), which keeps the real
// driver's capture rules and runs captured fills and copies at each launch:
// a capture's allocations come from its private pool, never from blocks
// eager work used; blocks freed inside the capture are reused inside it;
// after the capture the pool keeps them, so eager allocations between
// replays never get the graph's memory; a block from outside freed on a
// capturing stream is refused; releasing the pool gives its memory back;
// libcumem_captures_only sees only captures begun through libcumem, with
// no driver call on the cached path.
#include <dlfcn.h>

#include <cuda.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capture_fixture.hpp"
#include "test_util.hpp"

namespace {

using capture_test::Capture;
using capture_test::Fake;
using capture_test::info_of;


cumem_caching_statistics_t caching_of(const cumem_resource_t* r) {
  cumem_caching_statistics_t s = CUMEM_CACHING_STATISTICS_INIT;
  EXPECT_EQ(cumem_caching_resource_get_statistics(r, &s), CUMEM_SUCCESS) << cumem_last_error_message();
  return s;
}

// The bytes of a buffer of host-visible fake memory all equal `value`.
::testing::AssertionResult holds(cumem_buffer_t* b, size_t n, unsigned char value) {
  void* p = nullptr;
  if (cumem_buffer_ptr(b, &p) != CUMEM_SUCCESS) return ::testing::AssertionFailure() << "no pointer";
  for (size_t i = 0; i < n; ++i)
    if (static_cast<unsigned char*>(p)[i] != value)
      return ::testing::AssertionFailure() << "byte " << i << " is "
                                           << int(static_cast<unsigned char*>(p)[i]) << ", not "
                                           << int(value);
  return ::testing::AssertionSuccess();
}

class CaptureCache : public Capture {
 protected:
  void SetUp() override {
    Capture::SetUp();
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
    CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  }
  void TearDown() override {
    cumem_resource_release(cache);
    cumem_resource_release(pool);
    Capture::TearDown();
  }
  cumem_resource_t* pool = nullptr;
  cumem_resource_t* cache = nullptr;
};

// Small (4 KiB) and large (1 MiB: a piece of a 20 MiB segment) blocks, in
// every mode, the capture begun through libcumem or with the driver.
TEST_F(CaptureCache, ACapturesBlocksAreItsOwnAndReplaysNeverTouchEagerMemory) {
  for (size_t n : {size_t{4096}, size_t{1} << 20}) {
    for (bool through_driver : {false, true}) {
      for (cumem_capture_mode_t mode : {CUMEM_CAPTURE_MODE_GLOBAL, CUMEM_CAPTURE_MODE_THREAD_LOCAL,
                                        CUMEM_CAPTURE_MODE_RELAXED}) {
        SCOPED_TRACE(std::to_string(n) + (through_driver ? " driver" : " libcumem") + " mode " +
                     std::to_string(mode));
        // A block eager work used, cached on the stream, and an output
        // made before the capture that the graph writes.
        cumem_buffer_t *cached = nullptr, *out = nullptr;
        CUMEM_ASSERT_OK(cumem_resource_allocate(cache, n, stream, &cached));
        void* cached_ptr = nullptr;
        CUMEM_ASSERT_OK(cumem_buffer_ptr(cached, &cached_ptr));
        CUMEM_ASSERT_OK(cumem_buffer_close(cached, stream));
        cumem_buffer_release(cached);
        CUMEM_ASSERT_OK(cumem_resource_allocate(cache, n, stream, &out));
        if (through_driver)
          ASSERT_EQ(fake.begin_capture(cu(), static_cast<CUstreamCaptureMode>(mode)), CUDA_SUCCESS);
        else
          CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, mode));
        const uint64_t id = info_of(stream).id;
        ASSERT_NE(id, 0u);
        cumem_buffer_t* scratch = nullptr;
        CUMEM_ASSERT_OK(cumem_resource_allocate(cache, n, stream, &scratch));
        void* scratch_ptr = nullptr;
        CUMEM_ASSERT_OK(cumem_buffer_ptr(scratch, &scratch_ptr));
        EXPECT_NE(scratch_ptr, cached_ptr) << "a block eager work used went into the graph";
        CUMEM_ASSERT_OK(cumem_buffer_fill(scratch, 0xA5A5A5A5u, 4, stream));
        CUMEM_ASSERT_OK(cumem_buffer_copy_to(scratch, out, stream));
        CUMEM_ASSERT_OK(cumem_buffer_close(scratch, stream));  // back to the capture's pool
        cumem_buffer_release(scratch);
        cumem_buffer_t* again = nullptr;
        CUMEM_ASSERT_OK(cumem_resource_allocate(cache, n, stream, &again));
        void* again_ptr = nullptr;
        CUMEM_ASSERT_OK(cumem_buffer_ptr(again, &again_ptr));
        EXPECT_EQ(again_ptr, scratch_ptr) << "a block freed in the capture is reused in it";
        CUMEM_ASSERT_OK(cumem_buffer_fill(again, 0x5A5A5A5Au, 4, stream));
        CUMEM_ASSERT_OK(cumem_buffer_close(again, stream));
        cumem_buffer_release(again);
        // The output was allocated before the capture: its free here is refused.
        CUMEM_EXPECT_ERROR(cumem_buffer_close(out, stream), CUMEM_ERROR_INVALID_STATE,
                           "allocated outside that capture");
        cumem_graph_t* graph = nullptr;
        if (through_driver) {
          CUgraph g = nullptr;
          ASSERT_EQ(fake.end_capture(cu(), &g), CUDA_SUCCESS);
          CUMEM_ASSERT_OK(cumem_graph_instantiate(device, g, nullptr, &graph));
          fake.graph_destroy(g);
        } else {
          CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
        }
        EXPECT_EQ(caching_of(cache).capture_pools, 1u);
        const int launches = n > (64 << 10) ? 40 : 200;  // bounded under the sanitizers
        for (int i = 0; i < launches; ++i) {
          CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
          cumem_buffer_t* eager = nullptr;
          CUMEM_ASSERT_OK(cumem_resource_allocate(cache, n, stream, &eager));
          void* e = nullptr;
          CUMEM_ASSERT_OK(cumem_buffer_ptr(eager, &e));
          ASSERT_NE(e, scratch_ptr) << "launch " << i << ": the graph's memory was handed out";
          CUMEM_ASSERT_OK(cumem_buffer_fill(eager, static_cast<uint32_t>(i & 0xFF), 1, stream));
          CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
          ASSERT_TRUE(holds(eager, n, static_cast<unsigned char>(i & 0xFF))) << "launch " << i;
          ASSERT_TRUE(holds(out, n, 0xA5)) << "launch " << i;
          CUMEM_ASSERT_OK(cumem_buffer_close(eager, stream));
          cumem_buffer_release(eager);
        }
        cumem_graph_release(graph);
        CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
        // The graph is gone: the pool gives its memory back and goes.
        const uint64_t reserved = caching_of(cache).bytes_reserved;
        CUMEM_ASSERT_OK(cumem_caching_resource_release_capture_pool(cache, id));
        EXPECT_EQ(caching_of(cache).capture_pools, 0u);
        EXPECT_EQ(caching_of(cache).capture_pool_bytes, 0u);
        EXPECT_LT(caching_of(cache).bytes_reserved, reserved);
        CUMEM_EXPECT_ERROR(cumem_caching_resource_release_capture_pool(cache, id),
                           CUMEM_ERROR_NOT_FOUND, "no private pool of capture");
        CUMEM_ASSERT_OK(cumem_buffer_close(out, stream));
        cumem_buffer_release(out);
      }
    }
  }
  EXPECT_TRUE(no_invalidation());
  EXPECT_EQ(statistics_of(cache).live_allocations, 0u);
}

// A block the capture allocated and the graph keeps (its output), freed
// after the capture: it stays in the pool, never handed out to eager work,
// until the pool is released; a released pool gives back blocks freed
// after the release.
TEST_F(CaptureCache, BlocksFreedAfterTheCaptureStayWithTheGraphUntilReleased) {
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_RELAXED));
  const uint64_t id = info_of(stream).id;
  cumem_buffer_t* kept = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(cache, 4096, stream, &kept));
  CUMEM_ASSERT_OK(cumem_buffer_fill(kept, 0x77, 1, stream));
  void* kept_ptr = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(kept, &kept_ptr));
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(kept, stream));  // after the capture
  cumem_buffer_release(kept);
  for (int i = 0; i < 10; ++i) {
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &p));
    EXPECT_NE(p, kept_ptr) << "the graph's block went to eager work";
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, p, 4096, stream));
  }
  // Released while a block is still in use: that block goes back when freed.
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_RELAXED));
  const uint64_t id2 = info_of(stream).id;
  void* in_use = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 1 << 20, stream, &in_use));
  cumem_graph_t* graph2 = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph2));
  cumem_graph_release(graph2);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_caching_resource_release_capture_pool(cache, id2));
  EXPECT_EQ(caching_of(cache).capture_pools, 2u) << "a block of the released pool is in use";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, in_use, 1 << 20, stream));
  EXPECT_EQ(caching_of(cache).capture_pools, 1u) << "its last block freed, the pool went";
  cumem_graph_release(graph);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_capture_pool(cache, id));
  EXPECT_EQ(caching_of(cache).capture_pools, 0u);
  EXPECT_EQ(statistics_of(cache).live_allocations, 0u);
  EXPECT_TRUE(no_invalidation());
}

// libcumem_captures_only: no driver question on the cached path, and so a
// capture begun with the driver directly is not seen (the documented
// trade); one begun through libcumem still is.
TEST_F(CaptureCache, LibcumemCapturesOnlyAsksNothingAndSeesOnlyItsOwnCaptures) {
  cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  o.libcumem_captures_only = CUMEM_TRUE;
  cumem_resource_t* quick = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(pool, &o, &quick));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(quick, 4096, stream, &p));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(quick, p, 4096, stream));
  fake.reset_calls();
  for (int i = 0; i < 100; ++i) {
    void* q = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(quick, 4096, stream, &q));
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(quick, q, 4096, stream));
  }
  EXPECT_EQ(fake.calls("cuStreamGetCaptureInfo") + fake.calls("cuStreamIsCapturing"), 0);
  // The default adaptor asks once per allocation and once per free.
  fake.reset_calls();
  for (int i = 0; i < 100; ++i) {
    void* q = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &q));
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, q, 4096, stream));
  }
  EXPECT_EQ(fake.calls("cuStreamGetCaptureInfo") + fake.calls("cuStreamIsCapturing"), 200);
  // With the driver's own capture, the quick adaptor hands the cached block in.
  ASSERT_EQ(fake.begin_capture(cu(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  void* during = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(quick, 4096, stream, &during));
  EXPECT_EQ(during, p) << "not seen: the cached block (the option's documented trade)";
  CUgraph g = nullptr;
  ASSERT_EQ(fake.end_capture(cu(), &g), CUDA_SUCCESS);
  fake.graph_destroy(g);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(quick, during, 4096, stream));
  // Through libcumem, it is seen.
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_RELAXED));
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(quick, 4096, stream, &during));
  EXPECT_NE(during, p) << "a capture begun through libcumem has its own pool";
  const uint64_t id = info_of(stream).id;
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(quick, during, 4096, stream));
  void* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture(stream, &graph));
  fake.graph_destroy(static_cast<CUgraph>(graph));
  CUMEM_ASSERT_OK(cumem_caching_resource_release_capture_pool(quick, id));
  cumem_resource_release(quick);
  EXPECT_TRUE(no_invalidation());
}

// The framework entry points over the cache ask the driver once per call:
// their own question (may the free run now?) answers the cache's (which
// capture's pool?), so a pair costs two questions, not four; under a
// capture the answer still routes the blocks to the capture's pool, and
// the legacy default stream asks nothing.
TEST_F(CaptureCache, FrameworkCallsAskTheDriverOnceAndTheCacheUsesTheAnswer) {
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, cache));
  auto questions = [&] {
    return fake.calls("cuStreamGetCaptureInfo") + fake.calls("cuStreamIsCapturing");
  };
  fake.reset_calls();
  void* p = cumem_torch_alloc(4096, 0, native);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_EQ(questions(), 1);
  cumem_torch_free(p, 4096, 0, native);
  EXPECT_EQ(questions(), 2);
  void* q = cumem_torch_alloc(4096, 0, native);
  EXPECT_EQ(q, p) << "the cached block, on its stream";
  cumem_torch_free(q, 4096, 0, native);
  EXPECT_EQ(questions(), 4);
  void* legacy = cumem_torch_alloc(4096, 0, nullptr);
  ASSERT_NE(legacy, nullptr) << cumem_last_error_message();
  cumem_torch_free(legacy, 4096, 0, nullptr);
  EXPECT_EQ(questions(), 4) << "the legacy default stream cannot capture";

  // Under a capture: the capture's pool, freed back into it, one question each.
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  const uint64_t id = info_of(stream).id;
  // (The pool's first block comes from the upstream, on the cache's own
  // stream, which is asked about once: not counted here.)
  void* inside = cumem_torch_alloc(4096, 0, native);
  ASSERT_NE(inside, nullptr) << cumem_last_error_message();
  EXPECT_NE(inside, p) << "not the block eager work used";
  fake.reset_calls();
  cumem_torch_free(inside, 4096, 0, native);
  EXPECT_EQ(questions(), 1);
  void* again = cumem_torch_alloc(4096, 0, native);
  EXPECT_EQ(again, inside) << "the block freed in the capture, reused in it";
  EXPECT_EQ(questions(), 2);
  cumem_torch_free(again, 4096, 0, native);
  EXPECT_EQ(questions(), 3);
  void* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture(stream, &graph));
  fake.graph_destroy(static_cast<CUgraph>(graph));
  EXPECT_TRUE(no_invalidation());
  EXPECT_EQ(caching_of(cache).capture_pools, 1u);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_capture_pool(cache, id));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
}

// The framework's resource choice is read without a lock by every
// allocation: while threads allocate and free through the entry points,
// another sets a new resource again and again and releases its handle, so
// that each replaced resource is destroyed once its last allocation is
// freed. Every allocation succeeds, goes back to the resource it came
// from, and no resource outlives its allocations (ASan and TSan run this).
TEST_F(CaptureCache, ResourcesSetWhileThreadsAllocateServeAndFreeTheirOwnBlocks) {
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const size_t size = 256u << t;
      while (!stop.load(std::memory_order_relaxed)) {
        void* p = cumem_torch_alloc(size, 0, t % 2 ? native : nullptr);
        if (!p) {
          ++failures;
          continue;
        }
        cumem_torch_free(p, size, 0, t % 2 ? native : nullptr);
      }
    });
  cumem_resource_t* last = nullptr;
  for (int i = 0; i < 300; ++i) {
    cumem_resource_t* r = nullptr;
    CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &r));
    CUMEM_ASSERT_OK(cumem_framework_set_resource(0, r));
    if (i == 299) {
      last = r;  // kept, to read its statistics below
    } else {
      cumem_resource_release(r);  // the framework's reference keeps it
    }
    std::this_thread::yield();
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << cumem_last_error_message();
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  EXPECT_EQ(statistics_of(last).live_allocations, 0u);
  cumem_resource_release(last);
  EXPECT_EQ(statistics_of(pool).live_allocations, 0u)
      << "every replaced cache was destroyed and gave its blocks back";
}

}  // namespace
