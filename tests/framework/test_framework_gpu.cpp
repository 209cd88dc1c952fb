// The framework entry points on a GPU: PyTorch's and CuPy's signatures,
// per-device resources, frees on another stream, statistics; and the
// native-stream raw pair.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_fixture.hpp"
#include "spin_kernel.hpp"

namespace {

class FrameworkGpu : public GpuTest {
 protected:
  void SetUp() override {
    setenv("CUMEM_FRAMEWORK_QUIET", "1", 1);
    GpuTest::SetUp();
    if (IsSkipped()) return;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s1));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s2));
    CUMEM_ASSERT_OK(cumem_stream_native(s1, &n1));
    CUMEM_ASSERT_OK(cumem_stream_native(s2, &n2));
  }
  void TearDown() override {
    if (device) {
      cumem_framework_set_resource(0, nullptr);
      cumem_device_synchronize(device);
    }
    cumem_stream_release(s1);
    cumem_stream_release(s2);
    GpuTest::TearDown();
  }
  cumem_stream_t *s1 = nullptr, *s2 = nullptr;
  void *n1 = nullptr, *n2 = nullptr;
};

TEST_F(FrameworkGpu, TorchAllocAndFreeCountInTheDevicesResource) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &r));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.device_id, 0);
  EXPECT_EQ(p.device_accessible, CUMEM_TRUE);
  const cumem_resource_statistics_t before = statistics_of(r);
  void* a = cumem_torch_alloc(1 << 20, 0, n1);
  ASSERT_NE(a, nullptr) << cumem_last_error_message();
  void* b = cumem_torch_alloc(4096, 0, nullptr);  // the legacy default stream
  ASSERT_NE(b, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(r).live_allocations, before.live_allocations + 2);
  EXPECT_EQ(statistics_of(r).bytes_in_use, before.bytes_in_use + (1 << 20) + 4096);
  // The memory is usable on its stream.
  cumem_buffer_t* view = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(a, 1 << 20, nullptr, nullptr, &view));
  CUMEM_ASSERT_OK(cumem_buffer_fill(view, 0x5A, 1, s1));
  cumem_buffer_release(view);
  // A wrong size is refused and frees nothing.
  cumem_torch_free(a, 12, 0, n1);
  EXPECT_NE(std::string(cumem_last_error_message()).find("allocated with 1048576 bytes"),
            std::string::npos)
      << cumem_last_error_message();
  EXPECT_EQ(statistics_of(r).live_allocations, before.live_allocations + 2);
  // A free on another stream than the allocation's.
  cumem_torch_free(a, 1 << 20, 0, n2);
  cumem_torch_free(b, 4096, 0, n1);
  EXPECT_EQ(statistics_of(r).live_allocations, before.live_allocations);
  EXPECT_EQ(statistics_of(r).bytes_in_use, before.bytes_in_use);
  // A second free of the same pointer is refused.
  cumem_torch_free(a, 1 << 20, 0, n2);
  EXPECT_NE(std::string(cumem_last_error_message()).find("freed already"), std::string::npos);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s1));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s2));
  cumem_resource_release(r);
}

// PyTorch frees on the allocating stream, but a caller may name another:
// the free then waits for the allocating stream's work. Over the caching
// adaptor, which hands a block freed on stream 2 out again at once on
// stream 2, a kernel still writing the memory on stream 1 would otherwise
// land its late writes on the next user's data.
TEST_F(FrameworkGpu, AFreeOnAnotherStreamWaitsForTheAllocatingStreamsWork) {
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t loaded = load_spin_kernel(device, &kernel);
  if (loaded == CUMEM_ERROR_NO_COMPILER)
    GTEST_SKIP() << "NVRTC is missing: " << cumem_last_error_message();
  CUMEM_ASSERT_OK(loaded);
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, cache));
  const size_t size = size_t{1} << 20;
  const uint32_t x = 0xBAD0BAD0u, y = 0x600DF00Du;

  void* a = cumem_torch_alloc(size, 0, n1);
  ASSERT_NE(a, nullptr) << cumem_last_error_message();
  CUMEM_ASSERT_OK(launch_spin(kernel, a, size, x, 100 * 1000 * 1000, s1));
  cumem_bool_t done = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_stream_query(s1, &done));
  EXPECT_EQ(done, CUMEM_FALSE) << "the kernel must still run for this test to prove anything";
  cumem_torch_free(a, size, 0, n2);  // on stream 2, while stream 1 still writes
  void* b = cumem_torch_alloc(size, 0, n2);
  ASSERT_NE(b, nullptr) << cumem_last_error_message();
  EXPECT_EQ(b, a) << "the cache hands the block out again on stream 2";
  cumem_buffer_t* view = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(b, size, nullptr, nullptr, &view));
  CUMEM_ASSERT_OK(cumem_buffer_fill(view, y, 4, s2));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s2));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s1));
  std::vector<uint32_t> words(size / 4);
  cumem_buffer_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(words.data(), size, nullptr, nullptr, &host));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(view, host, s2));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s2));
  cumem_buffer_release(host);
  size_t late = 0;
  for (uint32_t w : words) late += w != y;
  EXPECT_EQ(late, 0u) << "words of the kernel's late writes on stream 2's data";
  cumem_buffer_release(view);
  cumem_torch_free(b, size, 0, n2);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s2));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_release(cache);
  cumem_resource_release(pool);
  cumem_kernel_release(kernel);
}

