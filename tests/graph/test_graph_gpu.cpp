// CUDA graphs on a GPU: memory allocated and freed inside captures (the
// device resource's pool and the graph memory resource) in every capture
// mode, replayed 1000 times beside allocations made outside, every byte of
// both checked; a capture begun with the driver directly; a capture over two
// streams (fork and join through events); a global capture left valid by
// every formerly unsafe libcumem call on another thread; the graph memory
// resource's attributes and trim.
#include <dlfcn.h>

#include <cuda.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cumem/cumem.hpp>
#include <cumem/dlpack.h>

#include "gpu_fixture.hpp"

namespace {

constexpr size_t kBytes = size_t{64} << 10;

// The CUDA driver itself, for a capture begun without libcumem: the
// library libcumem loads ($CUMEM_LIBCUDA, else libcuda.so.1), so that on
// the host suite's fake capturing driver this test runs too.
struct Driver {
  CUresult (*begin_capture)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*end_capture)(CUstream, CUgraph*) = nullptr;
  CUresult (*graph_destroy)(CUgraph) = nullptr;

  static const Driver& get() {
    static const Driver d = [] {
      Driver x;
      const char* env = std::getenv("CUMEM_LIBCUDA");
      void* lib = dlopen(env && *env ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!lib) return x;
      auto proc = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t,
                                                CUdriverProcAddressQueryResult*)>(
          dlsym(lib, "cuGetProcAddress_v2"));
      if (!proc) return x;
      auto entry = [&](const char* name, int version, auto& fn) {
        void* p = nullptr;
        CUdriverProcAddressQueryResult found{};
        if (proc(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) == CUDA_SUCCESS)
          fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      };
      entry("cuStreamBeginCapture", 10010, x.begin_capture);
      entry("cuStreamEndCapture", 10000, x.end_capture);
      entry("cuGraphDestroy", 10000, x.graph_destroy);
      return x;
    }();
    return d;
  }
};

cumem_capture_info_t info_of(const cumem_stream_t* stream) {
  cumem_capture_info_t info = CUMEM_CAPTURE_INFO_INIT;
  EXPECT_EQ(cumem_stream_get_capture_info(stream, &info), CUMEM_SUCCESS)
      << cumem_last_error_message();
  return info;
}

class GraphGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
    int32_t pools = 0;
    CUMEM_ASSERT_OK(cumem_device_get_attribute(device, 115 /* MEMORY_POOLS_SUPPORTED */, &pools));
    if (pools == 0) GTEST_SKIP() << "the device has no memory pools, so no graph memory";
    CUMEM_ASSERT_OK(cumem_graph_memory_resource_create(device, &graph_memory));
  }
  void TearDown() override {
    // A test that failed mid-capture must not leave its capture running
    // (every later test would then see it): ended, its graph discarded.
    if (stream && info_of(stream).status != CUMEM_CAPTURE_STATUS_NONE) {
      ADD_FAILURE() << "the test left its stream capturing";
      cumem_graph_t* left = nullptr;
      cumem_stream_end_capture_graph(stream, nullptr, &left);
      cumem_graph_release(left);
    }
    if (stream) cumem_stream_synchronize(stream);
    cumem_resource_release(graph_memory);
    cumem_resource_release(host);
    cumem_resource_release(pool);
    cumem_stream_release(stream);
    GpuTest::TearDown();
  }
  // Every byte of `b` is `value` (read back through host memory).
  ::testing::AssertionResult all_bytes(cumem_buffer_t* b, uint8_t value) {
    size_t n = 0;
    cumem_buffer_size(b, &n);
    cumem_buffer_t* h = nullptr;
    if (cumem_resource_allocate(host, n, nullptr, &h) != CUMEM_SUCCESS ||
        cumem_buffer_copy_to(b, h, stream) != CUMEM_SUCCESS ||
        cumem_stream_synchronize(stream) != CUMEM_SUCCESS)
      return ::testing::AssertionFailure() << cumem_last_error_message();
    void* p = nullptr;
    cumem_buffer_ptr(h, &p);
    const auto* bytes = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i)
      if (bytes[i] != value) {
        cumem_buffer_release(h);
        return ::testing::AssertionFailure()
               << "byte " << i << " is " << int(bytes[i]) << ", not " << int(value);
      }
    cumem_buffer_release(h);
    return ::testing::AssertionSuccess();
  }

  cumem_stream_t* stream = nullptr;
  cumem_resource_t* pool = nullptr;
  cumem_resource_t* host = nullptr;
  cumem_resource_t* graph_memory = nullptr;
};

