// cuda.core's IPC model with libcumem's C++ facade: a producer process
// shares a buffer of an IPC-enabled device pool with a consumer process,
// which checks it, writes a reply, and orders that reply before the
// producer's read with an interprocess event. Exits non-zero on any error or
// mismatch, and with 77 (what test harnesses read as "skipped") where there
// is no GPU.
//
// One program, two roles: the producer forks the consumer BEFORE any
// libcumem call that touches the driver (Device::count() does), because a
// child must not inherit an initialised CUDA driver. They talk over one Unix
// stream socket:
//   consumer -> producer  1 byte: 'R' (ready: it has a device) or 'S' (skip)
//   producer -> consumer  cumem::ipc_send: the pool's allocation handle (its
//                         file descriptor travels as SCM_RIGHTS) and the
//                         buffer's descriptor
//   producer -> consumer  the 64 bytes of the event's handle, written as is
//   consumer -> producer  1 byte 'D': the reply is queued, the event recorded
// The producer frees its buffer only after the consumer has exited.
#include <cumem/cumem.hpp>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace {

constexpr size_t kBytes = 1u << 20;
constexpr uint32_t kRequest = 0xc0ffee01u;  // the producer's pattern, one word repeated
constexpr uint32_t kReply = 0x5eed0002u;    // the consumer's reply

const char* role = "producer";  // "consumer" in the child

// Sends all n bytes. MSG_NOSIGNAL: a closed peer is EPIPE, not a SIGPIPE
// that kills the process.
void send_all(int socket, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t sent = send(socket, p, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    p += sent;
    n -= static_cast<size_t>(sent);
  }
}

// Receives exactly n bytes.
void receive_all(int socket, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = read(socket, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) throw std::runtime_error("read: the other process closed the connection");
    if (got < 0) throw std::runtime_error(std::string("read: ") + std::strerror(errno));
    p += got;
    n -= static_cast<size_t>(got);
  }
}

// Whether a driver and a device are there; prints why not.
bool have_device() {
  try {
    if (cumem::Device::count() > 0) return true;
    std::printf("%s: no CUDA device to run on (the driver reports none)\n", role);
  } catch (const cumem::Error& e) {
    std::printf("%s: no CUDA device to run on (%s)\n", role, e.what());
  }
  return false;
}

// Copies `buffer` to a zeroed host buffer (so a copy that did not happen
// cannot pass; copy_to also checks the sizes), checks that every word is
// `value` and prints the check.
bool check_words(const char* what, const cumem::Buffer& buffer, const cumem::Stream& stream,
                 uint32_t value) {
  const cumem::Buffer host = cumem::Resource::host().allocate(kBytes);
  host.zero();
  buffer.copy_to(host, stream);
  stream.synchronize();
  const uint32_t* words = host.data<uint32_t>();
  for (size_t i = 0; i < kBytes / 4; ++i) {
    if (words[i] != value) {
      std::printf("%s: %s: MISMATCH at word %zu: 0x%08x, expected 0x%08x\n", role, what, i,
                  words[i], value);
      return false;
    }
  }
  std::printf("%s: %s: OK (%zu words of 0x%08x)\n", role, what, kBytes / 4, value);
  return true;
}

int consumer(int socket) {
  if (!have_device()) {
    // The producer skips too; it may have gone already (no device there
    // either), so a failure to tell it is not reported.
    (void)send(socket, "S", 1, MSG_NOSIGNAL);
    return 77;
  }
  send_all(socket, "R", 1);
  const cumem::IpcMessage message = cumem::ipc_receive(socket, 1);
  if (!message.handle || message.descriptors.size() != 1)
    throw std::runtime_error("expected an allocation handle and 1 descriptor, got " +
                             std::string(message.handle ? "a handle" : "no handle") + " and " +
                             std::to_string(message.descriptors.size()));
  cumem::IpcEventHandle event_handle{};
  receive_all(socket, event_handle.bytes, sizeof event_handle.bytes);

  const cumem::Device device = cumem::Device::get(0);
  const cumem::Stream stream = cumem::Stream::create(device);
  const cumem::Resource pool = cumem::Resource::from_allocation_handle(device, message.handle);
  const cumem::Buffer shared =
      cumem::Buffer::from_ipc_descriptor(pool, message.descriptors[0], stream);
  if (!check_words("the producer's pattern", shared, stream, kRequest)) return 1;

  // The reply, then the producer's event recorded after it on this stream:
  // the producer's stream waits on that event before reading.
  shared.fill_value(kReply, stream);
  const cumem::Event event = cumem::Event::from_ipc_handle(device, event_handle);
  event.record(stream);
  send_all(socket, "D", 1);
  shared.close(stream);  // unmaps here; never frees the producer's memory
  stream.synchronize();  // finish this process's queued work before it exits
  std::printf("consumer: reply written, event recorded\n");
  return 0;
}