TEST_F(FrameworkGpu, ChosenResourceServesAndKeepsItsAllocations) {
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_resource_t* caching = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &caching));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, caching));
  cumem_resource_t* got = nullptr;
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &got));
  EXPECT_EQ(got, caching);
  cumem_resource_release(got);
  void* a = cumem_torch_alloc(8192, 0, n1);
  ASSERT_NE(a, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(caching).live_allocations, 1u);
  // Switching back to the default: `a` still goes back to the caching resource.
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_release(caching);  // the record keeps it alive
  EXPECT_EQ(statistics_of(pool).live_allocations, 1u);
  cumem_torch_free(a, 8192, 0, n1);
  // That was the caching resource's last reference: it went, giving its
  // cached block back to the pool.
  EXPECT_EQ(statistics_of(pool).live_allocations, 0u);
  // CuPy: no stream; param names a resource, or NULL for the device's.
  void* c = cumem_cupy_malloc(pool, 512, 0);
  ASSERT_NE(c, nullptr) << cumem_last_error_message();
  void* d = cumem_cupy_malloc(nullptr, 512, 0);
  ASSERT_NE(d, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(pool).live_allocations, 1u);  // d came from the default resource
  cumem_cupy_free(pool, c, 0);
  cumem_cupy_free(nullptr, d, 0);
  EXPECT_EQ(statistics_of(pool).live_allocations, 0u);
  // A resource of host memory, or another device's, is refused.
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  CUMEM_EXPECT_ERROR(cumem_framework_set_resource(0, host), CUMEM_ERROR_INVALID_ARGUMENT,
                     "device-accessible");
  if (device_count > 1)
    CUMEM_EXPECT_ERROR(cumem_framework_set_resource(1, pool), CUMEM_ERROR_WRONG_DEVICE,
                       "serves device 0");
  cumem_resource_release(host);
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  cumem_resource_release(pool);
}

TEST_F(FrameworkGpu, NativeStreamRawPair) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &r));
  void* special[] = {nullptr, reinterpret_cast<void*>(uintptr_t{1}),
                     reinterpret_cast<void*>(uintptr_t{2}), n1, n2};
  for (void* s : special) {
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_native(r, 1 << 16, s, &p));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(statistics_of(r).live_allocations, 1u);
    CUMEM_ASSERT_OK(cumem_resource_deallocate_native(r, p, 1 << 16, s));
  }
  // Many streams: more than the per-thread cache holds.
  std::vector<cumem_stream_t*> streams(40);
  for (auto*& s : streams) {
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s));
    void* n = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_native(s, &n));
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_native(r, 256, n, &p));
    CUMEM_ASSERT_OK(cumem_resource_deallocate_native(r, p, 256, n));
  }
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  for (auto* s : streams) cumem_stream_release(s);
  EXPECT_EQ(statistics_of(r).live_allocations, 0u);
  EXPECT_EQ(statistics_of(r).total_allocations, 45u);
  // The host resource with a device's native stream (CUDA 12.8+ drivers).
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  void* p = nullptr;
  const cumem_status_t s = cumem_resource_allocate_native(host, 64, n1, &p);
  if (s == CUMEM_SUCCESS) {
    CUMEM_ASSERT_OK(cumem_resource_deallocate_native(host, p, 64, n1));
  } else {
    EXPECT_EQ(s, CUMEM_ERROR_NOT_SUPPORTED) << cumem_last_error_message();
  }
  cumem_resource_release(host);
  cumem_resource_release(r);
}

}  // namespace
