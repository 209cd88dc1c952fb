// The caching adaptor on a GPU, beyond the conformance suite: work captured
// into a CUDA graph is refused clearly (a cached block would be reused
// before the graph runs), and the stream capture ends cleanly after it.
#include <dlfcn.h>

#include "gpu_fixture.hpp"

namespace {

// The three driver entry points the test drives capture with, from the
// driver libcumem itself loads.
struct Capture {
  using Begin = int (*)(void*, int);
  using End = int (*)(void*, void**);
  using DestroyGraph = int (*)(void*);
  Begin begin = nullptr;
  End end = nullptr;
  DestroyGraph destroy_graph = nullptr;

  bool load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    begin = reinterpret_cast<Begin>(dlsym(lib, "cuStreamBeginCapture_v2"));
    end = reinterpret_cast<End>(dlsym(lib, "cuStreamEndCapture"));
    destroy_graph = reinterpret_cast<DestroyGraph>(dlsym(lib, "cuGraphDestroy"));
    return begin && end && destroy_graph;
  }
};

class CachingGpu : public GpuTest {};

TEST_F(CachingGpu, AllocatingOrFreeingOnACapturingStreamIsRefused) {
  Capture capture;
  ASSERT_TRUE(capture.load()) << dlerror();
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));

  void* before = nullptr;  // allocated before the capture
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &before));
  ASSERT_EQ(capture.begin(native, /*CU_STREAM_CAPTURE_MODE_RELAXED*/ 2), 0);
  void* during = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(cache, 4096, stream, &during),
                     CUMEM_ERROR_INVALID_ARGUMENT, "capturing a CUDA graph");
  EXPECT_EQ(during, nullptr);
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(cache, before, 4096, stream),
                     CUMEM_ERROR_INVALID_ARGUMENT, "nothing was freed");
  EXPECT_EQ(statistics_of(cache).bytes_in_use, 4096u) << "the refused free counts nothing";
  void* graph = nullptr;
  ASSERT_EQ(capture.end(native, &graph), 0) << "the capture is still valid";
  if (graph) capture.destroy_graph(graph);

  // After the capture the same calls work.
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, before, 4096, stream));
  void* after = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 4096, stream, &after));
  EXPECT_EQ(after, before) << "the block freed after the capture is reused";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, after, 4096, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_stream_release(stream);
  EXPECT_EQ(cumem_resource_release(cache), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_resource_release(pool), CUMEM_SUCCESS);
}

}  // namespace
