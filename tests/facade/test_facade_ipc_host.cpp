// The C++ facade's IPC calls without a GPU, on the host shared resource:
// export, send, receive, import and open across a fork(), and the errors
// (import twice, allocating from an import, corrupted descriptors).
#include <cumem/cumem.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "facade_util.hpp"
#include "test_util.hpp"

namespace {

constexpr uint64_t kCapacity = 1u << 20;
constexpr size_t kSmallBytes = 4096;
constexpr size_t kBigBytes = 256u << 10;
constexpr uint32_t kSmallWord = 0x5eed5eedu;

// Word i of what the parent writes, and of what the child writes back: no
// short period, and different from each other at every index.
uint32_t request_word(size_t i) { return static_cast<uint32_t>(i) * 2654435761u ^ 0xa5a5a5a5u; }
uint32_t reply_word(size_t i) { return ~request_word(i); }

bool same_bytes(const cumem::IpcDescriptor& a, const cumem::IpcDescriptor& b) {
  return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0;
}

// A connected pair of Unix stream sockets, closed on destruction.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) != 0)
      ADD_FAILURE() << "socketpair: " << std::strerror(errno);
  }
  ~SocketPair() {
    close(0);
    close(1);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
  void close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

// The child's exit code after printing why (no gtest in the child).
int child_failure(int code, const std::string& why) {
  std::fprintf(stderr, "child: check %d failed: %s\n", code, why.c_str());
  return code;
}

// The child's side of ForkedChildOpensTheBuffersAndReplies: receives the
// handle and two descriptors, imports, opens, checks, replies. Returns 0, or
// the number of the check that failed.
int child_main(int socket) {
  try {
    const cumem::IpcMessage m = cumem::ipc_receive(socket, 4);
    if (!m.handle) return child_failure(1, "no allocation handle arrived");
    if (m.descriptors.size() != 2)
      return child_failure(2, std::to_string(m.descriptors.size()) + " descriptors, expected 2");
    const cumem::Resource imported = cumem::Resource::from_allocation_handle(m.handle);
    const cumem_resource_properties_t p = imported.properties();
    if (p.kind != CUMEM_RESOURCE_HOST_SHARED || !p.is_imported || !p.host_accessible)
      return child_failure(3, "the imported resource's properties are not those of an "
                              "imported host shared resource");
    if (cumem::Resource::from_allocation_handle(m.handle).get() != imported.get())
      return child_failure(4, "a second import of the same handle gave another resource");

    const cumem::Buffer small = cumem::Buffer::from_ipc_descriptor(imported, m.descriptors[0]);
    const cumem::Buffer big = cumem::Buffer::from_ipc_descriptor(imported, m.descriptors[1]);
    if (small.size() != kSmallBytes || big.size() != kBigBytes)
      return child_failure(5, "sizes " + std::to_string(small.size()) + " and " +
                                  std::to_string(big.size()) + ", expected " +
                                  std::to_string(kSmallBytes) + " and " + std::to_string(kBigBytes));
    for (size_t i = 0; i < kSmallBytes / 4; ++i)
      if (small.data<uint32_t>()[i] != kSmallWord)
        return child_failure(6, "small buffer word " + std::to_string(i) + " differs");
    for (size_t i = 0; i < kBigBytes / 4; ++i)
      if (big.data<uint32_t>()[i] != request_word(i))
        return child_failure(7, "big buffer word " + std::to_string(i) + " differs");
    for (size_t i = 0; i < kBigBytes / 4; ++i) big.data<uint32_t>()[i] = reply_word(i);
    // Closing unmaps these views; the parent's memory stays allocated.
    big.close();
    small.close();
    return 0;
  } catch (const cumem::Error& e) {
    return child_failure(9, std::string(cumem::status_string(e.status())) + ": " + e.what());
  }
}

// Waits for `pid` and returns its exit code, or -1 (with a failure) when it
// did not exit normally.
int wait_exit_code(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r != pid) {
    ADD_FAILURE() << "waitpid: " << std::strerror(errno);
    return -1;
  }
  if (!WIFEXITED(status)) {
    ADD_FAILURE() << "the child did not exit normally (status " << status << ")";
    return -1;
  }
  return WEXITSTATUS(status);
}

