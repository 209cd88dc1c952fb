// An exported pool (or host shared arena): the file descriptor that lets
// another process import it, and the pool's descriptor that says what it is.
// Owns the file descriptor; cuda.core's IPCAllocationHandle.
#pragma once

#include "../object.hpp"
#include "descriptor.hpp"

namespace cumem::core {

class AllocationHandle final : public Object {
 public:
  // Takes `fd` after checking that `pool` is a valid pool descriptor and
  // `fd` an open file descriptor; on a throw the caller still owns `fd`.
  static Ref<AllocationHandle> adopt(int fd, const IpcDescriptor& pool);
  // As adopt(), but `fd` is closed when it throws: for a descriptor this
  // process just made.
  static Ref<AllocationHandle> take(int fd, const IpcDescriptor& pool);
  // The pool descriptor's bytes are decoded (validated) first.
  static Ref<AllocationHandle> from_fd(const uint8_t* pool_descriptor, int fd);
  // pidfd_getfd of `remote_fd` in process `pid`.
  static Ref<AllocationHandle> from_pid(const uint8_t* pool_descriptor, int pid, int remote_fd);

  int fd() const noexcept { return fd_; }
  // A close-on-exec duplicate the caller owns.
  int dup_fd() const;
  const IpcDescriptor& pool() const noexcept { return pool_; }

 private:
  AllocationHandle(int fd, const IpcDescriptor& pool)
      : Object(Tag::allocation_handle), fd_(fd), pool_(pool) {}
  ~AllocationHandle() override;

  int fd_;
  IpcDescriptor pool_;
};

// A close-on-exec duplicate of `fd`, or Error naming `what`.
int duplicate_fd(int fd, const char* what);

}  // namespace cumem::core
