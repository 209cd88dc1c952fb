// The failure-callback adaptor (see failure_callback_resource.cpp).
#pragma once

#include <cstdint>
#include <functional>

#include "adaptor.hpp"

namespace cumem::core {

// What the callback is told about a refused allocation.
struct FailureInfo {
  uint32_t attempt = 1;  // 1 for the first refusal of this allocation
  size_t size = 0;
  const Stream* stream = nullptr;  // null: the legacy default stream
  ResourceStatistics statistics;   // the adaptor's, at the time of the call
  const char* message = "";        // the upstream's out-of-memory message
};

enum class FailureAction { fail, retry };

struct FailureCallback {
  std::function<FailureAction(const FailureInfo&)> callback;  // required
  std::function<void()> on_destroy;  // optional: runs once, when the adaptor goes
  uint32_t max_retries = 16;         // 1 .. kMaxFailureRetries
};

inline constexpr uint32_t kMaxFailureRetries = 1024;

Ref<Resource> create_failure_callback_resource(Ref<Resource> upstream, FailureCallback callback);

}  // namespace cumem::core