// Captures, in `mode`, on `stream`: a scratch buffer from `inside` (the
// resource under test) filled with 0xA5, copied into `out` (from outside
// the capture), and a second buffer filled with 0x3C and copied over half
// of `out`, both freed inside; a third buffer `kept`, allocated inside and
// filled with 0x77, is not freed (it outlives each launch: the graph is
// instantiated with auto_free_on_launch).
cumem_graph_t* capture_graph(cumem_stream_t* stream, cumem_resource_t* inside,
                             cumem_capture_mode_t mode, cumem_buffer_t* out,
                             cumem_buffer_t** kept) {
  EXPECT_EQ(cumem_stream_begin_capture(stream, mode), CUMEM_SUCCESS) << cumem_last_error_message();
  cumem_buffer_t* a = nullptr;
  cumem_buffer_t* b = nullptr;
  EXPECT_EQ(cumem_resource_allocate(inside, kBytes, stream, &a), CUMEM_SUCCESS)
      << cumem_last_error_message();
  EXPECT_EQ(cumem_resource_allocate(inside, kBytes / 2, stream, &b), CUMEM_SUCCESS)
      << cumem_last_error_message();
  EXPECT_EQ(cumem_resource_allocate(inside, kBytes, stream, kept), CUMEM_SUCCESS)
      << cumem_last_error_message();
  EXPECT_EQ(cumem_buffer_fill(a, 0xA5, 1, stream), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_buffer_fill(b, 0x3C, 1, stream), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_buffer_fill(*kept, 0x77, 1, stream), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_buffer_copy_to(a, out, stream), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_buffer_copy_region(out, 0, b, 0, kBytes / 2, stream), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_buffer_close(a, stream), CUMEM_SUCCESS) << cumem_last_error_message();
  EXPECT_EQ(cumem_buffer_close(b, stream), CUMEM_SUCCESS) << cumem_last_error_message();
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_graph_options_t o = CUMEM_GRAPH_OPTIONS_INIT;
  o.auto_free_on_launch = CUMEM_TRUE;
  cumem_graph_t* graph = nullptr;
  EXPECT_EQ(cumem_stream_end_capture_graph(stream, &o, &graph), CUMEM_SUCCESS)
      << cumem_last_error_message();
  return graph;
}

using ModeAndKind = std::tuple<cumem_capture_mode_t, bool /* graph memory resource */>;

class ReplayGpu : public GraphGpu, public ::testing::WithParamInterface<ModeAndKind> {};

TEST_P(ReplayGpu, ThousandReplaysNeverTouchMemoryAllocatedOutside) {
  const auto [mode, use_graph_memory] = GetParam();
  cumem_resource_t* inside = use_graph_memory ? graph_memory : pool;
  cumem_buffer_t* out = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &out));
  CUMEM_ASSERT_OK(cumem_buffer_fill(out, 0, 1, stream));
  cumem_buffer_t* kept = nullptr;
  cumem_graph_t* graph = capture_graph(stream, inside, mode, out, &kept);
  ASSERT_NE(graph, nullptr);
  for (int i = 0; i < 1000; ++i) {
    // Allocations of the same sizes outside, live across the launch.
    const uint8_t mark = static_cast<uint8_t>(i % 251);
    cumem_buffer_t* eager[3] = {nullptr, nullptr, nullptr};
    const size_t sizes[3] = {kBytes, kBytes / 2, kBytes};
    for (int k = 0; k < 3; ++k) {
      CUMEM_ASSERT_OK(cumem_resource_allocate(pool, sizes[k], stream, &eager[k]));
      CUMEM_ASSERT_OK(cumem_buffer_fill(eager[k], mark, 1, stream));
    }
    CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(all_bytes(eager[k], mark)) << "launch " << i << ", eager buffer " << k;
      CUMEM_ASSERT_OK(cumem_buffer_close(eager[k], stream));
      cumem_buffer_release(eager[k]);
    }
    // `out`: 0x3C over its first half, 0xA5 over the rest.
    cumem_buffer_t* first = nullptr;
    cumem_buffer_t* second = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_slice(out, 0, kBytes / 2, &first));
    CUMEM_ASSERT_OK(cumem_buffer_slice(out, kBytes / 2, kBytes / 2, &second));
    ASSERT_TRUE(all_bytes(first, 0x3C)) << "launch " << i;
    ASSERT_TRUE(all_bytes(second, 0xA5)) << "launch " << i;
    ASSERT_TRUE(all_bytes(kept, 0x77)) << "launch " << i;
    cumem_buffer_release(first);
    cumem_buffer_release(second);
  }
  // The kept allocation is graph memory freed outside the graph: allowed.
  CUMEM_ASSERT_OK(cumem_buffer_close(kept, stream));
  cumem_buffer_release(kept);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_graph_release(graph);
  CUMEM_ASSERT_OK(cumem_buffer_close(out, stream));
  cumem_buffer_release(out);
  EXPECT_EQ(statistics_of(inside).live_allocations, 0u);
}

