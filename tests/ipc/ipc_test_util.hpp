// Helpers of the IPC tests that use the public API: descriptor bytes edited
// with a fresh CRC (to reach the checks behind it), open file descriptors
// counted, and a child process run with a socket.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "self_child.hpp"
#include "test_util.hpp"

// CRC-32 as zlib computes it (IEEE 802.3, reflected).
inline uint32_t test_crc32(const uint8_t* data, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Recomputes the descriptor's CRC (bytes 156..159, little-endian).
inline void reseal(cumem_ipc_descriptor_t& d) {
  const uint32_t crc = test_crc32(d.bytes, 156);
  for (int i = 0; i < 4; ++i) d.bytes[156 + i] = static_cast<uint8_t>(crc >> (8 * i));
}

inline void put_u64(cumem_ipc_descriptor_t& d, size_t offset, uint64_t v) {
  for (int i = 0; i < 8; ++i) d.bytes[offset + i] = static_cast<uint8_t>(v >> (8 * i));
}

inline int open_fd_count() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  while (dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n - 1;  // the directory's own descriptor
}

// Forks; the child runs `body(socket)` and exits with its result (0: all
// checks held). Returns the child's pid; `parent_socket` gets the other end.
inline pid_t spawn(const std::function<int(int)>& body, int& parent_socket) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    _exit(body(sv[1]));
  }
  close(sv[1]);
  parent_socket = sv[0];
  return pid;
}

// Like fork(), with the child the first process (pid 1) of a new PID
// namespace, as `unshare --pid --fork` starts one (with `own_proc`, in a new
// mount namespace with a /proc of its own, as `--mount-proc` and a
// container give it; the CUDA driver needs that): returns 0 in the child;
// in the parent the pid of a go-between process (in the parent's namespace)
// whose exit code is the child's (wait_exit_code), with `child_here` the
// child's pid as the parent's namespace numbers it. -1 with `error` the
// errno of unshare(CLONE_NEWPID) (EPERM: CAP_SYS_ADMIN is needed) or fork.
inline pid_t fork_in_new_pid_namespace(int& error, pid_t& child_here, bool own_proc = false) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    error = errno;
    return -1;
  }
  const pid_t between = fork();
  if (between < 0) {
    error = errno;
    close(report[0]);
    close(report[1]);
    return -1;
  }
  if (between == 0) {
    close(report[0]);
    int e = unshare(own_proc ? CLONE_NEWPID | CLONE_NEWNS : CLONE_NEWPID) == 0 ? 0 : errno;
    if (e == 0 && own_proc && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      e = errno;
    pid_t child = -1;
    if (e == 0) {
      child = fork();
      if (child < 0) e = errno;
    }
    if (child == 0) {
      close(report[1]);
      if (own_proc && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        std::fprintf(stderr, "child: mounting /proc of the new PID namespace: %s\n",
                     std::strerror(errno));
        _exit(91);
      }
      return 0;
    }
    const int sent[2] = {e, static_cast<int>(child)};
    if (write(report[1], sent, sizeof sent) != static_cast<ssize_t>(sizeof sent)) _exit(125);
    close(report[1]);
    if (e != 0) _exit(0);
    int status = 0;
    if (waitpid(child, &status, 0) != child) _exit(126);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  close(report[1]);
  int got[2] = {EIO, -1};
  const ssize_t n = read(report[0], got, sizeof got);
  close(report[0]);
  if (n != static_cast<ssize_t>(sizeof got) || got[0] != 0) {
    error = n == static_cast<ssize_t>(sizeof got) ? got[0] : EIO;
    waitpid(between, nullptr, 0);
    return -1;
  }
  child_here = static_cast<pid_t>(got[1]);
  return between;
}

// Starts `body(socket)` as pid 1 of a new PID namespace
// (fork_in_new_pid_namespace, with `own_proc` as there): returns the
// go-between's pid (wait_exit_code gives the body's result), with
// `parent_socket` the other end and `child_here` the child's pid in this
// namespace; -1 with `skip` saying why it could not.
inline pid_t spawn_in_new_pid_namespace(const std::function<int(int)>& body, int& parent_socket,
                                        std::string& skip, bool own_proc = false,
                                        pid_t* child_here = nullptr) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    skip = std::string("socketpair failed: ") + std::strerror(errno);
    return -1;
  }
  int error = 0;
  pid_t here = -1;
  const pid_t between = fork_in_new_pid_namespace(error, here, own_proc);
  if (between == 0) {
    close(sv[0]);
    if (getpid() != 1) _exit(90);  // not the first process of a namespace of its own
    _exit(body(sv[1]));
  }
  close(sv[1]);
  if (between < 0) {
    close(sv[0]);
    skip = std::string("cannot start a process in a new PID") + (own_proc ? " and mount" : "") +
           " namespace (unshare needs CAP_SYS_ADMIN): " + std::strerror(error);
    return -1;
  }
  if (child_here) *child_here = here;
  parent_socket = sv[0];
  return between;
}

