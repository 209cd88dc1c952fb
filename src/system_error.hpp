// Errors of system calls (errno) as libcumem's statuses, in one place: a
// process out of file descriptors is CUMEM_ERROR_OUT_OF_RESOURCES naming the
// limit, out of memory is out of memory, a missing system call is not
// supported. Base layer: no CUDA.
#pragma once

#include <string>

#include "status.hpp"

namespace cumem::core {

// Throws the Error that `error` (an errno value) deserves, the message
// "<what>: <strerror>" plus, for EMFILE/ENFILE, the limit and its value.
// `otherwise` is the status for errno values that are the caller's
// (EBADF, EINVAL, ...).
[[noreturn]] void fail_errno(int error, const std::string& what, Status otherwise);

// Whether this process has no file descriptor left to open (probed by
// opening /dev/null).
bool out_of_file_descriptors() noexcept;

// "RLIMIT_NOFILE 1024" for messages (the soft limit).
std::string file_descriptor_limit();

}  // namespace cumem::core
