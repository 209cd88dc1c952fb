// Device handles: a surplus release is refused (the count never wraps), a
// released device cannot be retained, and getting it again always gives a
// device with its primary context.
#include "test_util.hpp"

namespace {

bool have_device() {
  int32_t n = 0;
  return cumem_device_count(&n) == CUMEM_SUCCESS && n > 0;
}

TEST(DeviceLifetime, SurplusReleaseIsRefusedAndTheDeviceStaysUsable) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: " << cumem_last_error_message();
  cumem_device_t* a = nullptr;
  cumem_device_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &a));
  CUMEM_ASSERT_OK(cumem_device_get(0, &b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(cumem_device_release(a), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_device_release(b), CUMEM_SUCCESS);
  CUMEM_EXPECT_ERROR(cumem_device_release(a), CUMEM_ERROR_INVALID_ARGUMENT,
                     "released once too often");
  CUMEM_EXPECT_ERROR(cumem_device_retain(a), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  int32_t ordinal = -1;
  CUMEM_EXPECT_ERROR(cumem_device_ordinal(a, &ordinal), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  // Getting it again gives a working device: its primary context is back.
  cumem_device_t* c = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &c));
  cumem_stream_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(c, nullptr, &s));
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(c, nullptr, &r));
  cumem_buffer_t* buf = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 1 << 20, s, &buf));
  CUMEM_ASSERT_OK(cumem_buffer_fill(buf, 7, 1, s));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s));
  EXPECT_EQ(cumem_buffer_release(buf), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_resource_release(r), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_stream_release(s), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_device_release(c), CUMEM_SUCCESS);
}

TEST(DeviceLifetime, ObjectsKeepTheDeviceAfterItsHandleIsReleased) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: " << cumem_last_error_message();
  cumem_device_t* d = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &d));
  cumem_stream_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(d, nullptr, &s));
  EXPECT_EQ(cumem_device_release(d), CUMEM_SUCCESS);
  CUMEM_EXPECT_ERROR(cumem_device_release(d), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  // The stream still holds the device (and its context).
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s));
  cumem_device_t* again = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_device(s, &again));
  EXPECT_EQ(again, d);
  int32_t ordinal = -1;
  CUMEM_ASSERT_OK(cumem_device_ordinal(again, &ordinal));
  EXPECT_EQ(ordinal, 0);
  EXPECT_EQ(cumem_stream_release(s), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_device_release(again), CUMEM_SUCCESS);
}

}  // namespace
