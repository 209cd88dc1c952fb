// Base fixture of the gpu suite: device 0, or a skip that says why there is
// none (no driver, or no device).
#pragma once

#include <string>

#include "test_util.hpp"

// Why GPU tests cannot run here ("" when a driver and a device are found);
// *out_count gets the number of devices when there are some.
inline std::string no_gpu_reason(int32_t* out_count = nullptr) {
  int32_t count = 0;
  const cumem_status_t s = cumem_device_count(&count);
  if (s != CUMEM_SUCCESS) return std::string("no CUDA driver: ") + cumem_last_error_message();
  if (count == 0) return "the CUDA driver reports no device";
  if (out_count) *out_count = count;
  return "";
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = no_gpu_reason(&device_count);
    if (!reason.empty()) GTEST_SKIP() << reason;
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
  }
  void TearDown() override { cumem_device_release(device); }

  cumem_device_t* device = nullptr;
  int32_t device_count = 0;
};
