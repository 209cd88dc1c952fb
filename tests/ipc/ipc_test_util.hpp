// Helpers of the IPC tests that use the public API: descriptor bytes edited
// with a fresh CRC (to reach the checks behind it), open file descriptors
// counted, and a child process run with a socket.
#pragma once

#include <dirent.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>

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

inline int wait_exit_code(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
