// Managed memory: preferred location, prefetch, advice, discard, and the
// guard against oversubscribing the GPU.
#include <cstring>
#include <string>

#include "gpu_fixture.hpp"

namespace {

class ManagedTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    cumem_managed_resource_options_t o = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
    o.preferred_location = {CUMEM_LOCATION_DEVICE, 0};
    CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &o, &resource));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  }
  void TearDown() override {
    cumem_stream_release(stream);
    cumem_resource_release(resource);
    GpuTest::TearDown();
  }
  cumem_resource_t* resource = nullptr;
  cumem_stream_t* stream = nullptr;
};

TEST_F(ManagedTest, HostWritesDeviceFillsPrefetchBothWays) {
  const size_t size = 2u << 20;
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, size, stream, &b));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
  std::memset(p, 0x01, size);
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUMEM_ASSERT_OK(cumem_buffer_prefetch(b, dev, stream));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x7E, 1, stream));
  CUMEM_ASSERT_OK(cumem_buffer_prefetch(b, host, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  const unsigned char* bytes = static_cast<const unsigned char*>(p);
  size_t wrong = 0;
  for (size_t i = 0; i < size; ++i) wrong += bytes[i] != 0x7E;
  EXPECT_EQ(wrong, 0u);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
}

TEST_F(ManagedTest, AdviceOnPoolMemoryWorksOrSaysHowToGetIt) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(resource, &p));
  if (!p.is_pool) GTEST_SKIP() << "this driver has no managed pool";
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 1u << 20, stream, &b));
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  const cumem_status_t s = cumem_buffer_advise(b, CUMEM_ADVICE_SET_READ_MOSTLY, dev);
  if (s != CUMEM_SUCCESS) {
    EXPECT_EQ(s, CUMEM_ERROR_NOT_SUPPORTED);
    EXPECT_NE(std::string(cumem_last_error_message()).find("disable_pool = true"), std::string::npos)
        << cumem_last_error_message();
  }
  cumem_buffer_release(b);
}

TEST_F(ManagedTest, Advice) {
  cumem_managed_resource_options_t o = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  o.preferred_location = {CUMEM_LOCATION_DEVICE, 0};
  o.disable_pool = CUMEM_TRUE;  // CUDA 13.0 drivers advise only cuMemAllocManaged memory
  cumem_resource_t* plain = nullptr;
  CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &o, &plain));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(plain, 1u << 20, stream, &b));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_SET_READ_MOSTLY, dev));
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_UNSET_READ_MOSTLY, dev));
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_SET_PREFERRED_LOCATION, host));
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_UNSET_PREFERRED_LOCATION, host));
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_SET_ACCESSED_BY, dev));
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_UNSET_ACCESSED_BY, dev));
  const cumem_location_t none = {CUMEM_LOCATION_NONE, 0};
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_SET_READ_MOSTLY, none));
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(b, CUMEM_ADVICE_SET_ACCESSED_BY, none),
                     CUMEM_ERROR_INVALID_ARGUMENT, "need a location");
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(b, static_cast<cumem_advice_t>(42), dev),
                     CUMEM_ERROR_INVALID_ARGUMENT, "advice 42");
  cumem_buffer_release(b);
  cumem_resource_release(plain);
}

TEST_F(ManagedTest, Discard) {
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 2u << 20, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x11, 1, stream));
  int32_t driver = 0;
  CUMEM_ASSERT_OK(cumem_driver_version(&driver));
  if (driver >= 13000) {
    CUMEM_ASSERT_OK(cumem_buffer_discard(b, stream));
  } else {
    CUMEM_EXPECT_ERROR(cumem_buffer_discard(b, stream), CUMEM_ERROR_NOT_SUPPORTED, "13.0");
  }
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_buffer_release(b);
}

TEST_F(ManagedTest, BadLocationsAreRejected) {
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 4096, stream, &b));
  const cumem_location_t nowhere = {CUMEM_LOCATION_DEVICE, 999};
  // One rule everywhere: a device ordinal that does not exist is NO_DEVICE.
  CUMEM_EXPECT_ERROR(cumem_buffer_prefetch(b, nowhere, stream), CUMEM_ERROR_NO_DEVICE,
                     "device 999");
  const cumem_location_t far = {CUMEM_LOCATION_DEVICE, 4096};
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(b, CUMEM_ADVICE_SET_ACCESSED_BY, far),
                     CUMEM_ERROR_NO_DEVICE, "device 4096");
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(b, CUMEM_ADVICE_SET_READ_MOSTLY, far),
                     CUMEM_ERROR_NO_DEVICE, "device 4096");
  const cumem_location_t none = {CUMEM_LOCATION_NONE, 0};
  CUMEM_EXPECT_ERROR(cumem_buffer_prefetch(b, none, stream), CUMEM_ERROR_INVALID_ARGUMENT,
                     "no location");
  cumem_buffer_release(b);
  cumem_managed_resource_options_t o = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  o.preferred_location = {CUMEM_LOCATION_DEVICE, 999};
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_managed_resource_create(device, &o, &r), CUMEM_ERROR_NO_DEVICE,
                     "device 999");
  o.preferred_location = {static_cast<cumem_location_type_t>(77), 0};
  CUMEM_EXPECT_ERROR(cumem_managed_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "location type 77");
  EXPECT_EQ(r, nullptr);
}

TEST_F(ManagedTest, NeverMoreThanTheFreeMemory) {
  uint64_t free_bytes = 0, total = 0;
  CUMEM_ASSERT_OK(cumem_device_memory_info(device, &free_bytes, &total));
  cumem_buffer_t* b = nullptr;
  // Refused before anything is allocated.
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(resource, free_bytes + (1ull << 30), stream, &b),
                     CUMEM_ERROR_OUT_OF_MEMORY, "free memory");
  EXPECT_EQ(b, nullptr);
  cumem_resource_statistics_t s = CUMEM_RESOURCE_STATISTICS_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_statistics(resource, &s));
  EXPECT_EQ(s.live_allocations, 0u);
}

}  // namespace
