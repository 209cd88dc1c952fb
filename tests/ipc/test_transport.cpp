// Passing descriptors and file descriptors over Unix sockets: every message
// shape on SOCK_STREAM and SOCK_SEQPACKET, another process at the far end,
// malformed and cut-off messages (clean errors, no fd leaked), and
// fd_from_pid.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "error.hpp"
#include "ipc/descriptor.hpp"
#include "ipc/transport.hpp"

using cumem::core::Error;
using cumem::core::IpcDescriptor;
using cumem::core::IpcType;
using cumem::core::kIpcDescriptorSize;
using cumem::core::ReceivedMessage;
using cumem::core::receive_message;
using cumem::core::send_message;
using cumem::core::Status;

namespace {

using Bytes = std::vector<uint8_t>;

#define EXPECT_HAS(text, fragment) \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) << "message: " << (text)

int open_fd_count() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

struct SocketPair {
  int a = -1, b = -1;
  explicit SocketPair(int type) {
    int fds[2];
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) == 0) a = fds[0], b = fds[1];
  }
  ~SocketPair() {
    close_a();
    close_b();
  }
  void close_a() {
    if (a >= 0) ::close(a);
    a = -1;
  }
  void close_b() {
    if (b >= 0) ::close(b);
    b = -1;
  }
};

int make_memfd(const char* content = "") {
  const int fd = memfd_create("cumem-ipc-test", MFD_CLOEXEC);
  if (fd >= 0 && content[0] != '\0') {
    if (::write(fd, content, std::strlen(content)) < 0) return -1;
  }
  return fd;
}

bool same_file(int x, int y) {
  struct stat sx {}, sy{};
  return fstat(x, &sx) == 0 && fstat(y, &sy) == 0 && sx.st_ino == sy.st_ino &&
         sx.st_dev == sy.st_dev;
}

// `count` valid, distinct encoded descriptors, back to back.
Bytes descriptors(uint32_t count) {
  Bytes out(size_t{count} * kIpcDescriptorSize);
  for (uint32_t i = 0; i < count; ++i) {
    IpcDescriptor d;
    d.type = IpcType::host_shared_buffer;
    d.memory_kind = cumem::core::MemoryKind::host;
    d.size = i + 1;
    d.offset = 4096 * i;
    d.pool_id.fill(0x5a);
    d.exporter_pid = static_cast<uint32_t>(getpid());
    uint8_t bytes[kIpcDescriptorSize];
    cumem::core::encode(d, bytes);
    std::memcpy(out.data() + size_t{i} * kIpcDescriptorSize, bytes, kIpcDescriptorSize);
  }
  return out;
}

// A message header written by hand (the layout in transport.hpp).
Bytes header(uint16_t count, uint8_t has_fd, const char* magic = "CUMEMMSG", uint16_t version = 1) {
  Bytes h(16, 0);
  std::memcpy(h.data(), magic, 8);
  h[8] = static_cast<uint8_t>(version);
  h[9] = static_cast<uint8_t>(version >> 8);
  h[10] = static_cast<uint8_t>(count);
  h[11] = static_cast<uint8_t>(count >> 8);
  h[12] = has_fd;
  return h;
}

// One sendmsg of `bytes` with `fds` attached: the test's own sender, for
// messages send_message would never write.
void raw_send(int socket, const Bytes& bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * (fds.empty() ? 1 : fds.size())));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ASSERT_EQ(sendmsg(socket, &msg, MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()))
      << std::strerror(errno);
}

// The Error that `f` throws, as "status: message"; fails the test if none.
struct Failure {
  Status status = Status::success;
  std::string message;
};
Failure failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.status(), e.what()};
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

class Transport : public ::testing::TestWithParam<int> {};

INSTANTIATE_TEST_SUITE_P(Sockets, Transport, ::testing::Values(SOCK_STREAM, SOCK_SEQPACKET),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == SOCK_STREAM ? "stream" : "seqpacket";
                         });