class FacadeIpcHost : public ::testing::Test {
 protected:
  cumem::Resource shared = cumem::Resource::host_shared(kCapacity);
};

}  // namespace

TEST(FacadeIpcOwners, AllocationHandleIsOnePointerWideMoveOnly) {
  static_assert(sizeof(cumem::AllocationHandle) == sizeof(void*));
  static_assert(!std::is_copy_constructible_v<cumem::AllocationHandle>);
  static_assert(std::is_nothrow_move_constructible_v<cumem::AllocationHandle>);
  static_assert(std::is_same_v<cumem::IpcDescriptor, cumem_ipc_descriptor_t>);
  static_assert(std::is_same_v<cumem::IpcEventHandle, cumem_ipc_event_handle_t>);
  const cumem::AllocationHandle empty;
  EXPECT_FALSE(empty);
  EXPECT_CUMEM_THROW(empty.fd(), CUMEM_ERROR_INVALID_ARGUMENT, "handle");
  EXPECT_CUMEM_THROW(empty.descriptor(), CUMEM_ERROR_INVALID_ARGUMENT, "handle");
  EXPECT_CUMEM_THROW(cumem::Resource::from_allocation_handle(empty), CUMEM_ERROR_INVALID_ARGUMENT,
                     "handle");
  EXPECT_CUMEM_THROW(cumem::Event::create_interprocess(cumem::Device()),
                     CUMEM_ERROR_INVALID_ARGUMENT, "device");
  EXPECT_CUMEM_THROW(cumem::Event().get_ipc_handle(), CUMEM_ERROR_INVALID_ARGUMENT, "event");
  EXPECT_CUMEM_THROW(cumem::Event::from_ipc_handle(cumem::Device(), cumem::IpcEventHandle{}),
                     CUMEM_ERROR_INVALID_ARGUMENT, "device");
}

// The test the others stand on: a forked child gets the memory only through
// the socket (the resource is made after fork()), opens both buffers, checks
// them and writes a reply the parent reads.
TEST(FacadeIpcFork, ForkedChildOpensTheBuffersAndReplies) {
  SocketPair s;
  ASSERT_GE(s.fd[0], 0);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t child = fork();
  ASSERT_GE(child, 0) << "fork: " << std::strerror(errno);
  if (child == 0) {
    s.close(0);
    _exit(child_main(s.fd[1]));
  }
  s.close(1);
  struct Reap {  // reaps the child when an assertion below returns early
    pid_t pid;
    SocketPair& s;
    ~Reap() {
      s.close(0);  // a child still waiting for the message sees the end
      if (pid > 0) (void)wait_exit_code(pid);
    }
  } reap{child, s};

  // Made after fork(): the child can reach the memory only through the socket.
  const cumem::Resource shared = cumem::Resource::host_shared(kCapacity);
  const cumem::Buffer small = shared.allocate(kSmallBytes);
  const cumem::Buffer big = shared.allocate(kBigBytes);  // past `small`: a non-zero offset
  small.fill_value(kSmallWord);
  for (size_t i = 0; i < kBigBytes / 4; ++i) big.data<uint32_t>()[i] = request_word(i);
  const cumem::AllocationHandle handle = shared.get_allocation_handle();
  cumem::ipc_send(s.fd[0], handle, {small.get_ipc_descriptor(), big.get_ipc_descriptor()});

  reap.pid = -1;
  ASSERT_EQ(wait_exit_code(child), 0) << "the child's stderr says which check failed";
  size_t wrong = 0, first_wrong = 0;
  for (size_t i = 0; i < kBigBytes / 4; ++i)
    if (big.data<uint32_t>()[i] != reply_word(i) && wrong++ == 0) first_wrong = i;
  EXPECT_EQ(wrong, 0u) << "words not replied by the child, the first at index " << first_wrong;
  for (size_t i = 0; i < kSmallBytes / 4; ++i)
    ASSERT_EQ(small.data<uint32_t>()[i], kSmallWord) << "the child changed the small buffer at " << i;
  // The child's closes unmapped its views and freed nothing here.
  EXPECT_EQ(shared.statistics().live_allocations, 2u);
}

