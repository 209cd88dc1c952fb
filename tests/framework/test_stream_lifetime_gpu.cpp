// Streams recorded for later use, and frees whatever context the calling
// thread has current. What records a stream (a framework allocation, a
// cached block, a buffer's deallocation stream, a wrapper) keeps a stream
// libcumem created alive; a native handle the driver hands out again after
// the stream it named was destroyed is never taken for the old stream; and a
// free makes its memory's context current itself. The cases that crashed
// run in a child process (this program again, --lifetime-child CASE, so
// the child starts CUDA afresh), so that a crash is a failed test, not a
// dead suite.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu_fixture.hpp"
#include "self_child.hpp"
#include "spin_kernel.hpp"

namespace {

// The few driver calls these tests make themselves, from the driver
// libcumem loads (no link to libcuda).
struct Driver {
  int (*ctx_get_current)(void**) = nullptr;
  int (*ctx_set_current)(void*) = nullptr;
  int (*ctx_create)(void**, void*, unsigned, int) = nullptr;  // cuCtxCreate_v4
  int (*ctx_destroy)(void*) = nullptr;
  int (*ctx_pop)(void**) = nullptr;
  bool load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    ctx_get_current = reinterpret_cast<decltype(ctx_get_current)>(dlsym(lib, "cuCtxGetCurrent"));
    ctx_set_current = reinterpret_cast<decltype(ctx_set_current)>(dlsym(lib, "cuCtxSetCurrent"));
    ctx_create = reinterpret_cast<decltype(ctx_create)>(dlsym(lib, "cuCtxCreate_v4"));
    ctx_destroy = reinterpret_cast<decltype(ctx_destroy)>(dlsym(lib, "cuCtxDestroy_v2"));
    ctx_pop = reinterpret_cast<decltype(ctx_pop)>(dlsym(lib, "cuCtxPopCurrent_v2"));
    return ctx_get_current && ctx_set_current && ctx_create && ctx_destroy && ctx_pop;
  }
};

// In a child: a failed check prints why and exits with `code`.
#define LIVE_CHECK(expr, code)                                                        \
  do {                                                                                \
    const cumem_status_t live_status_ = (expr);                                       \
    if (live_status_ != CUMEM_SUCCESS) {                                              \
      std::fprintf(stderr, "%s -> %s: %s\n", #expr, cumem_status_string(live_status_), \
                   cumem_last_error_message());                                       \
      std::exit(code);                                                                \
    }                                                                                 \
  } while (0)

class StreamLifetimeGpu : public GpuTest {
 protected:
  void SetUp() override {
    setenv("CUMEM_FRAMEWORK_QUIET", "1", 1);  // the children inherit it
    GpuTest::SetUp();
  }
  void TearDown() override {
    if (device) cumem_framework_set_resource(0, nullptr);
    GpuTest::TearDown();
  }
};

// A kernel still writes stream A's allocation when A's handle goes and the
// memory is freed on stream B; the next user of the memory on B must never
// see the late writes. Exit codes name the failing step.
void free_after_release(cumem_device_t* device, bool caching) {
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t loaded = load_spin_kernel(device, &kernel);
  if (loaded == CUMEM_ERROR_NO_COMPILER) std::exit(0);  // nothing to prove without kernels
  LIVE_CHECK(loaded, 2);
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  cumem_resource_t* pool = nullptr;
  LIVE_CHECK(cumem_device_resource_create(device, &po, &pool), 3);
  cumem_resource_t* r = pool;
  if (caching) LIVE_CHECK(cumem_caching_resource_create(pool, &r), 3);
  LIVE_CHECK(cumem_framework_set_resource(0, r), 4);
  cumem_stream_t *sa = nullptr, *sb = nullptr;
  LIVE_CHECK(cumem_stream_create(device, nullptr, &sa), 5);
  LIVE_CHECK(cumem_stream_create(device, nullptr, &sb), 5);
  void *na = nullptr, *nb = nullptr;
  LIVE_CHECK(cumem_stream_native(sa, &na), 5);
  LIVE_CHECK(cumem_stream_native(sb, &nb), 5);
  const size_t size = size_t{1} << 20;
  const uint32_t x = 0xBAD0BAD0u, y = 0x600DF00Du;
  void* a = cumem_torch_alloc(size, 0, na);
  if (!a) std::exit(6);
  LIVE_CHECK(launch_spin(kernel, a, size, x, 100 * 1000 * 1000, sa), 7);
  LIVE_CHECK(cumem_stream_release(sa), 8);  // the user's last handle to stream A
  cumem_torch_free(a, size, 0, nb);         // crashed here: A's CUstream was destroyed
  cumem_resource_statistics_t st = CUMEM_RESOURCE_STATISTICS_INIT;
  LIVE_CHECK(cumem_resource_get_statistics(r, &st), 8);
  if (st.live_allocations != 0) {
    std::fprintf(stderr, "the free failed: %s\n", cumem_last_error_message());
    std::exit(8);
  }
  void* b = cumem_torch_alloc(size, 0, nb);
  if (!b) std::exit(9);
  cumem_buffer_t* view = nullptr;
  LIVE_CHECK(cumem_buffer_wrap(b, size, nullptr, nullptr, &view), 10);
  LIVE_CHECK(cumem_buffer_fill(view, y, 4, sb), 10);
  LIVE_CHECK(cumem_device_synchronize(device), 11);
  std::vector<uint32_t> words(size / 4);
  cumem_buffer_t* host = nullptr;
  LIVE_CHECK(cumem_buffer_wrap(words.data(), size, nullptr, nullptr, &host), 12);
  LIVE_CHECK(cumem_buffer_copy_to(view, host, sb), 12);
  LIVE_CHECK(cumem_stream_synchronize(sb), 12);
  for (uint32_t w : words)
    if (w != y) std::exit(13);  // the kernel's late writes landed on B's data
  cumem_buffer_release(host);
  cumem_buffer_release(view);
  cumem_torch_free(b, size, 0, nb);
  LIVE_CHECK(cumem_framework_set_resource(0, nullptr), 14);
  LIVE_CHECK(cumem_stream_synchronize(sb), 14);
  cumem_stream_release(sb);
  if (caching) cumem_resource_release(r);
  cumem_resource_release(pool);
  cumem_kernel_release(kernel);
  std::exit(0);
}

