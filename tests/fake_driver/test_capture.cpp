// libcumem under stream capture, on the fake capturing driver of this folder
// (fake_capture_driver.cpp, named in $CUMEM_LIBCUDA), which keeps the real
// driver's capture rules: what libcumem does on capturing streams, in every
// mode, for captures begun through libcumem and with the driver directly;
// that no libcumem call on another thread invalidates a global capture;
// the graph memory resource; executable graphs; the frameworks' frees held
// until a capture ends. The fake's own state is read through its fake_*
// functions (the same library, opened again).
#include <dlfcn.h>

#include <cuda.h>

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

TEST_F(Capture, InfoSeesACaptureBegunWithTheDriverInEveryMode) {
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_NONE);
  uint64_t last_id = 0;
  for (CUstreamCaptureMode mode : {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                   CU_STREAM_CAPTURE_MODE_RELAXED}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(fake.begin_capture(cu(), mode), CUDA_SUCCESS);
    const cumem_capture_info_t during = info_of(stream);
    EXPECT_EQ(during.status, CUMEM_CAPTURE_STATUS_ACTIVE);
    EXPECT_NE(during.id, 0u);
    EXPECT_NE(during.id, last_id) << "each capture sequence has its own id";
    last_id = during.id;
    CUgraph g = nullptr;
    ASSERT_EQ(fake.end_capture(cu(), &g), CUDA_SUCCESS);
    fake.graph_destroy(g);
    const cumem_capture_info_t after = info_of(stream);
    EXPECT_EQ(after.status, CUMEM_CAPTURE_STATUS_NONE);
    EXPECT_EQ(after.id, 0u);
  }
}

TEST_F(Capture, TheLegacyDefaultStreamCostsNoDriverCallAnyOtherOne) {
  cumem_stream_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_legacy_default(device, &legacy));
  fake.reset_calls();
  EXPECT_EQ(info_of(nullptr).status, CUMEM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(info_of(legacy).status, CUMEM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(fake.calls("cuStreamGetCaptureInfo") + fake.calls("cuStreamIsCapturing"), 0);
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(fake.calls("cuStreamGetCaptureInfo"), 1);
  cumem_stream_release(legacy);
}

TEST_F(Capture, AStreamJoinedThroughAnEventReportsTheCapturesId) {
  cumem_stream_t* side = nullptr;
  cumem_event_t* fork = nullptr;
  cumem_event_t* join = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &side));
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &fork));
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &join));
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  CUMEM_ASSERT_OK(cumem_event_record(fork, stream));
  CUMEM_ASSERT_OK(cumem_stream_wait_event(side, fork));
  const cumem_capture_info_t origin = info_of(stream);
  const cumem_capture_info_t joined = info_of(side);
  EXPECT_EQ(joined.status, CUMEM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(joined.id, origin.id);
  CUMEM_ASSERT_OK(cumem_event_record(join, side));
  CUMEM_ASSERT_OK(cumem_stream_wait_event(stream, join));
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  uint64_t id = 0;
  CUMEM_ASSERT_OK(cumem_graph_capture_id(graph, &id));
  EXPECT_EQ(id, origin.id) << "the graph knows the capture it came from";
  EXPECT_EQ(info_of(side).status, CUMEM_CAPTURE_STATUS_NONE);
  cumem_graph_release(graph);
  cumem_event_release(join);
  cumem_event_release(fork);
  cumem_stream_release(side);
  EXPECT_TRUE(no_invalidation());
}

