// The framework entry points' configuration on a GPU (CUMEM_ALLOC_CONF's
// keys through cumem_framework_configure): a pool of the framework's own
// with its release threshold, the expandable cache mapping pages, the limit
// on top, managed memory; frees after a change go to the resource that
// allocated. The host suite tests the parser and the rest on a fake driver.
#include <cstdint>

#include "gpu_fixture.hpp"

namespace {

class FrameworkConfigureGpu : public GpuTest {
 protected:
  void TearDown() override {
    EXPECT_EQ(cumem_framework_configure(""), CUMEM_SUCCESS) << cumem_last_error_message();
    GpuTest::TearDown();
  }
  cumem_resource_t* framework_resource() {
    cumem_resource_t* r = nullptr;
    EXPECT_EQ(cumem_framework_get_resource(0, &r), CUMEM_SUCCESS) << cumem_last_error_message();
    return r;
  }
  static cumem_resource_properties_t properties(cumem_resource_t* r) {
    cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
    EXPECT_EQ(cumem_resource_get_properties(r, &p), CUMEM_SUCCESS);
    return p;
  }
};

TEST_F(FrameworkConfigureGpu, AReleaseThresholdIsAPoolOfTheFrameworksOwn) {
  CUMEM_ASSERT_OK(cumem_framework_configure("release_threshold:1GiB"));
  cumem_resource_t* r = framework_resource();
  cumem_resource_t* memory = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get_memory_resource(device, &memory));
  EXPECT_NE(r, memory) << "not the device's default pool";
  EXPECT_TRUE(properties(r).is_pool);
  cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_pool_get_attributes(r, &a));
  EXPECT_EQ(a.release_threshold, 1ull << 30);
  void* p = cumem_torch_alloc(8 << 20, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(r).bytes_in_use, 8u << 20);
  // Configured back to the defaults, the free still reaches the own pool.
  CUMEM_ASSERT_OK(cumem_framework_configure(""));
  cumem_torch_free(p, 8 << 20, 0, nullptr);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 0u);
  cumem_resource_t* d = framework_resource();
  EXPECT_EQ(properties(d).kind, CUMEM_RESOURCE_CACHING) << "the defaults: the expandable cache";
  cumem_caching_statistics_t cs = CUMEM_CACHING_STATISTICS_INIT;
  EXPECT_EQ(cumem_caching_resource_get_statistics(d, &cs), CUMEM_SUCCESS);
  CUMEM_ASSERT_OK(cumem_framework_configure("kind:device"));
  cumem_resource_t* e = framework_resource();
  EXPECT_EQ(e, memory) << "kind:device: the device's memory resource itself";
  CUMEM_ASSERT_OK(cumem_framework_configure(""));
  for (cumem_resource_t* x : {r, memory, d, e}) cumem_resource_release(x);
}

TEST_F(FrameworkConfigureGpu, ExpandableCacheUnderALimit) {
  CUMEM_ASSERT_OK(cumem_framework_configure("kind:caching,expandable:true,limit:1GiB"));
  cumem_resource_t* r = framework_resource();
  EXPECT_EQ(properties(r).kind, CUMEM_RESOURCE_LIMIT);
  void* p = cumem_torch_alloc(64 << 20, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_EQ(cumem_torch_alloc((1ull << 30) + 1, 0, nullptr), nullptr) << "above the limit";
  cumem_torch_free(p, 64 << 20, 0, nullptr);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 0u);
  cumem_resource_release(r);
}

TEST_F(FrameworkConfigureGpu, ManagedMemory) {
  CUMEM_ASSERT_OK(cumem_framework_configure("managed:true"));
  cumem_resource_t* r = framework_resource();
  EXPECT_EQ(properties(r).kind, CUMEM_RESOURCE_MANAGED);
  void* p = cumem_torch_alloc(1 << 20, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  cumem_torch_free(p, 1 << 20, 0, nullptr);
  cumem_resource_release(r);
}

}  // namespace
