// The fixture of the batch tests on the fake memory driver
// (fake_memory_cuda.cpp, named in $CUMEM_LIBCUDA): the fake's state as the
// tests reach it, and a device with a stream and a resource of each kind
// whose buffers the tests write and read directly (the fake's device memory
// is host memory).
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_memory.hpp"
#include "test_util.hpp"

namespace batches_test {

inline FakeMemoryState& fake() {
  static FakeMemoryState* s = [] {
    int32_t count = 0;
    EXPECT_EQ(cumem_device_count(&count), CUMEM_SUCCESS);  // loads the driver
    const char* path = std::getenv("CUMEM_LIBCUDA");
    void* lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    auto fn = lib ? reinterpret_cast<FakeMemoryStateFn>(dlsym(lib, "fake_memory_state")) : nullptr;
    return fn ? fn() : nullptr;
  }();
  if (!s) ADD_FAILURE() << "run with CUMEM_LIBCUDA naming the fake memory driver";
  return *s;
}

inline std::string stream_name(cumem_stream_t* s) {
  void* native = nullptr;
  EXPECT_EQ(cumem_stream_native(s, &native), CUMEM_SUCCESS);
  char text[32];
  std::snprintf(text, sizeof text, "%p", native);
  return text;
}

inline cumem_batch_statistics_t batch_statistics() {
  cumem_batch_statistics_t s = CUMEM_BATCH_STATISTICS_INIT;
  EXPECT_EQ(cumem_batch_get_statistics(&s), CUMEM_SUCCESS) << cumem_last_error_message();
  return s;
}

class Batches : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(&fake(), nullptr);
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &device_mr));
    CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned_mr));
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host_mr));
    cumem_managed_resource_options_t m = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
    m.disable_pool = CUMEM_TRUE;
    CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &m, &managed_mr));
    fake().clear();
  }
  void TearDown() override {
    for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
    for (cumem_resource_t* r : {device_mr, pinned_mr, host_mr, managed_mr}) cumem_resource_release(r);
    cumem_stream_release(stream);
    cumem_device_release(device);
  }
  // A buffer of `size` bytes whose byte i is seed + i (the fake's device
  // memory is host memory, so the test writes and reads it directly).
  cumem_buffer_t* make(cumem_resource_t* r, size_t size, unsigned seed) {
    cumem_buffer_t* b = nullptr;
    EXPECT_EQ(cumem_resource_allocate(r, size, stream, &b), CUMEM_SUCCESS)
        << cumem_last_error_message();
    buffers.push_back(b);
    auto* p = static_cast<unsigned char*>(ptr(b));
    for (size_t i = 0; i < size; ++i) p[i] = static_cast<unsigned char>(seed + i);
    return b;
  }
  static void* ptr(cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS);
    return p;
  }
  static bool same_bytes(cumem_buffer_t* a, size_t a_off, cumem_buffer_t* b, size_t b_off,
                         size_t n) {
    return std::memcmp(static_cast<char*>(ptr(a)) + a_off, static_cast<char*>(ptr(b)) + b_off,
                       n) == 0;
  }
  // Nothing was queued: the call failed before the driver was asked.
  void expect_nothing_queued() {
    std::lock_guard<std::mutex> lock(fake().mutex);
    EXPECT_TRUE(fake().log.empty()) << fake().log.size() << " calls, first: " << fake().log[0];
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(fake().mutex);
    return fake().log;
  }

  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* device_mr = nullptr;
  cumem_resource_t* pinned_mr = nullptr;
  cumem_resource_t* host_mr = nullptr;
  cumem_resource_t* managed_mr = nullptr;
  std::vector<cumem_buffer_t*> buffers;
};

}  // namespace batches_test