// The host form of the gpu suite's replay test: in each mode, memory
// allocated and freed inside the capture is graph memory; 1000 launches,
// with an allocation of the same size made outside between launches,
// leave every byte of both as it should be.
TEST_F(Capture, GraphMemoryReplaysNeverTouchMemoryAllocatedOutside) {
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  constexpr size_t n = 4096;
  for (cumem_capture_mode_t mode : {CUMEM_CAPTURE_MODE_GLOBAL, CUMEM_CAPTURE_MODE_THREAD_LOCAL,
                                    CUMEM_CAPTURE_MODE_RELAXED}) {
    SCOPED_TRACE(mode);
    cumem_buffer_t* out = nullptr;  // allocated before the capture, written by the graph
    CUMEM_ASSERT_OK(cumem_resource_allocate(pool, n, stream, &out));
    fake.reset_calls();
    CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, mode));
    cumem_buffer_t* scratch = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(pool, n, stream, &scratch));
    CUMEM_ASSERT_OK(cumem_buffer_fill(scratch, 0xA5A5A5A5u, 4, stream));
    CUMEM_ASSERT_OK(cumem_buffer_copy_to(scratch, out, stream));
    CUMEM_ASSERT_OK(cumem_buffer_close(scratch, stream));  // a graph free node
    cumem_buffer_release(scratch);
    cumem_graph_t* graph = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
    EXPECT_EQ(fake.calls("graph free node"), 1);
    for (int i = 0; i < 1000; ++i) {
      CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
      cumem_buffer_t* eager = nullptr;
      CUMEM_ASSERT_OK(cumem_resource_allocate(pool, n, stream, &eager));
      CUMEM_ASSERT_OK(cumem_buffer_fill(eager, static_cast<uint32_t>(i & 0xFF), 1, stream));
      void* e = nullptr;
      CUMEM_ASSERT_OK(cumem_buffer_ptr(eager, &e));
      for (size_t b = 0; b < n; ++b)
        ASSERT_EQ(static_cast<unsigned char*>(e)[b], i & 0xFF) << "launch " << i << " byte " << b;
      CUMEM_ASSERT_OK(cumem_buffer_close(eager, stream));
      cumem_buffer_release(eager);
      void* o = nullptr;
      CUMEM_ASSERT_OK(cumem_buffer_ptr(out, &o));
      for (size_t b = 0; b < n; ++b)
        ASSERT_EQ(static_cast<unsigned char*>(o)[b], 0xA5) << "launch " << i << " byte " << b;
    }
    cumem_graph_release(graph);
    cumem_buffer_release(out);
  }
  EXPECT_TRUE(no_invalidation());
  cumem_resource_release(pool);
}

