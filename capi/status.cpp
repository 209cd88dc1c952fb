// Version, status names and the thread-local last error.
#include "capi.hpp"

#include <cstdio>
#include <cstring>
#include <exception>

#include "../src/device.hpp"
#include "../src/log.hpp"
#include "../src/snapshot/oom.hpp"

// Its values are core::Status's, asserted one by one in capi/enums.cpp.

namespace cumem::capi {
namespace {

// The last failure's message, per thread. A plain char array, not a
// std::string: it has no destructor, so it stays usable after the thread's
// (or the process's) thread-local destructors ran. Calls from atexit
// handlers, static or thread_local destructors (a Rust TLS drop) can fail
// and read their message like any other call. Zero-initialised: "" until a
// call on this thread fails.
constexpr size_t message_capacity = 16384;
thread_local char last_error[message_capacity];

// Writes "<function>: <prefix><message>" into last_error without throwing
// or allocating. A longer message keeps its start (where the cause is
// named) and ends with a marker saying it was cut and how long it was.
void set_last_error(const char* function, const char* prefix, const char* message) noexcept {
  const int length = std::snprintf(last_error, message_capacity, "%s: %s%s", function, prefix,
                                   message);
  if (length < 0) {  // an encoding error: no message is better than half a one
    last_error[0] = '\0';
    return;
  }
  if (static_cast<size_t>(length) < message_capacity) return;
  char marker[64];
  const int marker_length =
      std::snprintf(marker, sizeof marker, " ... [message truncated: %d bytes in all]", length);
  if (marker_length <= 0 || static_cast<size_t>(marker_length) >= sizeof marker) return;
  // Cut before the marker, and not inside a UTF-8 sequence (paths and
  // compiler logs may hold any text): back up over continuation bytes.
  size_t cut = message_capacity - 1 - static_cast<size_t>(marker_length);
  while (cut > 0 && (static_cast<unsigned char>(last_error[cut]) & 0xC0) == 0x80) --cut;
  std::memcpy(last_error + cut, marker, static_cast<size_t>(marker_length) + 1);
}

// Every failure at debug, so that an integrator can see them all: built
// only when debug is on (one relaxed load otherwise).
void log_failure(Status status) noexcept {
  if (!log::enabled(log::Level::debug)) return;
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, " [%s]",
                cumem_status_string(static_cast<cumem_status_t>(status)));
  try {
    log::write(log::Level::debug, std::string(last_error) + suffix);
  } catch (...) {  // no memory for the copy: the message alone
    log::write(log::Level::debug, last_error);
  }
}

}  // namespace

cumem_status_t record_failure(const char* function, Status status, const char* message) noexcept {
  // $CUMEM_OOM_SNAPSHOT: the memory as it is when the program learns it
  // ran out, and the message says where it went.
  const std::string snapshot_path =
      status == Status::out_of_memory ? snapshot::on_out_of_memory() : std::string();
  if (!snapshot_path.empty()) {
    set_last_error(function, "", message);
    const size_t used = std::strlen(last_error);
    std::snprintf(last_error + used, message_capacity - used,
                  "; a memory snapshot was written to %s", snapshot_path.c_str());
  } else {
    set_last_error(function, "", message);
  }
  log_failure(status);
  return static_cast<cumem_status_t>(status);
}

cumem_status_t record_unknown_failure(const char* function) noexcept {
  // Written inside the handlers: e.what() is only valid while the
  // exception is alive.
  try {
    throw;
  } catch (const std::exception& e) {
    set_last_error(function, "internal error (please report): ", e.what());
  } catch (...) {
    set_last_error(function, "internal error (please report): ", "unknown exception");
  }
  log_failure(Status::internal);
  return static_cast<cumem_status_t>(Status::internal);
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
    CUMEM_NAME(CUMEM_ERROR_OUT_OF_RESOURCES)
    CUMEM_NAME(CUMEM_ERROR_INTERNAL)
#undef CUMEM_NAME
    default:
      return "CUMEM_STATUS_UNKNOWN";
  }
}

CUMEM_EXPORT const char* cumem_last_error_message(void) {
  return cumem::capi::last_error;
}

CUMEM_EXPORT cumem_status_t cumem_driver_version(int32_t* out_version) {
  CUMEM_TRY
  cumem::capi::out(out_version, "out_version");
  *out_version = cumem::core::driver_version();
  CUMEM_CATCH
}