// The consumer as the producer sees it. finish() closes the socket (a
// consumer still waiting for a message sees the end) and waits for the
// consumer to exit; it returns the exit code, -1 if it did not exit normally.
class ConsumerProcess {
 public:
  ConsumerProcess(int socket, pid_t pid) : socket_(socket), pid_(pid) {}
  ConsumerProcess(const ConsumerProcess&) = delete;
  ConsumerProcess& operator=(const ConsumerProcess&) = delete;
  ~ConsumerProcess() { finish(); }
  int socket() const { return socket_; }
  int finish() {
    if (socket_ >= 0) ::close(std::exchange(socket_, -1));
    if (pid_ <= 0) return code_;
    int status = 0;
    pid_t waited;
    while ((waited = waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    if (waited == pid_ && WIFEXITED(status)) code_ = WEXITSTATUS(status);
    else
      std::fprintf(stderr, "producer: the consumer did not exit normally (%s)\n",
                   waited != pid_ ? std::strerror(errno) : "a signal ended it");
    pid_ = -1;
    return code_;
  }

 private:
  int socket_;
  pid_t pid_;
  int code_ = -1;
};

int producer(ConsumerProcess& consumer) {
  if (!have_device()) return 77;  // the caller's finish() waits for the consumer
  char byte = 0;
  receive_all(consumer.socket(), &byte, 1);
  if (byte == 'S') {
    std::printf("producer: the consumer found no CUDA device; skipping\n");
    return 77;
  }
  if (byte != 'R') throw std::runtime_error("byte " + std::to_string(byte) + ", expected 'R' or 'S'");

  const cumem::Device device = cumem::Device::get(0);
  const cumem::Stream stream = cumem::Stream::create(device);
  cumem_pool_options_t pool_options = cumem::pool_options();
  pool_options.new_pool = CUMEM_TRUE;  // only a new pool can be IPC-enabled
  pool_options.ipc_enabled = CUMEM_TRUE;
  const cumem::Resource pool = cumem::Resource::device(device, pool_options);
  const cumem::Buffer shared = pool.allocate(kBytes, stream);
  // Declared after `shared`, so destroyed before it on every way out: the
  // consumer has exited before the memory it maps is freed.
  struct ConsumerFirst {
    ConsumerProcess& consumer;
    ~ConsumerFirst() { consumer.finish(); }
  } consumer_first{consumer};

  shared.fill_value(kRequest, stream);
  stream.synchronize();  // the pattern is there before the consumer looks
  const cumem::Event event = cumem::Event::create_interprocess(device);  // no timing

  cumem::ipc_send(consumer.socket(), pool.get_allocation_handle(), {shared.get_ipc_descriptor()});
  const cumem::IpcEventHandle event_handle = event.get_ipc_handle();
  send_all(consumer.socket(), event_handle.bytes, sizeof event_handle.bytes);
  std::printf("producer: sent the pool, the buffer's descriptor and the event's handle\n");

  receive_all(consumer.socket(), &byte, 1);
  if (byte != 'D') throw std::runtime_error("the consumer stopped before it was done");
  stream.wait(event);  // the read below runs after the consumer's reply
  const bool ok = check_words("the consumer's reply", shared, stream, kReply);

  const int consumer_code = consumer.finish();  // main() reports a non-zero code
  shared.close(stream);
  stream.synchronize();
  return ok && consumer_code == 0 ? 0 : 1;
}

// Runs one role; cumem::Error and other failures print and give 1.
template <class Fn>
int run_role(Fn&& fn) {
  try {
    return fn();
  } catch (const cumem::Error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", role, cumem::status_string(e.status()), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", role, e.what());
  }
  return 1;
}

}  // namespace

int main() {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) {
    std::fprintf(stderr, "socketpair: %s\n", std::strerror(errno));
    return 1;
  }
  std::fflush(stdout);  // nothing buffered is printed twice
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    role = "consumer";
    ::close(sockets[0]);
    const int code = run_role([&] { return consumer(sockets[1]); });
    ::close(sockets[1]);
    return code;
  }
  ::close(sockets[1]);
  ConsumerProcess consumer(sockets[0], pid);
  const int code = run_role([&] { return producer(consumer); });
  const int consumer_code = consumer.finish();  // waits, unless the producer did
  if (code == 1 && consumer_code > 0)
    std::fprintf(stderr, "producer: the consumer exited with %d\n", consumer_code);
  if (code != 77)
    std::printf("%s\n", code == 0 ? "ipc_producer_consumer: all checks passed"
                                  : "ipc_producer_consumer: FAILED");
  return code;
}