// Under a global capture on this thread, another thread uses every
// libcumem operation that makes a driver call the driver calls unsafe:
// the capture stays valid.
TEST_F(Capture, NoCallOnAnotherThreadInvalidatesAGlobalCapture) {
  ASSERT_EQ(fake.begin_capture(cu(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  std::string failures;
  std::thread other([&] {
    auto check = [&](cumem_status_t s, const char* what) {
      if (s != CUMEM_SUCCESS)
        failures += std::string(what) + ": " + cumem_last_error_message() + "\n";
    };
    cumem_stream_t* mine = nullptr;
    check(cumem_stream_create(device, nullptr, &mine), "stream create");
    // Synchronous kinds: allocation and free (waits first) on a stream
    // that does not capture, and with no stream (the capturing stream is
    // non-blocking, so the legacy stream may be waited for).
    cumem_resource_t* sync_kinds[3] = {nullptr, nullptr, nullptr};
    check(cumem_legacy_pinned_resource_create(device, &sync_kinds[0]), "legacy pinned create");
    check(cumem_legacy_device_resource_create(device, &sync_kinds[1]), "legacy device create");
    cumem_managed_resource_options_t mo = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
    mo.disable_pool = CUMEM_TRUE;
    check(cumem_managed_resource_create(device, &mo, &sync_kinds[2]), "managed create");
    for (cumem_resource_t* r : sync_kinds) {
      for (const cumem_stream_t* s : {static_cast<const cumem_stream_t*>(mine),
                                      static_cast<const cumem_stream_t*>(nullptr)}) {
        void* p = nullptr;
        check(cumem_resource_allocate_raw(r, 1024, s, &p), "sync allocate");
        check(cumem_resource_deallocate_raw(r, p, 1024, s), "sync free");
      }
      cumem_buffer_t* b = nullptr;
      check(cumem_resource_allocate(r, 64, mine, &b), "sync buffer");
      check(cumem_buffer_close(b, nullptr), "sync buffer close");
      cumem_buffer_release(b);
      cumem_resource_release(r);
    }
    // A device resource made now (the frameworks make theirs on first use),
    // and every pool call.
    cumem_resource_t* pool = nullptr;
    check(cumem_device_resource_create(device, nullptr, &pool), "device resource create");
    cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
    check(cumem_resource_pool_get_attributes(pool, &a), "pool get attributes");
    check(cumem_resource_pool_set_attributes(pool, &a), "pool set attributes");
    check(cumem_resource_pool_reset_highs(pool), "pool reset highs");
    check(cumem_resource_pool_trim(pool, 0), "pool trim");
    void* p = nullptr;
    check(cumem_resource_allocate_raw(pool, 256, mine, &p), "pool allocate");
    check(cumem_resource_deallocate_raw(pool, p, 256, mine), "pool free");
    // Waits for streams and events that do not capture.
    check(cumem_stream_synchronize(mine), "stream synchronize");
    cumem_bool_t done = CUMEM_FALSE;
    check(cumem_stream_query(mine, &done), "stream query");
    cumem_event_t* e = nullptr;
    check(cumem_event_create(device, nullptr, &e), "event create");
    check(cumem_event_record(e, mine), "event record");
    check(cumem_event_synchronize(e), "event synchronize");
    check(cumem_event_query(e, &done), "event query");
    cumem_event_release(e);
    // Graph memory: attributes, highs, trim; a graph captured and replayed
    // on this thread's own (relaxed) capture, instantiated and destroyed.
    cumem_resource_t* graph_memory = nullptr;
    check(cumem_graph_memory_resource_create(device, &graph_memory), "graph memory create");
    cumem_graph_memory_attributes_t ga = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
    check(cumem_graph_memory_resource_get_attributes(graph_memory, &ga), "graph memory attributes");
    check(cumem_graph_memory_resource_reset_highs(graph_memory), "graph memory reset highs");
    check(cumem_graph_memory_resource_trim(graph_memory), "graph memory trim");
    check(cumem_stream_begin_capture(mine, CUMEM_CAPTURE_MODE_RELAXED), "own capture");
    check(cumem_resource_allocate_raw(graph_memory, 512, mine, &p), "graph allocate");
    check(cumem_resource_deallocate_raw(graph_memory, p, 512, mine), "graph free");
    cumem_graph_t* g = nullptr;
    check(cumem_stream_end_capture_graph(mine, nullptr, &g), "end own capture");
    check(cumem_graph_launch(g, mine), "graph launch");
    check(cumem_graph_release(g), "graph release");
    cumem_resource_release(graph_memory);
    cumem_resource_release(pool);
    // Device memory information (the managed kinds ask it on every allocation).
    uint64_t free_bytes = 0, total = 0;
    check(cumem_device_memory_info(device, &free_bytes, &total), "memory info");
    cumem_stream_release(mine);
  });
  other.join();
  EXPECT_EQ(failures, "");
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_ACTIVE);
  EXPECT_TRUE(no_invalidation());
  CUgraph g = nullptr;
  EXPECT_EQ(fake.end_capture(cu(), &g), CUDA_SUCCESS);
  fake.graph_destroy(g);
  EXPECT_GT(fake.calls("cuThreadExchangeStreamCaptureMode"), 0);
}

// The control: the fake does invalidate, so the test above can fail.
TEST_F(Capture, TheFakeInvalidatesAGlobalCaptureOnAnUnsafeCallFromAnotherThread) {
  ASSERT_EQ(fake.begin_capture(cu(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUresult r = CUDA_SUCCESS;
  std::thread other([&] { r = fake.mem_free(0); });  // cuMemFree, in global mode
  other.join();
  EXPECT_EQ(r, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_INVALIDATED);
  CUgraph g = nullptr;
  EXPECT_EQ(fake.end_capture(cu(), &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(g, nullptr);
}

TEST_F(Capture, RelaxedScopesRestoreTheThreadsMode) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  ASSERT_EQ(fake.exchange_mode(&mode), CUDA_SUCCESS);
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(pool, 0));
  EXPECT_EQ(fake.thread_mode(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  cumem_resource_release(pool);
  ASSERT_EQ(fake.exchange_mode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(fake.thread_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
}

// The thread that captures (in global or thread-local mode) may call pool
// attributes and trims itself: relaxed mode makes them legal.
TEST_F(Capture, PoolCallsOnTheCapturingThreadAreLegal) {
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  for (cumem_capture_mode_t mode : {CUMEM_CAPTURE_MODE_GLOBAL, CUMEM_CAPTURE_MODE_THREAD_LOCAL}) {
    CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, mode));
    cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
    CUMEM_ASSERT_OK(cumem_resource_pool_get_attributes(pool, &a));
    CUMEM_ASSERT_OK(cumem_resource_pool_set_attributes(pool, &a));
    CUMEM_ASSERT_OK(cumem_resource_pool_trim(pool, 0));
    cumem_resource_t* made_now = nullptr;
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &made_now));
    cumem_resource_release(made_now);
    cumem_graph_t* graph = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
    cumem_graph_release(graph);
  }
  EXPECT_TRUE(no_invalidation());
  cumem_resource_release(pool);
}

TEST_F(Capture, SynchronousKindsRefuseAFreeOnACapturingStreamAndKeepTheMemory) {
  cumem_resource_t* kinds[2] = {nullptr, nullptr};
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &kinds[0]));
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &kinds[1]));
  for (cumem_resource_t* r : kinds) {
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 4096, stream, &p));
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, 64, stream, &b));
    CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_THREAD_LOCAL));
    // Allocating is fine (at once, not captured).
    void* during = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 128, stream, &during));
    fake.reset_calls();
    CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(r, p, 4096, stream), CUMEM_ERROR_INVALID_STATE,
                       "it is capturing a CUDA graph");
    CUMEM_EXPECT_ERROR(cumem_buffer_close(b, nullptr), CUMEM_ERROR_INVALID_STATE,
                       "it is capturing a CUDA graph");
    EXPECT_EQ(fake.calls("cuMemFree") + fake.calls("cuMemFreeHost") +
                  fake.calls("cuStreamSynchronize"),
              0)
        << "refused before any driver call";
    cumem_bool_t closed = CUMEM_TRUE;
    CUMEM_ASSERT_OK(cumem_buffer_is_closed(b, &closed));
    EXPECT_EQ(closed, CUMEM_FALSE) << "a refused close leaves the buffer open";
    EXPECT_EQ(statistics_of(r).live_allocations, 3u);
    EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_ACTIVE);
    cumem_graph_t* graph = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
    cumem_graph_release(graph);
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, p, 4096, stream));
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, during, 128, stream));
    CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
    cumem_buffer_release(b);
    EXPECT_EQ(statistics_of(r).live_allocations, 0u);
    cumem_resource_release(r);
  }
  EXPECT_TRUE(no_invalidation());
}