// Whole reads and writes on a socket; MSG_NOSIGNAL: a peer that died is a
// failed check, not a SIGPIPE.
inline bool read_exact(int socket, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = read(socket, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}
inline bool write_exact(int socket, const void* data, size_t n) {
  return send(socket, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

// In a child: 0 when the call succeeded, else prints why and gives `code`.
#define CHILD_CHECK(expr, code)                                                        \
  do {                                                                                 \
    const cumem_status_t child_status_ = (expr);                                       \
    if (child_status_ != CUMEM_SUCCESS) {                                              \
      std::fprintf(stderr, "child: %s -> %s: %s\n", #expr,                             \
                   cumem_status_string(child_status_), cumem_last_error_message());    \
      return code;                                                                     \
    }                                                                                  \
  } while (0)

// A child's side on host-accessible memory (the host shared resource):
// receives the pool and one descriptor, imports, opens, checks `expect` in
// every byte, writes `reply`.
inline int open_and_reply(int socket, unsigned char expect, unsigned char reply) {
  cumem_allocation_handle_t* handle = nullptr;
  cumem_ipc_descriptor_t d;
  uint32_t count = 0;
  CHILD_CHECK(cumem_ipc_receive(socket, &handle, &d, 1, &count), 2);
  if (!handle || count != 1) return 3;
  cumem_resource_t* imported = nullptr;
  CHILD_CHECK(cumem_resource_from_allocation_handle(nullptr, handle, &imported), 4);
  cumem_buffer_t* b = nullptr;
  CHILD_CHECK(cumem_buffer_from_ipc_descriptor(imported, &d, nullptr, &b), 5);
  void* p = nullptr;
  size_t size = 0;
  CHILD_CHECK(cumem_buffer_ptr(b, &p), 6);
  CHILD_CHECK(cumem_buffer_size(b, &size), 6);
  for (size_t i = 0; i < size; ++i)
    if (static_cast<unsigned char*>(p)[i] != expect) return 7;
  CHILD_CHECK(cumem_buffer_fill(b, reply, 1, nullptr), 8);
  cumem_buffer_release(b);
  cumem_resource_release(imported);
  cumem_allocation_handle_release(handle);
  return 0;
}

// A host shared resource (1 MiB arena) with one 4 KiB buffer holding 0x5a,
// its pool's allocation handle and the buffer's descriptor: what the
// exporter side of the host IPC tests starts from.
class HostSharedExporter : public ::testing::Test {
 protected:
  static constexpr uint64_t kCapacity = 1 << 20;
  static constexpr size_t kBytes = 4096;
  void SetUp() override {
    CUMEM_ASSERT_OK(cumem_host_shared_resource_create(kCapacity, &resource));
    CUMEM_ASSERT_OK(cumem_resource_allocate(resource, kBytes, nullptr, &buffer));
    CUMEM_ASSERT_OK(cumem_buffer_fill(buffer, 0x5a, 1, nullptr));
    CUMEM_ASSERT_OK(cumem_resource_get_allocation_handle(resource, &handle));
    CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(buffer, &descriptor));
  }
  void TearDown() override {
    cumem_allocation_handle_release(handle);
    cumem_buffer_release(buffer);
    cumem_resource_release(resource);
  }

  cumem_resource_t* resource = nullptr;
  cumem_buffer_t* buffer = nullptr;
  cumem_allocation_handle_t* handle = nullptr;
  cumem_ipc_descriptor_t descriptor{};
};
