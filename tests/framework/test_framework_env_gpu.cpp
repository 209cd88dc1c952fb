// CUMEM_FRAMEWORK_RESOURCE, which libcumem reads once (at the first choice
// of a framework resource): each test runs in a process of its own, started
// by Meson with the variable set (tests/framework/meson.build), so that the
// value is the one read.
#include <cstdlib>
#include <string>

#include "gpu_fixture.hpp"

namespace {

class FrameworkEnvGpu : public GpuTest {
 protected:
  void SetUp() override {
    setenv("CUMEM_FRAMEWORK_QUIET", "1", 1);
    GpuTest::SetUp();
    if (IsSkipped()) return;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  }
  void TearDown() override {
    if (device) cumem_device_synchronize(device);
    cumem_stream_release(stream);
    GpuTest::TearDown();
  }
  // The value Meson set, checked so that a run without it fails loudly.
  void expect_env(const char* value) {
    const char* v = std::getenv("CUMEM_FRAMEWORK_RESOURCE");
    ASSERT_NE(v, nullptr) << "run through meson test (it sets CUMEM_FRAMEWORK_RESOURCE)";
    ASSERT_EQ(std::string(v), value);
  }
  cumem_stream_t* stream = nullptr;
  void* native = nullptr;
};

// expandable: the default resource is the caching adaptor with expandable
// segments over the device's memory resource (issue 18).
TEST_F(FrameworkEnvGpu, ExpandableMapsPagesForLargeBlocks) {
  expect_env("expandable");
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &r));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_CACHING);
  void* a = cumem_torch_alloc(30u << 20, 0, native);
  ASSERT_NE(a, nullptr) << cumem_last_error_message();
  cumem_caching_statistics_t c = CUMEM_CACHING_STATISTICS_INIT;
  CUMEM_ASSERT_OK(cumem_caching_resource_get_statistics(r, &c));
  EXPECT_GE(c.pages_mapped, 2u) << "30 MiB on pages of 8 MiB (the default; any of 20 MiB or less)";
  cumem_torch_free(a, 30u << 20, 0, native);
  // Given back and asked again: the same kind is made again.
  cumem_resource_release(r);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &r));
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_CACHING);
  cumem_resource_release(r);
}

// A value that names nothing is refused at the first choice, by name.
TEST_F(FrameworkEnvGpu, AnUnknownValueIsRefusedByName) {
  expect_env("pool");
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'device', 'caching', 'expandable' or unset");
  EXPECT_EQ(cumem_torch_alloc(4096, 0, native), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("CUMEM_FRAMEWORK_RESOURCE is 'pool'"),
            std::string::npos)
      << cumem_last_error_message();
}

}  // namespace