std::string replay_name(const ::testing::TestParamInfo<ModeAndKind>& info) {
  static const char* const modes[] = {"global", "thread_local", "relaxed"};
  return std::string(modes[std::get<0>(info.param)]) +
         (std::get<1>(info.param) ? "_graph_memory" : "_device_pool");
}

INSTANTIATE_TEST_SUITE_P(
    EveryMode, ReplayGpu,
    ::testing::Combine(::testing::Values(CUMEM_CAPTURE_MODE_GLOBAL, CUMEM_CAPTURE_MODE_THREAD_LOCAL,
                                         CUMEM_CAPTURE_MODE_RELAXED),
                       ::testing::Bool()),
    replay_name);

TEST_F(GraphGpu, ACaptureBegunWithTheDriverIsSeen) {
  const Driver& drv = Driver::get();
  if (!drv.begin_capture) GTEST_SKIP() << "cannot load libcuda.so.1 here";
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  cumem_buffer_t* out = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &out));
  cumem_resource_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &legacy));
  void* outside = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(legacy, 256, stream, &outside));
  ASSERT_EQ(drv.begin_capture(static_cast<CUstream>(native), CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  const cumem_capture_info_t info = info_of(stream);
  EXPECT_EQ(info.status, CUMEM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(info.id, 0u);
  // Seen by the resources: a synchronous free is refused, graph memory works.
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(legacy, outside, 256, stream),
                     CUMEM_ERROR_INVALID_STATE, "capturing");
  cumem_buffer_t* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(graph_memory, kBytes, stream, &a));
  CUMEM_ASSERT_OK(cumem_buffer_fill(a, 0x5A, 1, stream));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(a, out, stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(a, stream));
  cumem_buffer_release(a);
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  for (int i = 0; i < 10; ++i) CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
  EXPECT_TRUE(all_bytes(out, 0x5A));
  cumem_graph_release(graph);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(legacy, outside, 256, stream));
  cumem_buffer_release(out);
  cumem_resource_release(legacy);
}