// Runs `name` (see main) in a child: it exits 0, or with the code of the
// step that failed (128 + the signal where it crashed).
void expect_child_passes(const char* name) {
  const pid_t pid = start_self({"--lifetime-child", name});
  ASSERT_GT(pid, 0) << "fork failed";
  EXPECT_EQ(wait_exit_code(pid), 0) << "the child " << name << " failed (its exit code names the step)";
}

TEST_F(StreamLifetimeGpu, TorchFreeAfterTheAllocatingStreamWasReleased) {
  expect_child_passes("free_after_release");
}

TEST_F(StreamLifetimeGpu, TorchFreeAfterTheAllocatingStreamWasReleasedOnTheCache) {
  expect_child_passes("free_after_release_on_the_cache");
}

// The same through the raw native entry points and a buffer's
// deallocation stream: each keeps the stream it was given alive.
void native_and_buffer_after_release(cumem_device_t* device) {
  cumem_resource_t* pool = nullptr;
  LIVE_CHECK(cumem_device_resource_create(device, nullptr, &pool), 2);
  cumem_resource_t* cache = nullptr;
  LIVE_CHECK(cumem_caching_resource_create(pool, &cache), 2);
  for (int round = 0; round < 50; ++round) {
    cumem_stream_t* s = nullptr;
    LIVE_CHECK(cumem_stream_create(device, nullptr, &s), 3);
    void* n = nullptr;
    LIVE_CHECK(cumem_stream_native(s, &n), 3);
    void* p = nullptr;
    LIVE_CHECK(cumem_resource_allocate_native(cache, 4096, n, &p), 4);
    cumem_buffer_t* b = nullptr;
    LIVE_CHECK(cumem_resource_allocate(pool, 8192, s, &b), 5);
    // Freed on the stream into the cache: the cached block records it.
    LIVE_CHECK(cumem_resource_deallocate_native(cache, p, 4096, n), 6);
    LIVE_CHECK(cumem_stream_release(s), 7);
    // The buffer frees on its (released) deallocation stream; the cached
    // block is handed out on another stream, ordered after the released one.
    LIVE_CHECK(cumem_buffer_close(b, nullptr), 8);
    cumem_buffer_release(b);
    cumem_stream_t* other = nullptr;
    LIVE_CHECK(cumem_stream_create(device, nullptr, &other), 9);
    void* q = nullptr;
    LIVE_CHECK(cumem_resource_allocate_raw(cache, 4096, other, &q), 10);
    LIVE_CHECK(cumem_resource_deallocate_raw(cache, q, 4096, other), 10);
    LIVE_CHECK(cumem_stream_synchronize(other), 11);
    cumem_stream_release(other);
  }
  LIVE_CHECK(cumem_caching_resource_release_cached(cache), 12);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
  std::exit(0);
}

TEST_F(StreamLifetimeGpu, CachedBlocksAndBuffersKeepTheirStreamsAlive) {
  expect_child_passes("native_and_buffer_after_release");
}

