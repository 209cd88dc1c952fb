#include "allocation_handle.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "../error.hpp"
#include "../system_error.hpp"
#include "transport.hpp"

namespace cumem::core {

int duplicate_fd(int fd, const char* what) {
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0)
    fail_errno(errno, std::string("cannot duplicate the file descriptor of ") + what,
               Status::invalid_argument);
  return copy;
}

Ref<AllocationHandle> AllocationHandle::adopt(int fd, const IpcDescriptor& pool) {
  if (pool.type != IpcType::pool)
    fail(Status::invalid_argument, "the descriptor is " + describe(pool) +
                                       ", not the descriptor of a pool");
  if (fd < 0 || fcntl(fd, F_GETFD) < 0)
    fail(Status::invalid_argument,
         "file descriptor " + std::to_string(fd) + " is not open in this process");
  return Ref<AllocationHandle>::adopt(new AllocationHandle(fd, pool));
}

Ref<AllocationHandle> AllocationHandle::take(int fd, const IpcDescriptor& pool) {
  try {
    return adopt(fd, pool);
  } catch (...) {
    ::close(fd);
    throw;
  }
}

Ref<AllocationHandle> AllocationHandle::from_fd(const uint8_t* pool_descriptor, int fd) {
  return adopt(fd, decode(pool_descriptor, kIpcDescriptorSize));
}

Ref<AllocationHandle> AllocationHandle::from_pid(const uint8_t* pool_descriptor, int pid,
                                                 int remote_fd) {
  const IpcDescriptor pool = decode(pool_descriptor, kIpcDescriptorSize);
  if (pool.type != IpcType::pool)
    fail(Status::invalid_argument, "the descriptor is " + describe(pool) +
                                       ", not the descriptor of a pool");
  return take(fd_from_pid(pid, remote_fd, pool.exporter_pid), pool);
}

int AllocationHandle::dup_fd() const { return duplicate_fd(fd_, "an allocation handle"); }

AllocationHandle::~AllocationHandle() { ::close(fd_); }

}  // namespace cumem::core
