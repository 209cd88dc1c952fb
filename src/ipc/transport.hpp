// Passing IPC descriptors, and the file descriptor of an exported pool, from
// one process to another. Host-only: no CUDA.
//
// A message on a connected Unix domain socket (SOCK_STREAM or SOCK_SEQPACKET):
//   off  0  8 bytes  magic "CUMEMMSG"
//   off  8  u16      version (1), little-endian
//   off 10  u16      count of descriptors, little-endian (at most 1024)
//   off 12  u8       has_fd: 1 if a file descriptor travels with the message
//   off 13  3 bytes  zero
//   off 16  count x 160 bytes of descriptors (ipc/descriptor.hpp)
// The file descriptor, if any, travels as SCM_RIGHTS ancillary data with the
// message's first bytes. On SOCK_SEQPACKET a message is one record.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "descriptor.hpp"

namespace cumem::core {

constexpr size_t kIpcMessageHeaderSize = 16;
constexpr uint32_t kIpcMaxMessageDescriptors = 1024;

// Sends one message: `count` descriptors of 160 bytes each at `descriptors`
// (the caller encoded them) and `fd` (-1: none). Blocks until all of it is
// sent, through partial writes and EINTR; a non-blocking socket is waited on
// with poll(2). A closed peer is an Error(invalid_state), never SIGPIPE.
void send_message(int socket, int fd, const uint8_t* descriptors, uint32_t count);

struct ReceivedMessage {
  int fd = -1;  // owned by the caller (close-on-exec); -1: none came
  std::vector<std::array<uint8_t, kIpcDescriptorSize>> descriptors;  // undecoded
};

// Receives exactly one message of at most `max_count` descriptors (a larger
// max_count is the protocol's 1024). Checks the header; on any error, closes
// every fd that arrived, so none leaks. The peer closing before a whole
// message is Error(invalid_state); a malformed message Error(invalid_argument).
ReceivedMessage receive_message(int socket, uint32_t max_count);

// Duplicates file descriptor `remote_fd` of process `pid` into this process
// (pidfd_open + pidfd_getfd, Linux 5.6+; needs ptrace permission over `pid`).
// Returns a new close-on-exec fd owned by the caller. Refuses, first, a
// process that /proc says is not the one that calls itself `exporter_pid`
// (the descriptor's: the same pid names different processes in different
// PID namespaces).
int fd_from_pid(int pid, int remote_fd, uint32_t exporter_pid);

}  // namespace cumem::core