// Adaptors over a synchronous kind: the refused free leaves each as it was.
TEST_F(Capture, AdaptorsStayConsistentWhenTheirUpstreamRefusesAFree) {
  cumem_resource_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &legacy));
  cumem_resource_t* limit = nullptr;
  cumem_resource_t* tracking = nullptr;
  cumem_resource_t* aligned = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(legacy, 1 << 20, &limit));
  CUMEM_ASSERT_OK(cumem_tracking_resource_create(limit, CUMEM_FALSE, &tracking));
  // 4 KiB alignment: the fake's calloc does not give that, so the adaptor pads.
  CUMEM_ASSERT_OK(cumem_aligned_resource_create(tracking, 1 << 12, &aligned));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(aligned, 1000, stream, &p));
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_RELAXED));
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(aligned, p, 1000, stream),
                     CUMEM_ERROR_INVALID_STATE, "capturing");
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  cumem_graph_release(graph);
  uint64_t count = 0, bytes = 0;
  CUMEM_ASSERT_OK(cumem_tracking_resource_outstanding(tracking, &count, &bytes));
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(statistics_of(limit).live_allocations, 1u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(aligned, p, 1000, stream));
  CUMEM_ASSERT_OK(cumem_tracking_resource_outstanding(tracking, &count, &bytes));
  EXPECT_EQ(count, 0u);
  for (cumem_resource_t* r : {aligned, tracking, limit, legacy}) {
    EXPECT_EQ(statistics_of(r).live_allocations, 0u);
    cumem_resource_release(r);
  }
}