TEST_P(Transport, EveryMessageShapeArrivesWhole) {
  for (uint32_t count : {0u, 1u, 7u, 1024u}) {
    for (bool with_fd : {false, true}) {
      SCOPED_TRACE("count " + std::to_string(count) + (with_fd ? " with fd" : " without fd"));
      SocketPair s(GetParam());
      ASSERT_GE(s.a, 0);
      const int memfd = with_fd ? make_memfd() : -1;
      const Bytes sent = descriptors(count);
      // A sender thread: 1024 descriptors are more than a socket buffers.
      std::string send_error;
      std::thread sender([&] {
        try {
          send_message(s.a, memfd, sent.data(), count);
        } catch (const Error& e) {
          send_error = e.what();
        }
      });
      const ReceivedMessage m = receive_message(s.b, 1024);
      sender.join();
      ASSERT_EQ(send_error, "");
      ASSERT_EQ(m.descriptors.size(), count);
      for (uint32_t i = 0; i < count; ++i)
        ASSERT_EQ(0, std::memcmp(m.descriptors[i].data(), sent.data() + i * kIpcDescriptorSize,
                                 kIpcDescriptorSize));
      if (with_fd) {
        ASSERT_GE(m.fd, 0);
        EXPECT_NE(m.fd, memfd);
        EXPECT_TRUE(same_file(m.fd, memfd));
        EXPECT_TRUE(fcntl(m.fd, F_GETFD) & FD_CLOEXEC);
        ::close(m.fd);
        ::close(memfd);
      } else {
        EXPECT_EQ(m.fd, -1);
      }
    }
  }
}

TEST_P(Transport, MessagesStayFramedOneAfterAnother) {
  SocketPair s(GetParam());
  const int memfd = make_memfd();
  const Bytes two = descriptors(2), three = descriptors(3);
  send_message(s.a, memfd, two.data(), 2);
  send_message(s.a, -1, three.data(), 3);
  send_message(s.a, memfd, nullptr, 0);
  ReceivedMessage m1 = receive_message(s.b, 8), m2 = receive_message(s.b, 8),
                  m3 = receive_message(s.b, 8);
  EXPECT_EQ(m1.descriptors.size(), 2u);
  EXPECT_TRUE(same_file(m1.fd, memfd));
  EXPECT_EQ(m2.descriptors.size(), 3u);
  EXPECT_EQ(m2.fd, -1);
  EXPECT_EQ(0, std::memcmp(m2.descriptors[2].data(), three.data() + 2 * kIpcDescriptorSize,
                           kIpcDescriptorSize));
  EXPECT_EQ(m3.descriptors.size(), 0u);
  EXPECT_TRUE(same_file(m3.fd, memfd));
  ::close(m1.fd);
  ::close(m3.fd);
  ::close(memfd);
}

