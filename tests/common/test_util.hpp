// Helpers shared by every test program.
#pragma once

#include <cumem/cumem.h>
#include <gtest/gtest.h>

#include <string>

// Asserts that a libcumem call succeeded, printing the library's message.
#define CUMEM_ASSERT_OK(expr)                                                     \
  do {                                                                            \
    const cumem_status_t cumem_test_status_ = (expr);                             \
    ASSERT_EQ(cumem_test_status_, CUMEM_SUCCESS)                                  \
        << #expr << " -> " << cumem_status_string(cumem_test_status_) << ": "     \
        << cumem_last_error_message();                                            \
  } while (0)

// Asserts that a libcumem call failed with `status` and that the message
// contains `fragment`.
#define CUMEM_EXPECT_ERROR(expr, status, fragment)                                \
  do {                                                                            \
    const cumem_status_t cumem_test_status_ = (expr);                             \
    EXPECT_EQ(cumem_test_status_, status)                                         \
        << #expr << " -> " << cumem_status_string(cumem_test_status_) << ": "     \
        << cumem_last_error_message();                                            \
    EXPECT_NE(std::string(cumem_last_error_message()).find(fragment),             \
              std::string::npos)                                                  \
        << "message: " << cumem_last_error_message();                             \
  } while (0)

// A resource's statistics (a failure is a test failure).
inline cumem_resource_statistics_t statistics_of(const cumem_resource_t* resource) {
  cumem_resource_statistics_t s = CUMEM_RESOURCE_STATISTICS_INIT;
  EXPECT_EQ(cumem_resource_get_statistics(resource, &s), CUMEM_SUCCESS) << cumem_last_error_message();
  return s;
}

// A buffer's address (a failure is a test failure, and null).
inline void* buffer_address(const cumem_buffer_t* buffer) {
  void* p = nullptr;
  EXPECT_EQ(cumem_buffer_ptr(buffer, &p), CUMEM_SUCCESS) << cumem_last_error_message();
  return p;
}