TEST_F(GraphGpu, ACaptureOverTwoStreamsForkedAndJoinedThroughEvents) {
  cumem_stream_t* side = nullptr;
  cumem_event_t* fork = nullptr;
  cumem_event_t* join = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &side));
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &fork));
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &join));
  cumem_buffer_t* out = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &out));
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  CUMEM_ASSERT_OK(cumem_event_record(fork, stream));
  CUMEM_ASSERT_OK(cumem_stream_wait_event(side, fork));
  EXPECT_EQ(info_of(side).id, info_of(stream).id) << "the joined stream is in the same capture";
  // Allocated and written on the side stream (from both resources), freed
  // on the origin stream after the join.
  cumem_buffer_t* a = nullptr;
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes / 2, side, &a));
  CUMEM_ASSERT_OK(cumem_resource_allocate(graph_memory, kBytes / 2, side, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(a, 0x11, 1, side));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x22, 1, side));
  CUMEM_ASSERT_OK(cumem_event_record(join, side));
  CUMEM_ASSERT_OK(cumem_stream_wait_event(stream, join));
  CUMEM_ASSERT_OK(cumem_buffer_copy_region(out, 0, a, 0, kBytes / 2, stream));
  CUMEM_ASSERT_OK(cumem_buffer_copy_region(out, kBytes / 2, b, 0, kBytes / 2, stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(a, stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  EXPECT_EQ(info_of(side).status, CUMEM_CAPTURE_STATUS_NONE);
  for (int i = 0; i < 100; ++i) {
    cumem_buffer_t* eager = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes / 2, side, &eager));
    CUMEM_ASSERT_OK(cumem_buffer_fill(eager, 0xEE, 1, side));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(side));
    CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
    ASSERT_TRUE(all_bytes(eager, 0xEE)) << "launch " << i;
    cumem_buffer_t* first = nullptr;
    cumem_buffer_t* second = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_slice(out, 0, kBytes / 2, &first));
    CUMEM_ASSERT_OK(cumem_buffer_slice(out, kBytes / 2, kBytes / 2, &second));
    ASSERT_TRUE(all_bytes(first, 0x11)) << "launch " << i;
    ASSERT_TRUE(all_bytes(second, 0x22)) << "launch " << i;
    cumem_buffer_release(first);
    cumem_buffer_release(second);
    CUMEM_ASSERT_OK(cumem_buffer_close(eager, side));
    cumem_buffer_release(eager);
  }
  cumem_graph_release(graph);
  for (cumem_buffer_t* x : {a, b, out}) cumem_buffer_release(x);
  cumem_event_release(join);
  cumem_event_release(fork);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(side));
  cumem_stream_release(side);
}

