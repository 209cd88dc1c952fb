// The caching adaptor on a GPU, beyond the conformance suite: a capture gets
// its private pool (no block eager work used goes into the graph), a free
// of outside memory on a capturing stream is refused clearly and leaves the
// capture valid, capture arguments are checked, and trim gives the pool's
// memory back.
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

TEST_F(CachingGpu, ACaptureGetsAPrivatePoolAndOutsideFreesAreRefused) {
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
  void* cached = nullptr;  // a block eager work used, cached on the stream
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &cached));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, cached, 4096, stream));
  CUMEM_EXPECT_ERROR(cumem_stream_begin_capture(stream, static_cast<cumem_capture_mode_t>(7)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "not a cumem_capture_mode_t");
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_RELAXED));
  cumem_capture_info_t info = CUMEM_CAPTURE_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_stream_get_capture_info(stream, &info));
  void* during = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &during));
  EXPECT_NE(during, cached) << "a cached block eager work used went into the graph";
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(cache, before, 4096, stream),
                     CUMEM_ERROR_INVALID_STATE, "allocated outside that capture");
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 8192u) << "the refused free counts nothing";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, during, 4096, stream));
  void* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture(stream, &graph));
  EXPECT_NE(graph, nullptr) << "the capture was still valid";
  if (graph) destroy_graph(graph);
  cumem_caching_statistics_t c = CUMEM_CACHING_STATISTICS_INIT;
  CUMEM_ASSERT_OK(cumem_caching_resource_get_statistics(cache, &c));
  EXPECT_EQ(c.capture_pools, 1u);
  // After the capture the graph's block stays its own until released.
  void* after = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &after));
  EXPECT_NE(after, during);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, after, 4096, stream));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, before, 4096, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_caching_resource_release_capture_pool(cache, info.id));
  CUMEM_ASSERT_OK(cumem_caching_resource_get_statistics(cache, &c));
  EXPECT_EQ(c.capture_pools, 0u);
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