TEST_F(Capture, WithABlockingStreamCapturingTheLegacyStreamIsNotWaitedFor) {
  cumem_stream_options_t o = CUMEM_STREAM_OPTIONS_INIT;
  o.blocking = CUMEM_TRUE;
  cumem_stream_t* blocking = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, &o, &blocking));
  cumem_stream_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_legacy_default(device, &legacy));
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &r));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 64, nullptr, &p));
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(blocking, CUMEM_CAPTURE_MODE_GLOBAL));
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(r, p, 64, nullptr), CUMEM_ERROR_INVALID_STATE,
                     "a blocking stream of that device is capturing");
  CUMEM_EXPECT_ERROR(cumem_stream_synchronize(legacy), CUMEM_ERROR_INVALID_STATE,
                     "legacy default stream");
  EXPECT_EQ(info_of(blocking).status, CUMEM_CAPTURE_STATUS_ACTIVE);
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(blocking, nullptr, &graph));
  cumem_graph_release(graph);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, p, 64, nullptr));
  EXPECT_TRUE(no_invalidation());
  cumem_resource_release(r);
  cumem_stream_release(legacy);
  cumem_stream_release(blocking);
}

TEST_F(Capture, WaitingForOrQueryingACapturingStreamIsRefused) {
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_THREAD_LOCAL));
  CUMEM_EXPECT_ERROR(cumem_stream_synchronize(stream), CUMEM_ERROR_INVALID_STATE,
                     "cannot synchronize");
  cumem_bool_t done = CUMEM_FALSE;
  CUMEM_EXPECT_ERROR(cumem_stream_query(stream, &done), CUMEM_ERROR_INVALID_STATE, "capturing");
  // Pageable host memory cannot take part in captured work.
  cumem_resource_t* host = nullptr;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_buffer_t* h = nullptr;
  cumem_buffer_t* h2 = nullptr;
  cumem_buffer_t* d = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 64, nullptr, &h));
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 64, nullptr, &h2));
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, 64, stream, &d));
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_to(h, d, stream), CUMEM_ERROR_INVALID_STATE,
                     "pageable host memory");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_to(h, h2, stream), CUMEM_ERROR_INVALID_STATE,
                     "pageable host");
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(h, 1, 1, stream), CUMEM_ERROR_INVALID_STATE,
                     "pageable host");
  CUMEM_ASSERT_OK(cumem_buffer_close(d, stream));  // graph memory: a graph free node
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_ACTIVE);
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  cumem_graph_release(graph);
  for (cumem_buffer_t* b : {h, h2, d}) cumem_buffer_release(b);
  cumem_resource_release(pool);
  cumem_resource_release(host);
  EXPECT_TRUE(no_invalidation());
}

TEST_F(Capture, PoolFreeOfMemoryFromOutsideOnACapturingStreamSaysWhy) {
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(pool, 256, stream, &p));
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_THREAD_LOCAL));
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(pool, p, 256, stream), CUMEM_ERROR_DRIVER,
                     "a graph can free only memory that a capture allocated");
  EXPECT_EQ(statistics_of(pool).live_allocations, 1u) << "not freed, still counted";
  cumem_graph_t* graph = nullptr;
  CUMEM_EXPECT_ERROR(cumem_stream_end_capture_graph(stream, nullptr, &graph), CUMEM_ERROR_DRIVER,
                     "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_NONE) << "the capture ended anyway";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(pool, p, 256, stream));
  cumem_resource_release(pool);
}

