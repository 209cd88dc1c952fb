// The caching adaptor on a GPU, beyond the conformance suite: work captured
// into a CUDA graph (through cumem_stream_begin_capture) is refused clearly
// (a cached block would be reused before the graph runs), the capture ends
// cleanly after it, and capture arguments are checked.
#include <dlfcn.h>

#include "gpu_fixture.hpp"

namespace {

// cuGraphDestroy, from the driver libcumem itself loads.
using DestroyGraph = int (*)(void*);
DestroyGraph load_graph_destroy() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib ? reinterpret_cast<DestroyGraph>(dlsym(lib, "cuGraphDestroy")) : nullptr;
}

class CachingGpu : public GpuTest {};

TEST_F(CachingGpu, AllocatingOrFreeingOnACapturingStreamIsRefused) {
  const DestroyGraph destroy_graph = load_graph_destroy();
  ASSERT_NE(destroy_graph, nullptr) << dlerror();
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));

  void* before = nullptr;  // allocated before the capture
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &before));
  CUMEM_EXPECT_ERROR(cumem_stream_begin_capture(stream, static_cast<cumem_capture_mode_t>(7)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "not a cumem_capture_mode_t");
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_RELAXED));
  void* during = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(cache, 4096, stream, &during),
                     CUMEM_ERROR_INVALID_ARGUMENT, "capturing a CUDA graph");
  EXPECT_EQ(during, nullptr);
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(cache, before, 4096, stream),
                     CUMEM_ERROR_INVALID_ARGUMENT, "nothing was freed");
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 4096u) << "the refused free counts nothing";
  void* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture(stream, &graph));
  EXPECT_NE(graph, nullptr) << "the capture was still valid";
  if (graph) destroy_graph(graph);
  CUMEM_EXPECT_ERROR(cumem_stream_end_capture(stream, &graph), CUMEM_ERROR_DRIVER,
                     "cuStreamEndCapture");
  EXPECT_EQ(graph, nullptr);

  // After the capture the same calls work.
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, before, 4096, stream));
  void* after = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &after));
  EXPECT_EQ(after, before) << "the block freed after the capture is reused";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, after, 4096, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  // The legacy default stream cannot capture: the driver's error.
  cumem_stream_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_legacy_default(device, &legacy));
  CUMEM_EXPECT_ERROR(cumem_stream_begin_capture(legacy, CUMEM_CAPTURE_MODE_RELAXED),
                     CUMEM_ERROR_DRIVER, "cuStreamBeginCapture");
  cumem_stream_release(legacy);
  cumem_stream_release(stream);
  EXPECT_EQ(cumem_resource_release(cache), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_resource_release(pool), CUMEM_SUCCESS);
}

}  // namespace

namespace {

// Issue 17, item 5: trim(0) gives the memory back to the system, so a new
// pool under the cache reserves nothing afterwards (the cache's frees are
// stream-ordered: the trim must come after them).
TEST_F(CachingGpu, TrimGivesThePoolsMemoryBackToTheSystem) {
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &po, &pool));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  for (int round = 0; round < 3; ++round) {
    void* p[10] = {};
    for (void*& x : p) CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 64 << 10, stream, &x));
    for (void* x : p) CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, x, 64 << 10, stream));
    cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
    CUMEM_ASSERT_OK(cumem_resource_pool_get_attributes(pool, &a));
    EXPECT_GT(a.reserved_mem_current, 0u);
    CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
    CUMEM_ASSERT_OK(cumem_resource_pool_get_attributes(pool, &a));
    EXPECT_EQ(a.reserved_mem_current, 0u) << "round " << round << ": the pool kept its memory";
    EXPECT_EQ(a.used_mem_current, 0u);
  }
  cumem_stream_release(stream);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
}

// The trim passes through adaptors between the cache and the pool (it
// reached only a pool right under the cache before).
TEST_F(CachingGpu, TrimReachesThePoolThroughALimitAdaptor) {
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &po, &pool));
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(pool, uint64_t{1} << 30, &limit));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(limit, &cache));
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  void* p[4] = {};
  for (void*& x : p) CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 3 << 20, stream, &x));
  for (void* x : p) CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, x, 3 << 20, stream));
  cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_pool_get_attributes(pool, &a));
  EXPECT_GT(a.reserved_mem_current, 0u);
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  CUMEM_ASSERT_OK(cumem_resource_pool_get_attributes(pool, &a));
  EXPECT_EQ(a.reserved_mem_current, 0u) << "the pool under the limit adaptor kept its memory";
  EXPECT_EQ(a.used_mem_current, 0u);
  cumem_stream_release(stream);
  cumem_resource_release(cache);
  cumem_resource_release(limit);
  cumem_resource_release(pool);
}

}  // namespace
