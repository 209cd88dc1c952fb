#include "transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../system_error.hpp"
#include "bytes.hpp"

namespace cumem::core {
namespace {

constexpr char kMagic[8] = {'C', 'U', 'M', 'E', 'M', 'M', 'S', 'G'};
constexpr uint16_t kVersion = 1;
constexpr size_t kMaxMessageSize =
    kIpcMessageHeaderSize + kIpcMaxMessageDescriptors * kIpcDescriptorSize;
// Room for this many fds in one recvmsg: a message carries at most one, but
// a faulty peer's extra fds must arrive (and be closed) rather than be cut
// off by MSG_CTRUNC before we can count them.
constexpr size_t kFdsPerReceive = 8;

std::string progress(size_t done, size_t total) {
  return " after " + std::to_string(done) + " of " + std::to_string(total) + " bytes";
}

// A failed sendmsg/recvmsg, with the status its errno deserves.
[[noreturn]] void system_fail(const char* doing, int error, size_t done, size_t total) {
  const std::string text = std::string(doing) + ": ";
  const std::string where = progress(done, total);
  switch (error) {
    case EPIPE:
    case ECONNRESET:
      fail(Status::invalid_state, text + "the peer closed the connection" + where + " (" +
                                      std::strerror(error) + ")");
    case EMSGSIZE:
      fail(Status::invalid_argument, text + "the message of " + std::to_string(total) +
                                         " bytes is too large for this socket's buffer (" +
                                         std::strerror(error) + ")");
    case EBADF:
    case ENOTSOCK:
    case ENOTCONN:
    case EINVAL:
    case EFAULT:
      fail(Status::invalid_argument, text + std::strerror(error) + where);
    default:
      fail(Status::invalid_state, text + std::strerror(error) + where);
  }
}

// The socket must be a Unix domain socket that keeps messages in order and
// whole: SOCK_STREAM (framed by the header) or SOCK_SEQPACKET (one record
// per message). Returns its type.
int socket_type(int socket, const char* doing) {
  int type = 0, domain = 0;
  socklen_t type_size = sizeof type, domain_size = sizeof domain;
  if (getsockopt(socket, SOL_SOCKET, SO_TYPE, &type, &type_size) != 0 ||
      getsockopt(socket, SOL_SOCKET, SO_DOMAIN, &domain, &domain_size) != 0)
    fail(Status::invalid_argument, std::string(doing) + ": fd " + std::to_string(socket) +
                                       " is not a socket (" + std::strerror(errno) + ")");
  if (domain != AF_UNIX)
    fail(Status::invalid_argument, std::string(doing) + ": socket " + std::to_string(socket) +
                                       " is not a Unix domain socket (address family " +
                                       std::to_string(domain) + ")");
  if (type != SOCK_STREAM && type != SOCK_SEQPACKET)
    fail(Status::invalid_argument,
         std::string(doing) + ": socket " + std::to_string(socket) + " has type " +
             std::to_string(type) + "; IPC messages need SOCK_STREAM or SOCK_SEQPACKET");
  return type;
}

// Called on EAGAIN. A non-blocking socket is waited on, so a message is
// never left half sent or half read; on a blocking socket EAGAIN means its
// SO_SNDTIMEO / SO_RCVTIMEO expired, which is the caller's limit: an error.
void wait_ready(int socket, short events, const char* doing, size_t done, size_t total) {
  const int flags = fcntl(socket, F_GETFL);
  if (flags >= 0 && !(flags & O_NONBLOCK))
    fail(Status::invalid_state, std::string(doing) + ": the socket's timeout (" +
                                    (events == POLLOUT ? "SO_SNDTIMEO" : "SO_RCVTIMEO") +
                                    ") expired" + progress(done, total));
  pollfd p{socket, events, 0};
  while (poll(&p, 1, -1) < 0)
    if (errno != EINTR) system_fail(doing, errno, done, total);
}

// Every fd that arrived while receiving one message. The first is kept for
// the caller; any more are closed at once; the kept one is closed too unless
// released, so an error thrown anywhere leaks none.
class ArrivedFds {
 public:
  ArrivedFds() = default;
  ArrivedFds(const ArrivedFds&) = delete;
  ArrivedFds& operator=(const ArrivedFds&) = delete;
  ~ArrivedFds() {
    if (first_ >= 0) ::close(first_);
  }
  void add(int fd) {
    if (first_ < 0) first_ = fd;
    else ::close(fd);
    ++count_;
  }
  size_t count() const { return count_; }
  int release() {
    const int fd = first_;
    first_ = -1;
    return fd;
  }

