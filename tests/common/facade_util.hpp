// Helpers of the C++ facade tests: the cumem::Error a statement throws.
#pragma once

#include <cumem/cumem.hpp>
#include <gtest/gtest.h>

#include <string>

// Runs `fn` and returns the cumem::Error it throws (fails if it throws none).
template <class Fn>
cumem::Error error_of(Fn&& fn) {
  try {
    fn();
  } catch (const cumem::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no cumem::Error thrown";
  return cumem::Error(CUMEM_SUCCESS, "");
}

#define EXPECT_CUMEM_THROW(stmt, expected_status, fragment)                           \
  do {                                                                                \
    const cumem::Error e_ = error_of([&] { stmt; });                                  \
    EXPECT_EQ(e_.status(), expected_status) << e_.what();                             \
    EXPECT_NE(std::string(e_.what()).find(fragment), std::string::npos) << e_.what(); \
  } while (0)