TEST_F(FacadeIpcHost, PropertiesOfTheExporterAndOfAnImport) {
  const cumem_resource_properties_t p = shared.properties();
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_HOST_SHARED);
  EXPECT_TRUE(p.ipc_enabled);
  EXPECT_TRUE(p.host_accessible);
  EXPECT_FALSE(p.is_imported);
  EXPECT_EQ(p.device_id, -1);
  const cumem::Resource imported =
      cumem::Resource::from_allocation_handle(shared.get_allocation_handle());
  EXPECT_EQ(imported.kind(), CUMEM_RESOURCE_HOST_SHARED);
  EXPECT_TRUE(imported.properties().is_imported);
  EXPECT_CUMEM_THROW(cumem::Resource::host_shared(0), CUMEM_ERROR_INVALID_ARGUMENT, "capacity");
}

TEST_F(FacadeIpcHost, ImportingOnePoolTwiceGivesTheSameResource) {
  const cumem::AllocationHandle handle = shared.get_allocation_handle();
  const cumem::Resource first = cumem::Resource::from_allocation_handle(handle);
  const cumem::Resource second = cumem::Resource::from_allocation_handle(handle);
  ASSERT_TRUE(first);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_NE(first.get(), shared.get()) << "an import is not the exporter itself";
  // A second export of the pool, and a handle rebuilt from its parts, name it too.
  const cumem::AllocationHandle again = shared.get_allocation_handle();
  EXPECT_NE(again.fd(), handle.fd());
  EXPECT_TRUE(same_bytes(again.descriptor(), handle.descriptor()));
  EXPECT_EQ(cumem::Resource::from_allocation_handle(again).get(), first.get());
  const int32_t fd = handle.dup_fd();
  ASSERT_GE(fd, 0);
  const cumem::AllocationHandle rebuilt = cumem::AllocationHandle::from_fd(handle.descriptor(), fd);
  EXPECT_EQ(rebuilt.fd(), fd) << "the rebuilt handle owns the fd given";
  EXPECT_EQ(cumem::Resource::from_allocation_handle(rebuilt).get(), first.get());
}

TEST_F(FacadeIpcHost, HandleFromPidOfThisProcess) {
  const cumem::AllocationHandle handle = shared.get_allocation_handle();
  cumem::AllocationHandle taken;
  try {
    taken = cumem::AllocationHandle::from_pid(handle.descriptor(), getpid(), handle.fd());
  } catch (const cumem::Error& e) {
    if (e.status() == CUMEM_ERROR_NOT_SUPPORTED) GTEST_SKIP() << e.what();
    throw;
  }
  EXPECT_NE(taken.fd(), handle.fd());
  EXPECT_EQ(cumem::Resource::from_allocation_handle(taken).get(),
            cumem::Resource::from_allocation_handle(handle).get());
}

TEST_F(FacadeIpcHost, AnImportedResourceCannotAllocate) {
  const cumem::Resource imported =
      cumem::Resource::from_allocation_handle(shared.get_allocation_handle());
  EXPECT_CUMEM_THROW(imported.allocate(64), CUMEM_ERROR_NOT_SUPPORTED, "cannot allocate");
  EXPECT_CUMEM_THROW(imported.allocate_raw(64), CUMEM_ERROR_NOT_SUPPORTED, "cannot allocate");
  EXPECT_EQ(imported.statistics().total_allocations, 0u);
}

