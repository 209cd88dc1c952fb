#include "system_error.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"

namespace cumem::core {

std::string file_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return "RLIMIT_NOFILE (unreadable)";
  return "RLIMIT_NOFILE " +
         (limit.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(limit.rlim_cur));
}

bool out_of_file_descriptors() noexcept {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == EMFILE || errno == ENFILE;
}

void fail_errno(int error, const std::string& what, Status otherwise) {
  const std::string text = what + ": " + std::strerror(error);
  switch (error) {
    case EMFILE:
      fail(Status::out_of_resources, text + " (this process has used all its file descriptors, " +
                                         file_descriptor_limit() + "; close some or raise the limit)");
    case ENFILE:
      fail(Status::out_of_resources, text + " (the system's table of open files is full)");
    case ENOMEM:
      fail(Status::out_of_memory, text);
    case ENOSYS:
      fail(Status::not_supported, text + " (the kernel lacks this system call)");
    default:
      fail(otherwise, text);
  }
}

}  // namespace cumem::core
