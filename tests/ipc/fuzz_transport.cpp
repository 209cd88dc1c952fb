// libFuzzer target for receiving an IPC message from a hostile peer
// (ipc/transport.hpp; tests/fuzz/meson.build: its seeds replayed in the
// host suite, fuzzed by tools/fuzz.sh). The input's first byte chooses the
// socket (bit 0: SOCK_SEQPACKET, else SOCK_STREAM) and how many file
// descriptors ride with the bytes (bits 1-2: 0 to 3), its second the
// receiver's max_count (255: the protocol's 1024); the rest is what the
// peer sends before it closes. receive_message() must return a message that
// matches its header, or throw core::Error; either way no file descriptor
// may stay open that was not open before. Any other exception, a crash, a
// hang or a sanitizer report is a failure.
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "error.hpp"
#include "ipc/descriptor.hpp"
#include "ipc/transport.hpp"

namespace {

using namespace cumem::core;

// The sender's bytes stay under what a socket buffers (every send is made
// before the receiver reads, on one thread).
constexpr size_t kMaxPayload = 32 * 1024;

size_t open_fds() {
  size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) std::abort();
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Sends `payload` with `fds` copies of /dev/null's descriptor attached to
// it, without blocking. False: the kernel refused (a record too large).
bool send_with_fds(int socket, const std::vector<uint8_t>& payload, int fds) {
  int sent_fds[3] = {-1, -1, -1};
  for (int i = 0; i < fds; ++i) sent_fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  uint8_t dummy = 0;
  iovec iov{};
  iov.iov_base = payload.empty() ? &dummy : const_cast<uint8_t*>(payload.data());
  iov.iov_len = payload.size();
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof sent_fds)];
  if (fds > 0) {
    // Descriptors need at least one byte to ride with on a stream.
    if (payload.empty()) iov.iov_len = 1;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds);
    std::memcpy(CMSG_DATA(c), sent_fds, sizeof(int) * fds);
  }
  const bool ok = (iov.iov_len == 0 && fds == 0) ||
                  sendmsg(socket, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
  for (int i = 0; i < fds; ++i) close(sent_fds[i]);  // the message holds its own
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int type = (data[0] & 1) ? SOCK_SEQPACKET : SOCK_STREAM;
  const int fds = (data[0] >> 1) & 3;
  const uint32_t max_count = data[1] == 255 ? kIpcMaxMessageDescriptors : data[1];
  const std::vector<uint8_t> payload(data + 2, data + 2 + std::min(size - 2, kMaxPayload));

  const size_t before = open_fds();
  int pair[2];
  if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, pair) != 0) std::abort();
  const bool sent = send_with_fds(pair[0], payload, fds);
  close(pair[0]);  // the peer is gone: every read ends
  if (sent) {
    try {
      const ReceivedMessage m = receive_message(pair[1], max_count);
      if (m.descriptors.size() > max_count) std::abort();
      if (m.descriptors.size() > payload.size() / kIpcDescriptorSize) std::abort();
      for (size_t i = 0; i < m.descriptors.size(); ++i)
        if (std::memcmp(m.descriptors[i].data(),
                        payload.data() + kIpcMessageHeaderSize + i * kIpcDescriptorSize,
                        kIpcDescriptorSize) != 0)
          std::abort();
      if ((m.fd >= 0) != (fds > 0)) std::abort();
      if (m.fd >= 0) close(m.fd);
    } catch (const Error&) {
      // refused, with a message: fine
    }
  }
  close(pair[1]);
  if (open_fds() != before) std::abort();  // a descriptor leaked
  return 0;
}
