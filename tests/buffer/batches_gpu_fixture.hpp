// What the two GPU batch tests share (test_batches_gpu.cpp,
// test_copy_kernel_gpu.cpp): a stream, a device pool, a pinned pool and
// cuMemHostAlloc'd pinned memory, buffers made from them that TearDown
// releases, bytes written to and read from a buffer through wrapped host
// memory, and the batch statistics.
#pragma once

#include <random>
#include <vector>

#include "gpu_fixture.hpp"

inline cumem_batch_statistics_t batch_statistics() {
  cumem_batch_statistics_t s = CUMEM_BATCH_STATISTICS_INIT;
  EXPECT_EQ(cumem_batch_get_statistics(&s), CUMEM_SUCCESS) << cumem_last_error_message();
  return s;
}

class BatchGpuTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &device_mr));
    CUMEM_ASSERT_OK(cumem_pinned_resource_create(device, nullptr, &pinned_mr));
    CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &legacy_pinned_mr));
  }
  void TearDown() override {
    for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
    for (cumem_resource_t* r : {device_mr, pinned_mr, legacy_pinned_mr}) cumem_resource_release(r);
    cumem_stream_release(stream);
    GpuTest::TearDown();
  }
  cumem_buffer_t* make(cumem_resource_t* r, size_t size) {
    cumem_buffer_t* b = nullptr;
    EXPECT_EQ(cumem_resource_allocate(r, size, stream, &b), CUMEM_SUCCESS)
        << cumem_last_error_message();
    buffers.push_back(b);
    return b;
  }
  // Writes `data` into `b` at offset 0 (a copy from wrapped host memory).
  void write(cumem_buffer_t* b, const std::vector<uint8_t>& data) {
    cumem_buffer_t* stage = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_wrap(const_cast<uint8_t*>(data.data()), data.size(), nullptr,
                                      nullptr, &stage));
    CUMEM_ASSERT_OK(cumem_buffer_copy_region(b, 0, stage, 0, data.size(), stream));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
    cumem_buffer_release(stage);
  }
  // The first `size` bytes of `b`.
  std::vector<uint8_t> read(cumem_buffer_t* b, size_t size) {
    std::vector<uint8_t> out(size, 0xCD);
    cumem_buffer_t* stage = nullptr;
    EXPECT_EQ(cumem_buffer_wrap(out.data(), size, nullptr, nullptr, &stage), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_buffer_copy_region(stage, 0, b, 0, size, stream), CUMEM_SUCCESS)
        << cumem_last_error_message();
    EXPECT_EQ(cumem_stream_synchronize(stream), CUMEM_SUCCESS);
    cumem_buffer_release(stage);
    return out;
  }
  static std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(n);
    for (auto& x : v) x = static_cast<uint8_t>(rng());
    return v;
  }

  cumem_stream_t* stream = nullptr;
  cumem_resource_t* device_mr = nullptr;
  cumem_resource_t* pinned_mr = nullptr;
  cumem_resource_t* legacy_pinned_mr = nullptr;
  std::vector<cumem_buffer_t*> buffers;
};