TEST_P(Transport, AChildReceivesTheFdAndWritesThroughIt) {
  SocketPair s(GetParam());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child: no gtest here; the exit code says what went wrong.
    s.close_a();
    int code = 0;
    try {
      const ReceivedMessage m = receive_message(s.b, 16);
      if (m.fd < 0) code = 2;
      else if (m.descriptors.size() != 3) code = 3;
      else {
        const IpcDescriptor d =
            cumem::core::decode(m.descriptors[2].data(), m.descriptors[2].size());
        const std::string text = "child saw size " + std::to_string(d.size);
        if (pwrite(m.fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
          code = 4;
      }
    } catch (const std::exception&) {
      code = 5;
    }
    _exit(code);
  }
  s.close_b();
  // Made after fork(), so the child can only have it through the socket.
  const int memfd = make_memfd();
  const Bytes sent = descriptors(3);
  send_message(s.a, memfd, sent.data(), 3);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  char buffer[64] = {};
  ASSERT_GT(pread(memfd, buffer, sizeof buffer - 1, 0), 0);
  EXPECT_STREQ(buffer, "child saw size 3");
  ::close(memfd);
}

TEST_P(Transport, PeerClosedBeforeAnyMessage) {
  SocketPair s(GetParam());
  s.close_a();
  const Failure f = failure_of([&] { receive_message(s.b, 4); });
  EXPECT_EQ(f.status, Status::invalid_state);
  EXPECT_HAS(f.message, "the peer closed the connection after 0 of 16 bytes");
}

TEST(TransportStream, PeerClosingMidMessageIsACleanErrorAndLeaksNoFd) {
  struct Cut {
    size_t bytes;
    const char* message;
  };
  // A header announcing 3 descriptors (496 bytes) with an fd, cut off.
  for (const Cut& cut : {Cut{5, "after 5 of 16 bytes"}, Cut{16, "after 16 of 496 bytes"},
                         Cut{116, "after 116 of 496 bytes"}, Cut{495, "after 495 of 496 bytes"}}) {
    SocketPair s(SOCK_STREAM);
    const int memfd = make_memfd();
    Bytes message = header(3, 1);
    const Bytes body = descriptors(3);
    message.insert(message.end(), body.begin(), body.end());
    message.resize(cut.bytes);
    raw_send(s.a, message, {memfd});
    s.close_a();
    const int before = open_fd_count();
    const Failure f = failure_of([&] { receive_message(s.b, 4); });
    EXPECT_EQ(f.status, Status::invalid_state);
    EXPECT_HAS(f.message, std::string("the peer closed the connection ") + cut.message);
    EXPECT_EQ(open_fd_count(), before) << "the fd that arrived was not closed";
    ::close(memfd);
  }
}

TEST(TransportSeqpacket, AShortRecordIsACleanErrorAndLeaksNoFd) {
  SocketPair s(SOCK_SEQPACKET);
  const int memfd = make_memfd();
  Bytes message = header(3, 1);
  const Bytes body = descriptors(1);
  message.insert(message.end(), body.begin(), body.end());
  raw_send(s.a, message, {memfd});
  raw_send(s.a, Bytes(10, 'x'), {memfd});
  const int before = open_fd_count();
  Failure f = failure_of([&] { receive_message(s.b, 4); });
  EXPECT_EQ(f.status, Status::invalid_argument);
  EXPECT_HAS(f.message, "the header announces 3 descriptors (496 bytes) but the record has 176 bytes");
  f = failure_of([&] { receive_message(s.b, 4); });
  EXPECT_HAS(f.message, "a record of 10 bytes is shorter than the 16-byte message header");
  EXPECT_EQ(open_fd_count(), before);
  ::close(memfd);
}

// Messages send_message never writes, each with an fd attached (or not) that
// must be closed by the failing receive.
struct BadMessage {
  const char* name;
  Bytes bytes;
  int fds_attached;
  const char* message;
};

TEST_P(Transport, MalformedMessagesAreRejectedAndLeakNoFd) {
  Bytes one = header(1, 1);
  const Bytes d = descriptors(1);
  one.insert(one.end(), d.begin(), d.end());
  Bytes no_fd_announced = one, bad_padding = header(0, 1);
  no_fd_announced[12] = 0;
  bad_padding[14] = 1;
  Bytes five = header(5, 1);
  const Bytes five_body = descriptors(5);
  five.insert(five.end(), five_body.begin(), five_body.end());
  const std::vector<BadMessage> cases = {
      {"bad magic", header(0, 1, "CUMEMXXX"), 1, "not a libcumem IPC message"},
      {"foreign version", header(0, 1, "CUMEMMSG", 2), 1,
       "message format version 2; this libcumem reads version 1"},
      {"count above max_count", five, 1, "the message holds 5 descriptors, more than the 4 expected"},
      {"has_fd 7", header(0, 7), 1, "has_fd byte is 7"},
      {"padding", bad_padding, 1, "padding bytes 13..15 are not zero"},
      {"fd not announced", no_fd_announced, 1,
       "1 file descriptor(s) arrived with a message that announces none"},
      {"fd announced, none sent", one, 0, "the header announces a file descriptor but none arrived"},
      {"two fds", one, 2, "2 file descriptors arrived with a message that announces one"},
      {"nine fds", one, 9, "more ancillary data arrived than one file descriptor"},
  };
  for (const BadMessage& c : cases) {
    SCOPED_TRACE(c.name);
    SocketPair s(GetParam());
    std::vector<int> fds;
    for (int i = 0; i < c.fds_attached; ++i) fds.push_back(make_memfd());
    raw_send(s.a, c.bytes, fds);
    const int before = open_fd_count();
    const Failure f = failure_of([&] { receive_message(s.b, 4); });
    EXPECT_EQ(f.status, Status::invalid_argument);
    EXPECT_HAS(f.message, c.message);
    EXPECT_EQ(open_fd_count(), before) << "an fd that arrived was not closed";
    for (int fd : fds) ::close(fd);
  }
}

TEST_P(Transport, SendingToAClosedPeerIsAnErrorNotSigpipe) {
  SocketPair s(GetParam());
  s.close_b();
  const Bytes one = descriptors(1);
  const Failure f = failure_of([&] { send_message(s.a, -1, one.data(), 1); });
  EXPECT_EQ(f.status, Status::invalid_state);
  EXPECT_HAS(f.message, "the peer closed the connection after 0 of 176 bytes");
}

TEST_P(Transport, ThousandCyclesLeakNoFd) {
  SocketPair s(GetParam());
  const int memfd = make_memfd();
  const Bytes two = descriptors(2);
  const int before = open_fd_count();
  for (int i = 0; i < 1000; ++i) {
    send_message(s.a, i % 3 == 0 ? -1 : memfd, two.data(), 2);
    const ReceivedMessage m = receive_message(s.b, 2);
    ASSERT_EQ(m.fd >= 0, i % 3 != 0);
    if (m.fd >= 0) ::close(m.fd);
  }
  EXPECT_EQ(open_fd_count(), before);
  ::close(memfd);
}

TEST_P(Transport, NonBlockingSocketsAreWaitedOn) {
  SocketPair s(GetParam());
  for (int fd : {s.a, s.b}) ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  const Bytes sent = descriptors(1024);
  size_t received = 0;
  std::string receive_error;
  std::thread receiver([&] {
    try {
      received = receive_message(s.b, 1024).descriptors.size();
    } catch (const Error& e) {
      receive_error = e.what();
    }
  });
  // Sent before and while the receiver waits: both sides meet EAGAIN.
  send_message(s.a, -1, sent.data(), 1024);
  receiver.join();
  EXPECT_EQ(receive_error, "");
  EXPECT_EQ(received, 1024u);
}

TEST_P(Transport, AnExpiredReceiveTimeoutIsNamed) {
  SocketPair s(GetParam());
  timeval timeout{0, 20000};
  ASSERT_EQ(setsockopt(s.b, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout), 0);
  const Failure f = failure_of([&] { receive_message(s.b, 1); });
  EXPECT_EQ(f.status, Status::invalid_state);
  EXPECT_HAS(f.message, "the socket's timeout (SO_RCVTIMEO) expired after 0 of 16 bytes");
}

TEST(TransportArguments, AreChecked) {
  SocketPair s(SOCK_STREAM);
  const Bytes many = descriptors(1025);
  Failure f = failure_of([&] { send_message(s.a, -1, many.data(), 1025); });
  EXPECT_HAS(f.message, "1025 descriptors; a message holds at most 1024");
  f = failure_of([&] { send_message(s.a, -1, nullptr, 2); });
  EXPECT_HAS(f.message, "descriptors is NULL for 2 descriptors");
  f = failure_of([&] { send_message(s.a, 999, nullptr, 0); });
  EXPECT_HAS(f.message, "fd 999 to pass is not an open file descriptor");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  f = failure_of([&] { receive_message(pipe_fds[0], 1); });
  EXPECT_EQ(f.status, Status::invalid_argument);
  EXPECT_HAS(f.message, "fd " + std::to_string(pipe_fds[0]) + " is not a socket");
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  SocketPair datagram(SOCK_DGRAM);
  f = failure_of([&] { send_message(datagram.a, -1, nullptr, 0); });
  EXPECT_HAS(f.message, "has type 2; IPC messages need SOCK_STREAM or SOCK_SEQPACKET");
}

// fd_from_pid needs Linux 5.6 and ptrace permission; where either is missing
// the test skips with the library's own reason.
#define SKIP_IF_NOT_SUPPORTED(call)                                        \
  try {                                                                    \
    call;                                                                  \
  } catch (const Error& e) {                                               \
    if (e.status() != Status::not_supported) throw;                        \
    GTEST_SKIP() << e.what();                                              \
  }

TEST(FdFromPid, TakesAnFdOfThisProcess) {
  const int memfd = make_memfd("own");
  int fd = -1;
  SKIP_IF_NOT_SUPPORTED(fd = cumem::core::fd_from_pid(getpid(), memfd, getpid()));
  ASSERT_GE(fd, 0);
  EXPECT_NE(fd, memfd);
  EXPECT_TRUE(same_file(fd, memfd));
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  ::close(fd);
  ::close(memfd);
}

TEST(FdFromPid, TakesAnFdOfAChild) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Opens a file the parent does not have, reports its number, waits.
    const int memfd = make_memfd("from the child");
    if (::write(ready[1], &memfd, sizeof memfd) != sizeof memfd) _exit(2);
    pause();
    _exit(0);
  }
  int remote = -1;
  int fd = -1;
  std::string skip;
  if (::read(ready[0], &remote, sizeof remote) != static_cast<ssize_t>(sizeof remote)) {
    ADD_FAILURE() << "the child did not report its fd";
  } else {
    try {
      fd = cumem::core::fd_from_pid(child, remote, child);
    } catch (const Error& e) {
      if (e.status() != Status::not_supported) ADD_FAILURE() << e.what();
      skip = e.what();
    }
  }
  kill(child, SIGKILL);  // in every case: the child waits in pause()
  waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_GE(fd, 0);
  char buffer[32] = {};
  ASSERT_GT(pread(fd, buffer, sizeof buffer - 1, 0), 0);
  EXPECT_STREQ(buffer, "from the child");
  ::close(fd);
}