TEST_F(FacadeIpcHost, ACorruptedDescriptorIsRefused) {
  const cumem::Buffer buffer = shared.allocate(kSmallBytes);
  buffer.fill_value(kSmallWord);
  const cumem::Resource imported =
      cumem::Resource::from_allocation_handle(shared.get_allocation_handle());
  const cumem::IpcDescriptor good = buffer.get_ipc_descriptor();
  {
    // Control: the unchanged descriptor opens here, through the import (a
    // mapping of its own, showing what the exporter wrote).
    const cumem::Buffer view = cumem::Buffer::from_ipc_descriptor(imported, good);
    ASSERT_EQ(view.size(), kSmallBytes);
    EXPECT_NE(view.ptr(), buffer.ptr());
    EXPECT_EQ(std::memcmp(view.ptr(), buffer.ptr(), kSmallBytes), 0);
  }
  // Bytes 0..9 are the magic and the version, refused by their own checks;
  // every later byte is covered by the CRC.
  for (size_t i = 10; i < CUMEM_IPC_DESCRIPTOR_SIZE; ++i) {
    cumem::IpcDescriptor bad = good;
    bad.bytes[i] ^= 0x01u;
    EXPECT_CUMEM_THROW(cumem::Buffer::from_ipc_descriptor(imported, bad),
                       CUMEM_ERROR_INVALID_ARGUMENT, "corrupted");
  }
  cumem::IpcDescriptor foreign = good;
  foreign.bytes[0] ^= 0x01u;
  EXPECT_CUMEM_THROW(cumem::Buffer::from_ipc_descriptor(imported, foreign),
                     CUMEM_ERROR_INVALID_ARGUMENT, "CUMEMIPC");

  // A corrupted pool descriptor: from_fd throws and the fd stays the caller's.
  const cumem::AllocationHandle handle = shared.get_allocation_handle();
  cumem::IpcDescriptor bad_pool = handle.descriptor();
  bad_pool.bytes[20] ^= 0x80u;
  const int32_t fd = handle.dup_fd();
  ASSERT_GE(fd, 0);
  EXPECT_CUMEM_THROW(cumem::AllocationHandle::from_fd(bad_pool, fd), CUMEM_ERROR_INVALID_ARGUMENT,
                     "corrupted");
  EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC) << "the fd must still be open (and close-on-exec)";
  ::close(fd);
  EXPECT_EQ(imported.statistics().live_allocations, 0u) << "no refused descriptor was opened";
}

TEST_F(FacadeIpcHost, TheExporterRefusesItsOwnDescriptors) {
  const cumem::Buffer buffer = shared.allocate(64);
  EXPECT_CUMEM_THROW(cumem::Buffer::from_ipc_descriptor(shared, buffer.get_ipc_descriptor()),
                     CUMEM_ERROR_INVALID_ARGUMENT, "this very resource");
}

TEST_F(FacadeIpcHost, ResourcesWithoutIpcCannotShare) {
  const cumem::Resource host = cumem::Resource::host();
  EXPECT_CUMEM_THROW(host.get_allocation_handle(), CUMEM_ERROR_NOT_SUPPORTED, "ipc_enabled");
  const cumem::Buffer b = host.allocate(64);
  EXPECT_CUMEM_THROW(b.get_ipc_descriptor(), CUMEM_ERROR_NOT_SUPPORTED, "");
  const cumem::Buffer empty = shared.allocate(0);
  EXPECT_CUMEM_THROW(empty.get_ipc_descriptor(), CUMEM_ERROR_INVALID_ARGUMENT, "empty");
  // Native allocations: the same refusals, and a cache over a resource
  // without IPC has nothing to share its small blocks as.
  void* p = host.allocate_native(64);
  EXPECT_CUMEM_THROW(host.ipc_descriptor_native(p, 64), CUMEM_ERROR_NOT_SUPPORTED, "");
  EXPECT_CUMEM_THROW(cumem::VirtualIpcHandle::of_native(host, p), CUMEM_ERROR_NOT_SUPPORTED,
                     "virtual IPC handles");
  host.deallocate_native(p, 64);
  const cumem::Resource cache = cumem::Resource::caching(host);
  void* q = cache.allocate_native(4096);
  EXPECT_CUMEM_THROW(cache.ipc_descriptor_native(q), CUMEM_ERROR_NOT_SUPPORTED,
                     "does not take part in IPC");
  EXPECT_CUMEM_THROW(cumem::VirtualIpcHandle::of_native(cache, q), CUMEM_ERROR_NOT_SUPPORTED,
                     "is not expandable");
  cache.deallocate_native(q, 4096);
  EXPECT_CUMEM_THROW(cumem::VirtualIpcHandle::from_pid({'n', 'o'}, getpid(), {}),
                     CUMEM_ERROR_INVALID_ARGUMENT, "CUMEMVMM");
}

