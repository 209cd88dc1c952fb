// The tracking adaptor's own calls (the C layer finds them by dynamic_cast).
#pragma once

#include <cstdint>
#include <string>

#include "resource.hpp"

namespace cumem::core {

class Tracking {
 public:
  // Every outstanding allocation: size, stream, and call stack if kept.
  virtual std::string report() const = 0;
  virtual void outstanding(uint64_t& count, uint64_t& bytes) const = 0;

 protected:
  ~Tracking() = default;
};

Ref<Resource> create_tracking_resource(Ref<Resource> upstream, bool backtraces);

}  // namespace cumem::core