// A wrapper of a stream libcumem created keeps it alive: the wrap stays
// usable after the creating handle is released.
TEST_F(StreamLifetimeGpu, AWrapperOfALibcumemStreamKeepsItAlive) {
  cumem_stream_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s));
  void* n = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(s, &n));
  cumem_stream_t* w = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_wrap(device, n, &w));
  CUMEM_ASSERT_OK(cumem_stream_release(s));
  cumem_bool_t done = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_stream_query(w, &done));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(w));
  EXPECT_EQ(done, CUMEM_TRUE);
  CUMEM_ASSERT_OK(cumem_stream_release(w));
}

// The driver may give a new stream the handle of one destroyed before it.
// Native handles are cached per thread: after many streams come and go, each
// native handle in use must reach its own, live stream.
TEST_F(StreamLifetimeGpu, ANativeHandleReusedByTheDriverNamesTheNewStream) {
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  std::vector<void*> seen;
  int reused = 0;
  for (int round = 0; round < 200; ++round) {
    cumem_stream_t* s = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s));
    void* n = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_native(s, &n));
    reused += std::find(seen.begin(), seen.end(), n) != seen.end();
    seen.push_back(n);
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_native(cache, 512, n, &p));
    CUMEM_ASSERT_OK(cumem_resource_deallocate_native(cache, p, 512, n));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(s));
    CUMEM_ASSERT_OK(cumem_stream_release(s));
  }
  // The cache still holds blocks freed on the streams it knew; giving them
  // back must touch no destroyed stream.
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_EQ(statistics_of(cache).live_allocations, 0u);
  std::printf("the driver gave %d of 200 new streams a handle seen before\n", reused);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
}

// Item 4 of issue 17: a free runs its driver calls in its memory's context,
// whatever the calling thread has current (nothing, or another library's
// context), and leaves the thread's context as it found it.
TEST_F(StreamLifetimeGpu, AFreeMakesItsOwnContextCurrentAndRestoresTheCallers) {
  Driver drv;
  if (!drv.load()) GTEST_SKIP() << "cannot load the driver's context calls: " << dlerror();
  cumem_resource_t* kinds[4] = {};
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &kinds[0]));
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &kinds[1]));
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &kinds[2]));
  CUMEM_ASSERT_OK(cumem_caching_resource_create(kinds[0], &kinds[3]));
  for (cumem_resource_t* r : kinds) {
    cumem_buffer_t* b[3] = {};
    for (auto*& x : b) CUMEM_ASSERT_OK(cumem_resource_allocate(r, 1 << 16, nullptr, &x));
    // A thread with no current context closes one buffer and releases another.
    std::thread bare([&] {
      void* ctx = reinterpret_cast<void*>(1);
      drv.ctx_set_current(nullptr);
      EXPECT_EQ(cumem_buffer_close(b[0], nullptr), CUMEM_SUCCESS) << cumem_last_error_message();
      EXPECT_EQ(cumem_buffer_release(b[1]), CUMEM_SUCCESS) << cumem_last_error_message();
      drv.ctx_get_current(&ctx);
      EXPECT_EQ(ctx, nullptr) << "the thread's (empty) context was not restored";
    });
    bare.join();
    // Another context current (as another library may leave it).
    void* mine = nullptr;
    ASSERT_EQ(drv.ctx_create(&mine, nullptr, 0, 0), 0);
    EXPECT_EQ(cumem_buffer_close(b[2], nullptr), CUMEM_SUCCESS) << cumem_last_error_message();
    void* now = nullptr;
    drv.ctx_get_current(&now);
    EXPECT_EQ(now, mine) << "the caller's context was not restored";
    void* popped = nullptr;
    drv.ctx_pop(&popped);
    drv.ctx_destroy(mine);
    cumem_buffer_release(b[0]);
    cumem_buffer_release(b[2]);
    EXPECT_EQ(statistics_of(r).live_allocations, 0u);
  }
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  for (int i = 3; i >= 0; --i) cumem_resource_release(kinds[i]);
}

}  // namespace

// --lifetime-child CASE: one of the cases above, in a process of its own
// (each ends the process: 0 when every check held).
int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--lifetime-child") == 0) {
    cumem_device_t* device = nullptr;
    LIVE_CHECK(cumem_device_get(0, &device), 1);
    const std::string name = argv[2];
    if (name == "free_after_release") free_after_release(device, false);
    if (name == "free_after_release_on_the_cache") free_after_release(device, true);
    if (name == "native_and_buffer_after_release") native_and_buffer_after_release(device);
    std::fprintf(stderr, "no child case %s\n", argv[2]);
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