 private:
  int first_ = -1;
  size_t count_ = 0;
};

// One recvmsg into `buffer` (retried on EINTR, waited on EAGAIN): returns the
// bytes read, 0 if the peer closed. Collects SCM_RIGHTS fds into `fds`.
size_t receive_some(int socket, uint8_t* buffer, size_t length, ArrivedFds& fds, size_t done,
                    size_t total) {
  const char* doing = "receiving an IPC message";
  for (;;) {
    iovec iov{buffer, length};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdsPerReceive)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait_ready(socket, POLLIN, doing, done, total);
        continue;
      }
      system_fail(doing, errno, done, total);
    }
    // Take the fds before any check, so that a failed check closes them.
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n_fds; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.add(fd);
      }
    }
    if (msg.msg_flags & MSG_CTRUNC) {
      // Checked before the read began (check_room_for_fd); another thread
      // may have used the last slot since.
      if (out_of_file_descriptors())
        fail(Status::out_of_resources,
             std::string(doing) + ": the kernel dropped its file descriptor, this process has no "
                                  "file descriptor left (" + file_descriptor_limit() + ")" +
                 progress(done, total));
      fail(Status::invalid_argument,
           std::string(doing) + ": more ancillary data arrived than one file descriptor; the "
                                "kernel cut it off (MSG_CTRUNC)" + progress(done, total));
    }
    if (msg.msg_flags & MSG_TRUNC)  // only a SOCK_SEQPACKET record can be cut
      fail(Status::invalid_argument, std::string(doing) + ": a record larger than " +
                                         std::to_string(length) +
                                         " bytes, the largest IPC message, arrived");
    return static_cast<size_t>(n);
  }
}

// Before a message is read: a file descriptor that comes with it needs a
// free slot in this process, or the kernel drops it and the message loses
// its handle. Peeks at the message (nothing is consumed; a peeked fd is
// installed, and closed here) and, when the fd could not be installed for
// want of a slot, fails with out_of_resources leaving the message unread,
// so that the caller can close some file descriptors and receive it again.
void check_room_for_fd(int socket) {
  const char* doing = "receiving an IPC message";
  for (;;) {
    uint8_t byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdsPerReceive)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(socket, &msg, MSG_PEEK | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait_ready(socket, POLLIN, doing, 0, kIpcMessageHeaderSize);
        continue;
      }
      return;  // the read itself reports it
    }
    ArrivedFds peeked;  // closed when this returns
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n_fds; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        peeked.add(fd);
      }
    }
    if ((msg.msg_flags & MSG_CTRUNC) && out_of_file_descriptors())
      fail(Status::out_of_resources,
           std::string(doing) + ": its file descriptor cannot be received, this process has no "
                                "file descriptor left (" + file_descriptor_limit() +
               "); the message was left unread: close some file descriptors and receive again");
    return;
  }
}

// Reads bytes [from, to) of a message of `total` bytes on a stream socket.
void receive_exactly(int socket, uint8_t* message, size_t from, size_t to, size_t total,
                     ArrivedFds& fds) {
  while (from < to) {
    const size_t n = receive_some(socket, message + from, to - from, fds, from, total);
    if (n == 0)
      fail(Status::invalid_state, "receiving an IPC message: the peer closed the connection" +
                                      progress(from, total));
    from += n;
  }
}

