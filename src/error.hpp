// The one exception type of the core: a status and a sentence for the user.
#pragma once

#include <exception>
#include <string>

#include "status.hpp"

namespace cumem::core {

class Error : public std::exception {
 public:
  Error(Status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  Status status() const noexcept { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Status status_;
  std::string message_;
};

[[noreturn]] inline void fail(Status status, std::string message) {
  throw Error(status, std::move(message));
}

// Formats a byte count for messages: "1073741824 bytes (1.00 GiB)".
std::string describe_bytes(unsigned long long bytes);
// Formats an address for messages: "0x7f0000200000".
std::string address_text(const void* p);

}  // namespace cumem::core