TEST(FdFromPid, NamesAMissingProcessOrFd) {
  // A child that has exited and been reaped: its pid names no process.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  Failure f = failure_of([&] { cumem::core::fd_from_pid(child, 0, child); });
  if (f.status == Status::not_supported) GTEST_SKIP() << f.message;
  EXPECT_EQ(f.status, Status::invalid_argument);
  EXPECT_HAS(f.message, "no process " + std::to_string(child) + " in this PID namespace");
  EXPECT_HAS(f.message, "cumem_ipc_send");

  // A high number, not one just closed: fd_from_pid's own pidfd would take that.
  const int unused = 4000;
  ASSERT_EQ(fcntl(unused, F_GETFD), -1);
  f = failure_of([&] { cumem::core::fd_from_pid(getpid(), unused, getpid()); });
  EXPECT_EQ(f.status, Status::invalid_argument);
  EXPECT_HAS(f.message, "process " + std::to_string(getpid()) + " has no open fd 4000");

  f = failure_of([&] { cumem::core::fd_from_pid(0, 1, 1); });
  EXPECT_HAS(f.message, "pid 0 is not a process id");
  f = failure_of([&] { cumem::core::fd_from_pid(getpid(), -1, getpid()); });
  EXPECT_HAS(f.message, "-1 is not a file descriptor");
}

// The descriptor names the exporter by the pid it has in its own PID
// namespace; a process that /proc says has another pid there is refused
// before any fd is taken (the same number names other processes in other
// namespaces).
TEST(FdFromPid, RefusesAProcessThatIsNotTheExporter) {
  const int memfd = make_memfd("own");
  const uint32_t other = static_cast<uint32_t>(getpid()) + 1;
  Failure f = failure_of([&] { cumem::core::fd_from_pid(getpid(), memfd, other); });
  EXPECT_EQ(f.status, Status::invalid_argument);
  EXPECT_HAS(f.message, "process " + std::to_string(getpid()) +
                            " is not the process that exported the pool");
  EXPECT_HAS(f.message, "made by pid " + std::to_string(other));
  EXPECT_HAS(f.message, "another PID namespace");
  EXPECT_HAS(f.message, "cumem_ipc_send");
  ::close(memfd);
}

}  // namespace
