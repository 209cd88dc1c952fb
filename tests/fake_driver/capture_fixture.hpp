// The fake capturing driver (fake_capture_driver.cpp, named in
// $CUMEM_LIBCUDA) as the capture tests reach it, and their fixture: the
// fake opened again (the same instance libcumem uses) for its entry points
// and counters, and a device with a stream of libcumem's.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdlib>
#include <string>

#include "test_util.hpp"

namespace capture_test {

// The fake driver, opened again by the test (the same instance libcumem
// uses): its entry points, to capture "with the driver directly", and its
// counters.
struct Fake {
  void* lib = nullptr;
  int (*calls)(const char*) = nullptr;
  void (*reset_calls)() = nullptr;
  int (*invalidations)() = nullptr;
  int (*thread_mode)() = nullptr;
  CUresult (*begin_capture)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*end_capture)(CUstream, CUgraph*) = nullptr;
  CUresult (*exchange_mode)(CUstreamCaptureMode*) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*graph_destroy)(CUgraph) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned int, int) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;

  template <class Fn>
  void entry(const char* name, Fn& fn) {
    auto get = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t,
                                             CUdriverProcAddressQueryResult*)>(
        dlsym(lib, "cuGetProcAddress_v2"));
    void* p = nullptr;
    CUdriverProcAddressQueryResult found{};
    get(name, &p, 13000, 0, &found);
    fn = reinterpret_cast<Fn>(p);
  }

  static Fake& get() {
    static Fake f = [] {
      Fake x;
      const char* path = std::getenv("CUMEM_LIBCUDA");
      x.lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
      if (!x.lib) return x;
      x.calls = reinterpret_cast<int (*)(const char*)>(dlsym(x.lib, "fake_calls"));
      x.reset_calls = reinterpret_cast<void (*)()>(dlsym(x.lib, "fake_reset_calls"));
      x.invalidations = reinterpret_cast<int (*)()>(dlsym(x.lib, "fake_invalidations"));
      x.thread_mode = reinterpret_cast<int (*)()>(dlsym(x.lib, "fake_thread_mode"));
      x.entry("cuStreamBeginCapture", x.begin_capture);
      x.entry("cuStreamEndCapture", x.end_capture);
      x.entry("cuThreadExchangeStreamCaptureMode", x.exchange_mode);
      x.entry("cuMemFree", x.mem_free);
      x.entry("cuGraphDestroy", x.graph_destroy);
      x.entry("cuStreamCreateWithPriority", x.stream_create);
      x.entry("cuStreamDestroy", x.stream_destroy);
      return x;
    }();
    return f;
  }
};

cumem_capture_info_t info_of(const cumem_stream_t* stream) {
  cumem_capture_info_t info = CUMEM_CAPTURE_INFO_INIT;
  EXPECT_EQ(cumem_stream_get_capture_info(stream, &info), CUMEM_SUCCESS)
      << cumem_last_error_message();
  return info;
}

class Capture : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("CUMEM_LIBCUDA");
    ASSERT_NE(path, nullptr) << "run with CUMEM_LIBCUDA naming the fake capturing driver";
    ASSERT_NE(std::string(path).find("fake_capture"), std::string::npos) << path;
    ASSERT_NE(fake.calls, nullptr) << dlerror();
    ASSERT_NE(fake.begin_capture, nullptr);
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
    invalidations_before = fake.invalidations();
  }
  void TearDown() override {
    cumem_stream_release(stream);
    cumem_device_release(device);
  }
  // No capture was invalidated since SetUp.
  ::testing::AssertionResult no_invalidation() {
    const int n = fake.invalidations() - invalidations_before;
    if (n == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << n << " capture(s) were invalidated";
  }
  CUstream cu() const { return static_cast<CUstream>(native); }

  Fake& fake = Fake::get();
  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  void* native = nullptr;
  int invalidations_before = 0;
};

}  // namespace capture_test