// Checks the header; returns the count of descriptors that follow it.
uint32_t parse_header(const uint8_t* h, uint32_t max_count, bool& has_fd) {
  const std::string doing = "receiving an IPC message: ";
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0)
    fail(Status::invalid_argument,
         doing + "not a libcumem IPC message: it does not begin with \"CUMEMMSG\"");
  if (get_le<uint16_t>(h + 8) != kVersion)
    fail(Status::invalid_argument, doing + "message format version " + std::to_string(get_le<uint16_t>(h + 8)) +
                                       "; this libcumem reads version " + std::to_string(kVersion));
  const uint32_t count = get_le<uint16_t>(h + 10);
  if (count > max_count)
    fail(Status::invalid_argument, doing + "the message holds " + std::to_string(count) +
                                       " descriptors, more than the " + std::to_string(max_count) +
                                       " expected");
  if (h[12] > 1)
    fail(Status::invalid_argument,
         doing + "the header's has_fd byte is " + std::to_string(h[12]) + "; it must be 0 or 1");
  if (h[13] != 0 || h[14] != 0 || h[15] != 0)
    fail(Status::invalid_argument, doing + "the header's padding bytes 13..15 are not zero");
  has_fd = h[12] == 1;
  return count;
}

}  // namespace

void send_message(int socket, int fd, const uint8_t* descriptors, uint32_t count) {
  const char* doing = "sending an IPC message";
  if (count > kIpcMaxMessageDescriptors)
    fail(Status::invalid_argument, std::string(doing) + ": " + std::to_string(count) +
                                       " descriptors; a message holds at most " +
                                       std::to_string(kIpcMaxMessageDescriptors));
  if (count > 0 && descriptors == nullptr)
    fail(Status::invalid_argument,
         std::string(doing) + ": descriptors is NULL for " + std::to_string(count) + " descriptors");
  if (fd < -1 || (fd >= 0 && fcntl(fd, F_GETFD) < 0))
    fail(Status::invalid_argument, std::string(doing) + ": fd " + std::to_string(fd) +
                                       " to pass is not an open file descriptor (-1: none)");
  socket_type(socket, doing);

  std::vector<uint8_t> message(kIpcMessageHeaderSize + size_t{count} * kIpcDescriptorSize);
  std::memcpy(message.data(), kMagic, sizeof kMagic);
  put_le<uint16_t>(message.data() + 8, kVersion);
  put_le<uint16_t>(message.data() + 10, static_cast<uint16_t>(count));
  message[12] = fd >= 0 ? 1 : 0;
  if (count > 0)
    std::memcpy(message.data() + kIpcMessageHeaderSize, descriptors,
                size_t{count} * kIpcDescriptorSize);

  // A SOCK_SEQPACKET sendmsg sends all or nothing, so this loop runs once
  // there; on SOCK_STREAM it continues after partial writes. The fd goes with
  // the first bytes only.
  size_t sent = 0;
  while (sent < message.size()) {
    iovec iov{message.data() + sent, message.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (sent == 0 && fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    // MSG_NOSIGNAL: a closed peer is EPIPE, not a SIGPIPE that kills the process.
    const ssize_t n = sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_ready(socket, POLLOUT, doing, sent, message.size());
    } else {
      system_fail(doing, n < 0 ? errno : EIO, sent, message.size());
    }
  }
}

ReceivedMessage receive_message(int socket, uint32_t max_count) {
  const char* doing = "receiving an IPC message";
  const int type = socket_type(socket, doing);
  if (max_count > kIpcMaxMessageDescriptors) max_count = kIpcMaxMessageDescriptors;

  check_room_for_fd(socket);
  ArrivedFds fds;
  std::vector<uint8_t> message;
  uint32_t count = 0;
  bool has_fd = false;
  if (type == SOCK_SEQPACKET) {
    // One record is one message: read it whole, in a buffer for the largest.
    message.resize(kMaxMessageSize);
    const size_t n =
        receive_some(socket, message.data(), message.size(), fds, 0, kIpcMessageHeaderSize);
    if (n == 0)
      fail(Status::invalid_state, std::string(doing) + ": the peer closed the connection" +
                                      progress(0, kIpcMessageHeaderSize));
    if (n < kIpcMessageHeaderSize)
      fail(Status::invalid_argument, std::string(doing) + ": a record of " + std::to_string(n) +
                                         " bytes is shorter than the 16-byte message header");
    count = parse_header(message.data(), kIpcMaxMessageDescriptors, has_fd);
    const size_t expected = kIpcMessageHeaderSize + size_t{count} * kIpcDescriptorSize;
    if (n != expected)
      fail(Status::invalid_argument, std::string(doing) + ": the header announces " +
                                         std::to_string(count) + " descriptors (" +
                                         std::to_string(expected) + " bytes) but the record has " +
                                         std::to_string(n) + " bytes");
  } else {
    // A stream: the header, then exactly the bytes it announces, so the next
    // message stays unread.
    message.resize(kIpcMessageHeaderSize);
    receive_exactly(socket, message.data(), 0, kIpcMessageHeaderSize, kIpcMessageHeaderSize, fds);
    count = parse_header(message.data(), kIpcMaxMessageDescriptors, has_fd);
    const size_t total = kIpcMessageHeaderSize + size_t{count} * kIpcDescriptorSize;
    message.resize(total);
    receive_exactly(socket, message.data(), kIpcMessageHeaderSize, total, total, fds);
  }
  // Checked once the whole message is read, so that a refused message does
  // not leave the rest of it to be read as the next one.
  if (count > max_count)
    fail(Status::invalid_argument, std::string(doing) + ": the message holds " +
                                       std::to_string(count) + " descriptors, more than the " +
                                       std::to_string(max_count) + " expected (it was read whole "
                                       "and dropped)");

  if (has_fd && fds.count() == 0)
    fail(Status::invalid_argument,
         std::string(doing) + ": the header announces a file descriptor but none arrived");
  if (!has_fd && fds.count() != 0)
    fail(Status::invalid_argument, std::string(doing) + ": " + std::to_string(fds.count()) +
                                       " file descriptor(s) arrived with a message that "
                                       "announces none; closed them");
  if (fds.count() > 1)
    fail(Status::invalid_argument, std::string(doing) + ": " + std::to_string(fds.count()) +
                                       " file descriptors arrived with a message that announces "
                                       "one; closed them");

  ReceivedMessage out;
  out.descriptors.resize(count);
  for (uint32_t i = 0; i < count; ++i)
    std::memcpy(out.descriptors[i].data(),
                message.data() + kIpcMessageHeaderSize + size_t{i} * kIpcDescriptorSize,
                kIpcDescriptorSize);
  out.fd = fds.release();  // last: nothing after this can throw
  return out;
}

namespace {

// The NSpid line of a /proc/<pid>/status file: the process's pid in each
// PID namespace, from /proc's to its own; empty when unreadable.
std::vector<long> namespace_pids(const std::string& status_path) {
  std::ifstream in(status_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::vector<long> pids;
    long v = 0;
    while (fields >> v) pids.push_back(v);
    return pids;
  }
  return {};
}

// What to do instead, for every refusal that PID namespaces can explain.
constexpr const char* kAcrossNamespaces =
    "; a process in another PID namespace (another container) is not reachable by pid: "
    "send the file descriptor over a Unix socket instead (cumem_ipc_send and cumem_ipc_receive "
    "work across PID namespaces)";

// Refuses `pid` when /proc says that it is not the process that calls
// itself `exporter_pid`: the same number names different processes in
// different PID namespaces. /proc/<pid>/status's NSpid lists the process's
// pid in each namespace from /proc's to its own; the last is what its
// getpid() said when it exported. Skipped when /proc is not of this
// process's namespace (a new namespace without a new /proc) or says nothing.
void check_exporter(int pid, uint32_t exporter_pid, const std::string& what) {
  const std::vector<long> self = namespace_pids("/proc/self/status");
  if (self.empty() || self.front() != static_cast<long>(getpid())) return;
  const std::vector<long> target = namespace_pids("/proc/" + std::to_string(pid) + "/status");
  if (target.empty()) return;  // gone, or no NSpid: pidfd_open says which
  if (target.back() == static_cast<long>(exporter_pid)) return;
  fail(Status::invalid_argument,
       what + "process " + std::to_string(pid) + " is not the process that exported the pool: "
              "the descriptor was made by pid " + std::to_string(exporter_pid) +
              " of the exporter's PID namespace, and process " + std::to_string(pid) +
              " is pid " + std::to_string(target.back()) +
              " in its own (a wrong pid, or an exporter in another PID namespace, where pids "
              "name other processes)" + kAcrossNamespaces);
}

}  // namespace

int fd_from_pid(int pid, int remote_fd, uint32_t exporter_pid) {
  const std::string what = "taking fd " + std::to_string(remote_fd) + " of process " +
                           std::to_string(pid) + ": ";
  if (pid <= 0) fail(Status::invalid_argument, what + "pid " + std::to_string(pid) + " is not a process id");
  if (remote_fd < 0)
    fail(Status::invalid_argument, what + std::to_string(remote_fd) + " is not a file descriptor");
  check_exporter(pid, exporter_pid, what);
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // close-on-exec
  if (pidfd < 0) {
    const int e = errno;
    if (e == ENOSYS) fail(Status::not_supported, what + "the kernel has no pidfd_open (Linux 5.3+)");
    if (e == EMFILE || e == ENFILE) fail_errno(e, what + "pidfd_open", Status::invalid_state);
    if (e == ESRCH)
      fail(Status::invalid_argument,
           what + "no process " + std::to_string(pid) + " in this PID namespace" + kAcrossNamespaces);
    if (e == EINVAL)
      fail(Status::invalid_argument,
           what + "pid " + std::to_string(pid) + " is not a process (a thread id?)");
    if (e == EPERM)
      fail(Status::not_supported, what + "pidfd_open is not permitted (a seccomp filter?)");
    fail(Status::invalid_state, what + "pidfd_open failed: " + std::strerror(e));
  }
  // The new fd has close-on-exec set by the kernel (pidfd_getfd(2)).
  const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0));
  const int e = errno;
  ::close(pidfd);
  if (fd >= 0) return fd;
  switch (e) {
    case ENOSYS:
      fail(Status::not_supported, what + "the kernel has no pidfd_getfd (Linux 5.6+)");
    case EPERM:
      fail(Status::not_supported,
           what + "not permitted: pidfd_getfd needs ptrace permission over the process (the same "
                  "user and /proc/sys/kernel/yama/ptrace_scope 0, or the exporter allowing it "
                  "with prctl(PR_SET_PTRACER), or CAP_SYS_PTRACE), or a seccomp filter forbids "
                  "it" + kAcrossNamespaces);
    case ESRCH:
      fail(Status::invalid_argument,
           what + "no process " + std::to_string(pid) + " in this PID namespace (it exited)");
    case EBADF:
      fail(Status::invalid_argument, what + "process " + std::to_string(pid) + " has no open fd " +
                                         std::to_string(remote_fd));
    case EMFILE:
    case ENFILE:
      fail_errno(e, what + "pidfd_getfd", Status::invalid_state);
    default:
      fail(Status::invalid_state, what + "pidfd_getfd failed: " + std::strerror(e));
  }
#else
  fail(Status::not_supported, what + "this libcumem was built without pidfd_getfd (the C "
                                     "library's headers lack SYS_pidfd_getfd)");
#endif
}

}  // namespace cumem::core