// Under a global capture on this thread, another thread runs every libcumem
// operation that made a call the driver treats as unsafe under global
// capture; the capture must stay valid and its graph replay correctly.
TEST_F(GraphGpu, FormerlyUnsafeCallsOnAnotherThreadLeaveAGlobalCaptureValid) {
  cumem_buffer_t* out = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &out));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  cumem_buffer_t* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &a));
  CUMEM_ASSERT_OK(cumem_buffer_fill(a, 0x42, 1, stream));

  std::string failures;
  std::thread other([&] {
    auto check = [&](cumem_status_t s, const char* what) {
      if (s != CUMEM_SUCCESS)
        failures += std::string(what) + ": " + cumem_last_error_message() + "\n";
    };
    cumem_stream_t* mine = nullptr;
    check(cumem_stream_create(device, nullptr, &mine), "stream create");
    // Synchronous kinds: cuMemAlloc/cuMemFree, cuMemHostAlloc/cuMemFreeHost,
    // cuMemAllocManaged/cuMemFree, each with a stream and with none.
    cumem_resource_t* sync_kinds[3] = {nullptr, nullptr, nullptr};
    check(cumem_legacy_device_resource_create(device, &sync_kinds[0]), "legacy device create");
    check(cumem_legacy_pinned_resource_create(device, &sync_kinds[1]), "legacy pinned create");
    cumem_managed_resource_options_t mo = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
    mo.disable_pool = CUMEM_TRUE;
    check(cumem_managed_resource_create(device, &mo, &sync_kinds[2]), "managed create");
    for (cumem_resource_t* r : sync_kinds) {
      if (!r) continue;
      for (const cumem_stream_t* s : {static_cast<const cumem_stream_t*>(mine),
                                      static_cast<const cumem_stream_t*>(nullptr)}) {
        void* p = nullptr;
        check(cumem_resource_allocate_raw(r, 4096, s, &p), "synchronous allocate");
        check(cumem_resource_deallocate_raw(r, p, 4096, s), "synchronous free");
      }
      // A buffer closed, and one whose last reference goes through a DLPack
      // tensor's deleter (its free runs then).
      cumem_buffer_t* b = nullptr;
      check(cumem_resource_allocate(r, 4096, mine, &b), "buffer");
      check(cumem_buffer_close(b, nullptr), "buffer close");
      cumem_buffer_release(b);
      check(cumem_resource_allocate(r, 4096, mine, &b), "buffer for DLPack");
      DLManagedTensorVersioned* t = nullptr;
      check(cumem_buffer_to_dlpack(b, nullptr, &t), "DLPack export");
      cumem_buffer_release(b);
      if (t) t->deleter(t);
      cumem_resource_release(r);
    }
    // Pools: a device resource made now (its release threshold set), and
    // every pool call, on the device and pinned kinds.
    cumem_resource_t* pools[2] = {nullptr, nullptr};
    check(cumem_device_resource_create(device, nullptr, &pools[0]), "device resource create");
    if (cumem_pinned_resource_create(device, nullptr, &pools[1]) != CUMEM_SUCCESS) pools[1] = nullptr;
    for (cumem_resource_t* p : pools) {
      if (!p) continue;
      cumem_pool_attributes_t attributes = CUMEM_POOL_ATTRIBUTES_INIT;
      check(cumem_resource_pool_get_attributes(p, &attributes), "pool get attributes");
      check(cumem_resource_pool_set_attributes(p, &attributes), "pool set attributes");
      check(cumem_resource_pool_reset_highs(p), "pool reset highs");
      check(cumem_resource_pool_trim(p, 0), "pool trim");
      cumem_bool_t access = CUMEM_FALSE;
      check(cumem_resource_pool_get_access(p, device, &access), "pool get access");
      void* q = nullptr;
      check(cumem_resource_allocate_raw(p, 4096, mine, &q), "pool allocate");
      check(cumem_resource_deallocate_raw(p, q, 4096, mine), "pool free");
    }
    // Copies through pinned memory, waits for streams and events.
    cumem_buffer_t* pinned = nullptr;
    cumem_buffer_t* dev = nullptr;
    if (pools[1]) {
      check(cumem_resource_allocate(pools[1], 4096, mine, &pinned), "pinned buffer");
      check(cumem_resource_allocate(pools[0], 4096, mine, &dev), "device buffer");
      check(cumem_buffer_fill(pinned, 9, 1, mine), "fill");
      check(cumem_buffer_copy_to(pinned, dev, mine), "copy");
      cumem_buffer_release(pinned);
      cumem_buffer_release(dev);
    }
    check(cumem_stream_synchronize(mine), "stream synchronize");
    cumem_bool_t done = CUMEM_FALSE;
    check(cumem_stream_query(mine, &done), "stream query");
    cumem_event_t* e = nullptr;
    check(cumem_event_create(device, nullptr, &e), "event create");
    check(cumem_event_record(e, mine), "event record");
    check(cumem_event_synchronize(e), "event synchronize");
    check(cumem_event_query(e, &done), "event query");
    cumem_event_release(e);
    // Graph memory and a graph of this thread's own (relaxed) capture:
    // attributes, highs, trim, instantiation, launch, destruction.
    cumem_graph_memory_attributes_t ga = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
    check(cumem_graph_memory_resource_get_attributes(graph_memory, &ga), "graph memory attributes");
    check(cumem_graph_memory_resource_reset_highs(graph_memory), "graph memory reset highs");
    check(cumem_graph_memory_resource_trim(graph_memory), "graph memory trim");
    check(cumem_stream_begin_capture(mine, CUMEM_CAPTURE_MODE_RELAXED), "own capture");
    void* g = nullptr;
    check(cumem_resource_allocate_raw(graph_memory, 4096, mine, &g), "graph allocate");
    check(cumem_resource_deallocate_raw(graph_memory, g, 4096, mine), "graph free");
    cumem_graph_t* own = nullptr;
    check(cumem_stream_end_capture_graph(mine, nullptr, &own), "end own capture");
    check(cumem_graph_launch(own, mine), "launch own graph");
    check(cumem_stream_synchronize(mine), "wait for own graph");
    cumem_graph_release(own);
    uint64_t free_bytes = 0, total = 0;
    check(cumem_device_memory_info(device, &free_bytes, &total), "memory info");
    for (cumem_resource_t* p : pools) cumem_resource_release(p);
    cumem_stream_release(mine);
  });
  other.join();
  EXPECT_EQ(failures, "");
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_ACTIVE) << "the capture is still valid";
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(a, out, stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(a, stream));
  cumem_buffer_release(a);
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
  EXPECT_TRUE(all_bytes(out, 0x42));
  cumem_graph_release(graph);
  cumem_buffer_release(out);
}

