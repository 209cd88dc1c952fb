// Fixture of the program and launch tests on device 0: a stream, a device
// and a pinned resource, buffer helpers that copy through pinned staging
// buffers, and build() for compile + load + get kernel.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

inline const char* const add_one_source = R"(
extern "C" __global__ void add_one(float* data, size_t n) {
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t < n) data[t] += 1.0f;
}
)";

inline cumem_launch_config_t config_1d(size_t n, uint32_t block = 256) {
  cumem_launch_config_t c = CUMEM_LAUNCH_CONFIG_INIT;
  c.grid[0] = static_cast<uint32_t>((n + block - 1) / block);
  c.block[0] = block;
  return c;
}

class ProgramTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CUMEM_ASSERT_OK(cumem_device_get_properties(device, &props));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &device_mr));
    CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned_mr));
  }
  void TearDown() override {
    for (cumem_kernel_t* k : kernels) cumem_kernel_release(k);
    for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
    cumem_resource_release(pinned_mr);
    cumem_resource_release(device_mr);
    cumem_stream_release(stream);
    GpuTest::TearDown();
  }

  std::string sm() const {
    return std::to_string(props.compute_capability_major * 10 + props.compute_capability_minor);
  }

  cumem_buffer_t* allocate(cumem_resource_t* mr, size_t bytes) {
    cumem_buffer_t* b = nullptr;
    const cumem_status_t s = cumem_resource_allocate(mr, bytes, stream, &b);
    EXPECT_EQ(s, CUMEM_SUCCESS) << cumem_last_error_message();
    if (b) buffers.push_back(b);
    return b;
  }

  static void* ptr(const cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    return p;
  }

  // Copies host values into a buffer through a pinned staging buffer.
  template <class T>
  void write(cumem_buffer_t* dst, const std::vector<T>& values) {
    cumem_buffer_t* staging = allocate(pinned_mr, values.size() * sizeof(T));
    ASSERT_NE(staging, nullptr);
    std::memcpy(ptr(staging), values.data(), values.size() * sizeof(T));
    CUMEM_ASSERT_OK(cumem_buffer_copy_to(staging, dst, stream));
  }

  // Copies a whole buffer back to the host through a pinned staging buffer.
  template <class T>
  std::vector<T> read(const cumem_buffer_t* src) {
    size_t size = 0;
    EXPECT_EQ(cumem_buffer_size(src, &size), CUMEM_SUCCESS);
    std::vector<T> out(size / sizeof(T));
    cumem_buffer_t* staging = allocate(pinned_mr, size);
    if (!staging) return out;
    EXPECT_EQ(cumem_buffer_copy_to(src, staging, stream), CUMEM_SUCCESS)
        << cumem_last_error_message();
    EXPECT_EQ(cumem_stream_synchronize(stream), CUMEM_SUCCESS) << cumem_last_error_message();
    std::memcpy(out.data(), ptr(staging), size);
    return out;
  }

  // Compiles, loads and gets one kernel; the program and library handles
  // are released at once (the kernel keeps what it needs alive).
  void build(const char* source, const char* name, cumem_kernel_t** out,
             const cumem_program_options_t* options = nullptr) {
    cumem_program_t* program = nullptr;
    cumem_library_t* library = nullptr;
    CUMEM_ASSERT_OK(cumem_program_compile(device, source, options, &program));
    const cumem_status_t loaded = cumem_program_load(program, &library);
    cumem_program_release(program);
    CUMEM_ASSERT_OK(loaded);
    kernel_of(library, name, out);
  }

  // Gets a kernel and releases the caller's reference to `library`.
  void kernel_of(cumem_library_t* library, const char* name, cumem_kernel_t** out) {
    const cumem_status_t got = cumem_library_get_kernel(library, name, out);
    cumem_library_release(library);
    CUMEM_ASSERT_OK(got);
    kernels.push_back(*out);
  }

  // Launches add_one over n floats 0, 1, 2, ... on `stream` and checks them.
  void expect_add_one_works(cumem_kernel_t* kernel, size_t n) {
    cumem_buffer_t* data = iota_floats(n);
    ASSERT_NE(data, nullptr);
    void* data_ptr = ptr(data);
    void* args[] = {&data_ptr, &n};
    const cumem_launch_config_t config = config_1d(n);
    CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &config, args, 2));
    expect_add_one_ran(data, n);
  }

  // A device buffer of n floats holding 0, 1, 2, ...
  cumem_buffer_t* iota_floats(size_t n) {
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i);
    cumem_buffer_t* b = allocate(device_mr, n * sizeof(float));
    if (b) write(b, values);
    return b;
  }

  void expect_add_one_ran(cumem_buffer_t* data, size_t n) {
    const std::vector<float> out = read<float>(data);
    ASSERT_EQ(out.size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(i) + 1.0f) << "i=" << i;
  }

  cumem_device_properties_t props = CUMEM_DEVICE_PROPERTIES_INIT;
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* device_mr = nullptr;
  cumem_resource_t* pinned_mr = nullptr;
  std::vector<cumem_buffer_t*> buffers;
  std::vector<cumem_kernel_t*> kernels;
};