TEST_F(Capture, GraphMemoryResourceAllocatesOnlyOnCapturingStreams) {
  cumem_resource_t* gm = nullptr;
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_create(device, &gm));
  cumem_resource_properties_t props = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(gm, &props));
  EXPECT_EQ(props.kind, CUMEM_RESOURCE_GRAPH_MEMORY);
  EXPECT_EQ(props.device_accessible, CUMEM_TRUE);
  EXPECT_EQ(props.host_accessible, CUMEM_FALSE);
  EXPECT_EQ(props.is_stream_ordered, CUMEM_TRUE);
  EXPECT_EQ(props.is_pool, CUMEM_FALSE);
  EXPECT_EQ(props.device_id, 0);
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(gm, 64, nullptr, &p), CUMEM_ERROR_INVALID_STATE,
                     "the legacy default stream cannot capture");
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(gm, 64, stream, &p), CUMEM_ERROR_INVALID_STATE,
                     "is not capturing");
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(statistics_of(gm).total_allocations, 0u);

  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  fake.reset_calls();
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(gm, 1 << 20, stream, &p));
  EXPECT_EQ(fake.calls("cuMemAllocAsync"), 1);
  cumem_graph_memory_attributes_t a = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_get_attributes(gm, &a));
  EXPECT_EQ(a.used_mem_current, 1u << 20);
  EXPECT_GE(a.used_mem_high, 1u << 20);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(gm, p, 1 << 20, stream));
  EXPECT_EQ(fake.calls("graph free node"), 1);
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_get_attributes(gm, &a));
  EXPECT_EQ(a.used_mem_current, 0u);
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_reset_highs(gm));
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_get_attributes(gm, &a));
  EXPECT_EQ(a.used_mem_high, 0u);
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_trim(gm));
  EXPECT_EQ(statistics_of(gm).total_allocations, 1u);
  EXPECT_EQ(statistics_of(gm).live_allocations, 0u);
  cumem_graph_release(graph);

  // An invalidated capture is named.
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  std::thread([&] { fake.mem_free(0); }).join();  // invalidates it
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(gm, 64, stream, &p), CUMEM_ERROR_INVALID_STATE,
                     "capture was invalidated");
  CUMEM_EXPECT_ERROR(cumem_stream_end_capture_graph(stream, nullptr, &graph), CUMEM_ERROR_DRIVER,
                     "INVALIDATED");
  cumem_resource_release(gm);
}