// A native allocation of an IPC-enabled resource has a descriptor of that
// resource (which the exporter itself refuses to open, after reading it).
TEST_F(FacadeIpcHost, ANativeAllocationHasADescriptorOfItsResource) {
  void* p = shared.allocate_native(512);
  const cumem::IpcDescriptor d = shared.ipc_descriptor_native(p, 512);
  EXPECT_CUMEM_THROW(cumem::Buffer::from_ipc_descriptor(shared, d), CUMEM_ERROR_INVALID_ARGUMENT,
                     "this very resource");
  EXPECT_CUMEM_THROW(shared.ipc_descriptor_native(nullptr, 512), CUMEM_ERROR_INVALID_ARGUMENT,
                     "ptr");
  shared.deallocate_native(p, 512);
}

TEST_F(FacadeIpcHost, SendAndReceiveOverOneSocketPair) {
  SocketPair s;
  ASSERT_GE(s.fd[0], 0);
  const cumem::Buffer a = shared.allocate(100);
  const cumem::Buffer b = shared.allocate(300);
  const cumem::AllocationHandle handle = shared.get_allocation_handle();
  const std::vector<cumem::IpcDescriptor> sent = {a.get_ipc_descriptor(), b.get_ipc_descriptor()};

  cumem::ipc_send(s.fd[0], handle, sent);
  const cumem::IpcMessage with_handle = cumem::ipc_receive(s.fd[1], 4);
  ASSERT_TRUE(with_handle.handle);
  EXPECT_NE(with_handle.handle.fd(), handle.fd()) << "a received fd is a new one";
  EXPECT_TRUE(same_bytes(with_handle.handle.descriptor(), handle.descriptor()));
  ASSERT_EQ(with_handle.descriptors.size(), 2u);
  EXPECT_TRUE(same_bytes(with_handle.descriptors[0], sent[0]));
  EXPECT_TRUE(same_bytes(with_handle.descriptors[1], sent[1]));

  cumem::ipc_send(s.fd[0], {sent[1]});
  const cumem::IpcMessage descriptors_only = cumem::ipc_receive(s.fd[1], 4);
  EXPECT_FALSE(descriptors_only.handle);
  ASSERT_EQ(descriptors_only.descriptors.size(), 1u);
  EXPECT_TRUE(same_bytes(descriptors_only.descriptors[0], sent[1]));

  cumem::ipc_send(s.fd[0], handle, {});
  const cumem::IpcMessage handle_only = cumem::ipc_receive(s.fd[1], 0);
  EXPECT_TRUE(handle_only.handle);
  EXPECT_TRUE(handle_only.descriptors.empty());

  s.close(0);
  EXPECT_CUMEM_THROW(cumem::ipc_receive(s.fd[1], 4), CUMEM_ERROR_INVALID_STATE, "closed");
  EXPECT_CUMEM_THROW(cumem::ipc_send(s.fd[1], handle, sent), CUMEM_ERROR_INVALID_STATE, "");
}

TEST_F(FacadeIpcHost, MoreDescriptorsThanCapacityAreRefused) {
  const cumem::Buffer a = shared.allocate(100);
  const cumem::Buffer b = shared.allocate(300);
  const std::vector<cumem::IpcDescriptor> two = {a.get_ipc_descriptor(), b.get_ipc_descriptor()};
  // One connection for each case: a refused message may be left half read
  // on a stream socket.
  {
    SocketPair s;
    ASSERT_GE(s.fd[0], 0);
    cumem::ipc_send(s.fd[0], two);
    EXPECT_CUMEM_THROW(cumem::ipc_receive(s.fd[1], 1), CUMEM_ERROR_INVALID_ARGUMENT, "more than");
  }
  {
    SocketPair s;
    ASSERT_GE(s.fd[0], 0);
    cumem::ipc_send(s.fd[0], shared.get_allocation_handle(), two);
    EXPECT_CUMEM_THROW(cumem::ipc_receive(s.fd[1], 1), CUMEM_ERROR_INVALID_ARGUMENT, "more than");
  }
}
