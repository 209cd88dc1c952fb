// Version, status names and the thread-local last error.
#include "capi.hpp"

#include <exception>

#include "../src/device.hpp"

static_assert(sizeof(cumem_status_t) == 4, "cumem_status_t must be 32 bits");
#define CUMEM_SAME_STATUS(c, value) \
  static_assert(static_cast<int>(c) == static_cast<int>(cumem::core::Status::value), #c);
CUMEM_SAME_STATUS(CUMEM_SUCCESS, success)
CUMEM_SAME_STATUS(CUMEM_ERROR_INVALID_ARGUMENT, invalid_argument)
CUMEM_SAME_STATUS(CUMEM_ERROR_OUT_OF_MEMORY, out_of_memory)
CUMEM_SAME_STATUS(CUMEM_ERROR_NO_DRIVER, no_driver)
CUMEM_SAME_STATUS(CUMEM_ERROR_NO_DEVICE, no_device)
CUMEM_SAME_STATUS(CUMEM_ERROR_NOT_SUPPORTED, not_supported)
CUMEM_SAME_STATUS(CUMEM_ERROR_BUFFER_CLOSED, buffer_closed)
CUMEM_SAME_STATUS(CUMEM_ERROR_SIZE_MISMATCH, size_mismatch)
CUMEM_SAME_STATUS(CUMEM_ERROR_OUT_OF_RANGE, out_of_range)
CUMEM_SAME_STATUS(CUMEM_ERROR_WRONG_DEVICE, wrong_device)
CUMEM_SAME_STATUS(CUMEM_ERROR_INVALID_STATE, invalid_state)
CUMEM_SAME_STATUS(CUMEM_ERROR_DRIVER, driver)
CUMEM_SAME_STATUS(CUMEM_ERROR_NO_COMPILER, no_compiler)
CUMEM_SAME_STATUS(CUMEM_ERROR_COMPILATION, compilation)
CUMEM_SAME_STATUS(CUMEM_ERROR_NOT_FOUND, not_found)
CUMEM_SAME_STATUS(CUMEM_ERROR_INVALID_LAUNCH_CONFIG, invalid_launch_config)
CUMEM_SAME_STATUS(CUMEM_ERROR_INTERNAL, internal)
#undef CUMEM_SAME_STATUS

namespace cumem::capi {
namespace {
thread_local std::string last_error;
}

cumem_status_t record_failure(const char* function, Status status, const char* message) noexcept {
  try {
    last_error = std::string(function) + ": " + message;
  } catch (...) {
    // Keep the previous message rather than fail while reporting a failure.
  }
  return static_cast<cumem_status_t>(status);
}

cumem_status_t record_unknown_failure(const char* function) noexcept {
  std::string what = "unknown exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  const std::string message = "internal error (please report): " + what;
  return record_failure(function, Status::internal, message.c_str());
}

}  // namespace cumem::capi

CUMEM_EXPORT uint32_t cumem_version(void) { return CUMEM_VERSION_NUMBER; }

CUMEM_EXPORT const char* cumem_status_string(cumem_status_t status) {
  switch (status) {
#define CUMEM_NAME(s) \
  case s:             \
    return #s;
    CUMEM_NAME(CUMEM_SUCCESS)
    CUMEM_NAME(CUMEM_ERROR_INVALID_ARGUMENT)
    CUMEM_NAME(CUMEM_ERROR_OUT_OF_MEMORY)
    CUMEM_NAME(CUMEM_ERROR_NO_DRIVER)
    CUMEM_NAME(CUMEM_ERROR_NO_DEVICE)
    CUMEM_NAME(CUMEM_ERROR_NOT_SUPPORTED)
    CUMEM_NAME(CUMEM_ERROR_BUFFER_CLOSED)
    CUMEM_NAME(CUMEM_ERROR_SIZE_MISMATCH)
    CUMEM_NAME(CUMEM_ERROR_OUT_OF_RANGE)
    CUMEM_NAME(CUMEM_ERROR_WRONG_DEVICE)
    CUMEM_NAME(CUMEM_ERROR_INVALID_STATE)
    CUMEM_NAME(CUMEM_ERROR_DRIVER)
    CUMEM_NAME(CUMEM_ERROR_NO_COMPILER)
    CUMEM_NAME(CUMEM_ERROR_COMPILATION)
    CUMEM_NAME(CUMEM_ERROR_NOT_FOUND)
    CUMEM_NAME(CUMEM_ERROR_INVALID_LAUNCH_CONFIG)
    CUMEM_NAME(CUMEM_ERROR_INTERNAL)
#undef CUMEM_NAME
    default:
      return "CUMEM_STATUS_UNKNOWN";
  }
}

CUMEM_EXPORT const char* cumem_last_error_message(void) {
  return cumem::capi::last_error.c_str();
}

CUMEM_EXPORT cumem_status_t cumem_driver_version(int32_t* out_version) {
  CUMEM_TRY
  cumem::capi::out(out_version, "out_version");
  *out_version = cumem::core::driver_version();
  CUMEM_CATCH
}