TEST_F(Capture, GraphsFromCapturesAndFromTheDriverLaunchAndUpload) {
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, 16, stream, &b));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
  // A CUgraph from cumem_stream_end_capture, instantiated; the caller
  // destroys its CUgraph at once.
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_THREAD_LOCAL));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 7, 1, stream));
  void* native_graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture(stream, &native_graph));
  cumem_graph_t* graph = nullptr;
  cumem_graph_options_t o = CUMEM_GRAPH_OPTIONS_INIT;
  o.auto_free_on_launch = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_graph_instantiate(device, native_graph, &o, &graph));
  fake.graph_destroy(static_cast<CUgraph>(native_graph));
  void* exec = nullptr;
  CUMEM_ASSERT_OK(cumem_graph_native(graph, &exec));
  EXPECT_NE(exec, nullptr);
  uint64_t id = 7;
  CUMEM_ASSERT_OK(cumem_graph_capture_id(graph, &id));
  EXPECT_EQ(id, 0u) << "instantiated from a CUgraph: no capture of its own";
  CUMEM_ASSERT_OK(cumem_graph_upload(graph, stream));
  CUMEM_ASSERT_OK(cumem_graph_launch(graph, nullptr));
  EXPECT_EQ(static_cast<unsigned char*>(p)[15], 7);
  // Handles: retain and release are counted, a surplus release refused.
  CUMEM_ASSERT_OK(cumem_graph_retain(graph));
  CUMEM_ASSERT_OK(cumem_graph_release(graph));
  CUMEM_ASSERT_OK(cumem_graph_release(graph));
  CUMEM_EXPECT_ERROR(cumem_graph_launch(graph, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "released");
  CUMEM_EXPECT_ERROR(cumem_graph_instantiate(device, nullptr, nullptr, &graph),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'native_graph'");
  // Options follow the struct_size rules.
  o.struct_size = 6;
  CUMEM_EXPECT_ERROR(cumem_stream_end_capture_graph(stream, &o, &graph),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'auto_free_on_launch'");
  std::memset(&o, 0, sizeof o);
  CUMEM_EXPECT_ERROR(cumem_stream_end_capture_graph(stream, &o, &graph),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cumem_graph_options_init()");
  // Ending a capture that is not there.
  CUMEM_EXPECT_ERROR(cumem_stream_end_capture_graph(stream, nullptr, &graph), CUMEM_ERROR_DRIVER,
                     "cuStreamEndCapture");
  cumem_buffer_release(b);
  cumem_resource_release(pool);
}

// The frameworks' entry points: a tensor allocated before a capture and
// freed during it, on the capturing stream, is freed after the capture
// ended; one allocated inside is a graph free.
TEST_F(Capture, FrameworkFreesOfOutsideMemoryWaitForTheCaptureToEnd) {
  void* before = cumem_torch_alloc(256, 0, native);
  ASSERT_NE(before, nullptr) << cumem_last_error_message();
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &r));
  const uint64_t live = statistics_of(r).live_allocations;
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  void* inside = cumem_torch_alloc(512, 0, native);
  ASSERT_NE(inside, nullptr) << cumem_last_error_message();
  fake.reset_calls();
  cumem_torch_free(inside, 512, 0, native);
  EXPECT_EQ(fake.calls("graph free node"), 1);
  cumem_torch_free(before, 256, 0, native);
  EXPECT_EQ(fake.calls("cuMemFreeAsync"), 1) << "the free of outside memory waits";
  EXPECT_EQ(statistics_of(r).live_allocations, live) << "still allocated, still counted";
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  EXPECT_TRUE(no_invalidation());
  // The next framework call does the held free, on the same stream.
  void* after = cumem_torch_alloc(64, 0, native);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(fake.calls("cuMemFreeAsync"), 2);
  EXPECT_EQ(statistics_of(r).live_allocations, live);  // `after` replaces `before`
  cumem_torch_free(after, 64, 0, native);
  EXPECT_EQ(statistics_of(r).live_allocations, live - 1);
  cumem_graph_release(graph);
  cumem_resource_release(r);
}

// A framework's own stream (not libcumem's), wrapped while it captures:
// the driver refuses cuStreamGetDevice on a capturing stream and the
// refusal invalidates the capture (seen on the H200 with PyTorch and CuPy),
// so neither the framework entry points nor cumem_stream_wrap ask it then.
TEST_F(Capture, AForeignStreamWrappedWhileItCapturesKeepsItsCaptureValid) {
  ASSERT_NE(fake.stream_create, nullptr);
  CUstream foreign = nullptr;
  ASSERT_EQ(fake.stream_create(&foreign, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.begin_capture(foreign, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  fake.reset_calls();
  void* inside = cumem_torch_alloc(4096, 0, foreign);
  ASSERT_NE(inside, nullptr) << cumem_last_error_message();
  cumem_stream_t* wrapped = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_wrap(device, foreign, &wrapped));
  EXPECT_EQ(info_of(wrapped).status, CUMEM_CAPTURE_STATUS_ACTIVE);
  cumem_torch_free(inside, 4096, 0, foreign);
  EXPECT_EQ(fake.calls("cuStreamGetDevice"), 0);
  EXPECT_TRUE(no_invalidation());
  CUgraph graph = nullptr;
  ASSERT_EQ(fake.end_capture(foreign, &graph), CUDA_SUCCESS);
  fake.graph_destroy(graph);
  // Not capturing, the device is checked again.
  cumem_stream_t* again = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_wrap(device, foreign, &again));
  EXPECT_EQ(fake.calls("cuStreamGetDevice"), 1);
  cumem_stream_release(again);
  cumem_stream_release(wrapped);
  fake.stream_destroy(foreign);
}

}  // namespace
