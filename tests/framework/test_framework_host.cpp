// The framework entry points and the native-stream raw pair where no GPU is
// needed: errors land in cumem_last_error_message(), allocations return
// NULL, unknown frees change nothing.
#include <cstdlib>

#include "test_util.hpp"

namespace {

bool have_driver() {
  int32_t v = 0;
  return cumem_driver_version(&v) == CUMEM_SUCCESS;
}

class FrameworkHost : public ::testing::Test {
 protected:
  void SetUp() override { setenv("CUMEM_FRAMEWORK_QUIET", "1", 1); }
};

TEST_F(FrameworkHost, FreesOfUnknownPointersAreReported) {
  int x = 0;
  cumem_torch_free(&x, 4, 0, nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_torch_free: pointer"),
            std::string::npos)
      << cumem_last_error_message();
  EXPECT_NE(std::string(cumem_last_error_message()).find("was not allocated by libcumem's"),
            std::string::npos);
  cumem_cupy_free(nullptr, &x, 0);
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_cupy_free: pointer"),
            std::string::npos)
      << cumem_last_error_message();
  // NULL and size 0 are no-ops, not failures.
  cumem_status_string(CUMEM_SUCCESS);
  cumem_torch_free(nullptr, 0, 0, nullptr);
  cumem_cupy_free(nullptr, nullptr, 0);
  EXPECT_EQ(cumem_torch_alloc(0, 0, nullptr), nullptr);
  EXPECT_EQ(cumem_cupy_malloc(nullptr, 0, 0), nullptr);
}

TEST_F(FrameworkHost, CupyParamMustBeAResource) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &r));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 8, nullptr, &b));
  EXPECT_EQ(cumem_cupy_malloc(b, 64, 0), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_cupy_malloc: argument 'param'"),
            std::string::npos)
      << cumem_last_error_message();
  // A resource as param: the host resource serves the allocation (the
  // entry points take whatever resource CuPy's param names).
  void* p = cumem_cupy_malloc(r, 64, 0);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(r).bytes_in_use, 72u);
  cumem_cupy_free(r, p, 0);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 8u);
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

TEST_F(FrameworkHost, NoDriverMeansNullAndAMessage) {
  if (have_driver()) GTEST_SKIP() << "a driver is present: the gpu suite tests the entry points";
  EXPECT_EQ(cumem_torch_alloc(256, 0, nullptr), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_torch_alloc: "),
            std::string::npos)
      << cumem_last_error_message();
  EXPECT_EQ(cumem_cupy_malloc(nullptr, 256, 0), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_cupy_malloc: "),
            std::string::npos);
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, &r), CUMEM_ERROR_NO_DRIVER, "");
  CUMEM_EXPECT_ERROR(cumem_framework_set_resource(0, nullptr), CUMEM_ERROR_NO_DRIVER, "");
  // A native stream on a resource with no device needs the driver.
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &r));
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_native(r, 8, reinterpret_cast<void*>(0x1234), &p),
                     CUMEM_ERROR_NO_DRIVER, "cumem_resource_allocate_native");
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(statistics_of(r).total_allocations, 0u);
  cumem_resource_release(r);
}

TEST_F(FrameworkHost, BadArguments) {
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_framework_set_resource(-1, nullptr), CUMEM_ERROR_NO_DEVICE,
                     "device -1");
  CUMEM_EXPECT_ERROR(cumem_framework_get_resource(64, &r), CUMEM_ERROR_NO_DEVICE, "device 64");
  CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_resource");
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_native(nullptr, 8, nullptr, &p),
                     CUMEM_ERROR_INVALID_ARGUMENT, "resource");
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &r));
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_native(r, 8, nullptr, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_ptr");
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_native(r, nullptr, 8, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "NULL pointer");
  cumem_resource_release(r);
}

}  // namespace
