// File descriptors made or received so far for an IPC handle: closed when
// this goes, unless handed over first (release()). Host-only.
#pragma once

#include <unistd.h>

#include <vector>

namespace cumem::core {

class OwnedFds {
 public:
  OwnedFds() = default;
  OwnedFds(const OwnedFds&) = delete;
  OwnedFds& operator=(const OwnedFds&) = delete;
  ~OwnedFds() {
    for (int fd : fds_) ::close(fd);
  }
  // Takes `fd` (also when the push itself throws: then it is closed).
  void add(int fd) {
    try {
      fds_.push_back(fd);
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  size_t size() const noexcept { return fds_.size(); }
  std::vector<int> release() { return std::move(fds_); }

 private:
  std::vector<int> fds_;
};

}  // namespace cumem::core