TEST_F(GraphGpu, TheGraphMemoryResourceRefusesStreamsThatDoNotCaptureAndReportsTheDevice) {
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(graph_memory, 4096, stream, &p),
                     CUMEM_ERROR_INVALID_STATE, "is not capturing");
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(graph_memory, 4096, nullptr, &p),
                     CUMEM_ERROR_INVALID_STATE, "cannot capture");
  // A graph that allocates 8 MiB and keeps them after its launch.
  constexpr size_t big = size_t{8} << 20;
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_THREAD_LOCAL));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(graph_memory, big, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 1, 1, stream));
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_graph_memory_attributes_t a = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_get_attributes(graph_memory, &a));
  EXPECT_GE(a.used_mem_current, big);
  EXPECT_GE(a.reserved_mem_current, a.used_mem_current);
  EXPECT_GE(a.used_mem_high, a.used_mem_current);
  EXPECT_GE(a.reserved_mem_high, a.reserved_mem_current);
  EXPECT_TRUE(all_bytes(b, 1));
  // Freed outside the graph, the graph gone: trim gives the memory back.
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_graph_release(graph);
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_trim(graph_memory));
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_get_attributes(graph_memory, &a));
  EXPECT_EQ(a.used_mem_current, 0u);
  EXPECT_EQ(a.reserved_mem_current, 0u) << "no graph holds graph memory any more";
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_reset_highs(graph_memory));
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_get_attributes(graph_memory, &a));
  EXPECT_EQ(a.used_mem_high, a.used_mem_current);
}

TEST_F(GraphGpu, WaitingForACapturingStreamIsRefusedAndTheCaptureStaysValid) {
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL));
  CUMEM_EXPECT_ERROR(cumem_stream_synchronize(stream), CUMEM_ERROR_INVALID_STATE, "capturing");
  cumem_bool_t done = CUMEM_FALSE;
  CUMEM_EXPECT_ERROR(cumem_stream_query(stream, &done), CUMEM_ERROR_INVALID_STATE, "capturing");
  EXPECT_EQ(info_of(stream).status, CUMEM_CAPTURE_STATUS_ACTIVE);
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
  cumem_graph_release(graph);
}

// The same through the C++ facade: graph memory, capture info, a Graph that
// knows its capture, launches, and the errors as cumem::Error.
TEST_F(GraphGpu, TheFacadeCapturesAndLaunches) {
  const cumem::Device dev = cumem::Device::get(0);
  const cumem::Stream s = cumem::Stream::create(dev);
  const cumem::Resource gm = cumem::Resource::graph_memory(dev);
  const cumem::Resource dr = cumem::Resource::device(dev);
  cumem::Buffer out = dr.allocate(kBytes, s);
  try {
    (void)gm.allocate(64, s);
    ADD_FAILURE() << "allocated graph memory outside a capture";
  } catch (const cumem::Error& e) {
    EXPECT_EQ(e.status(), CUMEM_ERROR_INVALID_STATE) << e.what();
  }
  s.begin_capture(CUMEM_CAPTURE_MODE_GLOBAL);
  const cumem_capture_info_t info = s.capture_info();
  EXPECT_EQ(info.status, CUMEM_CAPTURE_STATUS_ACTIVE);
  {
    cumem::Buffer scratch = gm.allocate(kBytes, s);
    scratch.fill_bytes(0x6B, s);
    scratch.copy_to(out, s);
    scratch.close(s);
  }
  cumem_graph_options_t o = cumem::graph_options();
  o.auto_free_on_launch = CUMEM_TRUE;
  const cumem::Graph g = s.end_capture_graph(o);
  EXPECT_EQ(g.capture_id(), info.id);
  EXPECT_NE(g.native(), nullptr);
  g.upload(s);
  for (int i = 0; i < 10; ++i) g.launch(s);
  s.synchronize();  // all_bytes reads on the fixture's stream
  EXPECT_TRUE(all_bytes(out.get(), 0x6B));
  const cumem_graph_memory_attributes_t a = gm.graph_memory_attributes();
  EXPECT_GE(a.used_mem_high, a.used_mem_current);
  gm.graph_memory_reset_highs();
  gm.graph_memory_trim();
}

}  // namespace
