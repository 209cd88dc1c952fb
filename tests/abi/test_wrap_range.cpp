// Wrapped ranges must be ranges: no NULL with a size, no wrap past the end
// of the address space (a slice of such a range would point at address 0x10).
#include <cstdint>

#include "test_util.hpp"

TEST(WrapRange, RangesThatWrapTheAddressSpaceAreRefused) {
  cumem_buffer_t* b = nullptr;
  void* top = reinterpret_cast<void*>(UINTPTR_MAX - 15);
  CUMEM_EXPECT_ERROR(cumem_buffer_wrap(top, 64, nullptr, nullptr, &b),
                     CUMEM_ERROR_INVALID_ARGUMENT, "wraps past the end");
  CUMEM_EXPECT_ERROR(cumem_buffer_wrap(top, 16, nullptr, nullptr, &b),
                     CUMEM_ERROR_INVALID_ARGUMENT, "wraps past the end");
  EXPECT_EQ(b, nullptr);
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  CUMEM_EXPECT_ERROR(cumem_buffer_wrap_owned(host, top, 32, &b), CUMEM_ERROR_INVALID_ARGUMENT,
                     "wraps past the end");
  EXPECT_EQ(b, nullptr);
  cumem_resource_release(host);
  // The last byte below the top is still a range (nothing is dereferenced).
  CUMEM_ASSERT_OK(cumem_buffer_wrap(top, 15, nullptr, nullptr, &b));
  cumem_buffer_release(b);
}
