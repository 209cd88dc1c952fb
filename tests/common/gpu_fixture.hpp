// Base fixture of the gpu suite: device 0, or a skip that says why there is
// none (no driver, or no device).
#pragma once

#include "test_util.hpp"

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int32_t count = 0;
    const cumem_status_t s = cumem_device_count(&count);
    if (s != CUMEM_SUCCESS) GTEST_SKIP() << "no CUDA driver: " << cumem_last_error_message();
    if (count == 0) GTEST_SKIP() << "the CUDA driver reports no device";
    device_count = count;
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
  }
  void TearDown() override { cumem_device_release(device); }

  cumem_device_t* device = nullptr;
  int32_t device_count = 0;
};
