// A device's count governs its primary context: on a fake driver that
// counts the context's retains and releases ($CUMEM_LIBCUDA naming
// fake_context_driver.cpp's library), the context is retained once while
// any handle is out, released when the last one goes, retained again by
// the next get, never released while a handle is held (threads getting and
// releasing the device at once) and never released more than retained.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

struct FakeContextCounts {
  long retains, releases, held, unmatched;
};
using CountsFn = FakeContextCounts (*)();

CountsFn counts_fn() {
  static CountsFn fn = [] {
    const char* path = std::getenv("CUMEM_LIBCUDA");
    void* lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;  // libcumem's copy
    return lib ? reinterpret_cast<CountsFn>(dlsym(lib, "fake_context_counts")) : nullptr;
  }();
  return fn;
}

class DeviceContext : public ::testing::Test {
 protected:
  void SetUp() override {
    int32_t n = 0;
    CUMEM_ASSERT_OK(cumem_device_count(&n));  // loads the fake
    ASSERT_EQ(n, 1);
    ASSERT_NE(counts_fn(), nullptr) << "run with CUMEM_LIBCUDA naming the counting fake";
    ASSERT_EQ(counts().held, 0);
  }
  void TearDown() override {
    const FakeContextCounts c = counts();
    EXPECT_EQ(c.held, 0);
    EXPECT_EQ(c.retains, c.releases);
    EXPECT_EQ(c.unmatched, 0);
  }
  static FakeContextCounts counts() { return counts_fn()(); }
};

TEST_F(DeviceContext, RetainedOnceWhileHandlesAreOutAndAgainAfterTheLast) {
  const long before = counts().retains;
  cumem_device_t* a = nullptr;
  cumem_device_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &a));
  CUMEM_ASSERT_OK(cumem_device_get(0, &b));
  EXPECT_EQ(a, b);
  CUMEM_ASSERT_OK(cumem_device_retain(a));
  EXPECT_EQ(counts().retains, before + 1);
  EXPECT_EQ(counts().held, 1);
  CUMEM_ASSERT_OK(cumem_device_release(a));
  CUMEM_ASSERT_OK(cumem_device_release(b));
  EXPECT_EQ(counts().held, 1);  // one handle left
  CUMEM_ASSERT_OK(cumem_device_release(a));
  EXPECT_EQ(counts().held, 0);
  // A surplus release is refused and changes nothing.
  CUMEM_EXPECT_ERROR(cumem_device_release(a), CUMEM_ERROR_INVALID_ARGUMENT,
                     "released once too often");
  CUMEM_EXPECT_ERROR(cumem_device_retain(a), CUMEM_ERROR_INVALID_ARGUMENT, "released");
  EXPECT_EQ(counts().held, 0);
  EXPECT_EQ(counts().releases, before + 1);
  // The next get retains the context again.
  CUMEM_ASSERT_OK(cumem_device_get(0, &a));
  EXPECT_EQ(counts().retains, before + 2);
  EXPECT_EQ(counts().held, 1);
  CUMEM_ASSERT_OK(cumem_device_release(a));
}

TEST_F(DeviceContext, NeverReleasedWhileAHandleIsHeldAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        cumem_device_t* d = nullptr;
        if (cumem_device_get(0, &d) != CUMEM_SUCCESS) {
          ++failures;
          return;
        }
        if (counts().held < 1) ++failures;
        if (i % 3 == 0 && cumem_device_retain(d) == CUMEM_SUCCESS) cumem_device_release(d);
        if (counts().held < 1) ++failures;
        if (cumem_device_release(d) != CUMEM_SUCCESS) ++failures;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
