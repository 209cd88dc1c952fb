// The whole IPC protocol on the host shared resource (memfd), through the
// public C API and real processes: no GPU needed.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ipc_test_util.hpp"

namespace {

constexpr uint64_t kCapacity = 1 << 20;

class HostShared : public HostSharedExporter {
 protected:
  unsigned char byte(size_t i) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(buffer, &p), CUMEM_SUCCESS);
    return static_cast<unsigned char*>(p)[i];
  }

};

TEST_F(HostShared, PropertiesSayWhatItIs) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(resource, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_HOST_SHARED);
  EXPECT_EQ(p.ipc_enabled, CUMEM_TRUE);
  EXPECT_EQ(p.is_imported, CUMEM_FALSE);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  int32_t fd = -1;
  CUMEM_ASSERT_OK(cumem_allocation_handle_fd(handle, &fd));
  EXPECT_GE(fd, 0);
}

TEST_F(HostShared, ForkedChildReadsAndWritesTheSameMemory) {
  int socket = -1;
  const pid_t child = spawn([](int s) { return open_and_reply(s, 0x5a, 0xa5); }, socket);
  ASSERT_GT(child, 0);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  EXPECT_EQ(wait_exit_code(child), 0);
  close(socket);
  EXPECT_EQ(byte(0), 0xa5);
  EXPECT_EQ(byte(4095), 0xa5);
}

TEST_F(HostShared, ReexportedFromAnImportToAThirdProcess) {
  int socket = -1;
  // B imports and opens, then hands its own re-export to C, which replies.
  const pid_t b = spawn(
      [](int from_a) {
        cumem_allocation_handle_t* h = nullptr;
        cumem_ipc_descriptor_t d;
        uint32_t n = 0;
        CHILD_CHECK(cumem_ipc_receive(from_a, &h, &d, 1, &n), 2);
        cumem_resource_t* imported = nullptr;
        CHILD_CHECK(cumem_resource_from_allocation_handle(nullptr, h, &imported), 3);
        cumem_buffer_t* opened = nullptr;
        CHILD_CHECK(cumem_buffer_from_ipc_descriptor(imported, &d, nullptr, &opened), 4);
        cumem_allocation_handle_t* again = nullptr;
        CHILD_CHECK(cumem_resource_get_allocation_handle(imported, &again), 5);
        cumem_ipc_descriptor_t d2;
        CHILD_CHECK(cumem_buffer_get_ipc_descriptor(opened, &d2), 6);
        // The same descriptor travels on, byte for byte (issue 17, item 6:
        // the exporter pid and so the CRC differed before).
        if (std::memcmp(d.bytes, d2.bytes, sizeof d.bytes) != 0) return 7;
        cumem_ipc_descriptor_t pool_a, pool_b;
        CHILD_CHECK(cumem_allocation_handle_descriptor(h, &pool_a), 6);
        CHILD_CHECK(cumem_allocation_handle_descriptor(again, &pool_b), 6);
        if (std::memcmp(pool_a.bytes, pool_b.bytes, sizeof pool_a.bytes) != 0) return 7;
        int to_c = -1;
        const pid_t c = spawn([](int s) { return open_and_reply(s, 0x5a, 0x3c); }, to_c);
        CHILD_CHECK(cumem_ipc_send(to_c, again, &d2, 1), 8);
        const int code = wait_exit_code(c);
        cumem_buffer_release(opened);
        cumem_resource_release(imported);
        cumem_allocation_handle_release(again);
        cumem_allocation_handle_release(h);
        return code == 0 ? 0 : 20 + code;
      },
      socket);
  ASSERT_GT(b, 0);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  EXPECT_EQ(wait_exit_code(b), 0);
  close(socket);
  EXPECT_EQ(byte(100), 0x3c);
}

TEST_F(HostShared, ImportedTwiceIsOneResourceThatCannotAllocate) {
  int socket = -1;
  const pid_t child = spawn(
      [](int s) {
        cumem_allocation_handle_t* h = nullptr;
        cumem_ipc_descriptor_t d;
        uint32_t n = 0;
        CHILD_CHECK(cumem_ipc_receive(s, &h, &d, 1, &n), 2);
        cumem_resource_t *a = nullptr, *b = nullptr;
        CHILD_CHECK(cumem_resource_from_allocation_handle(nullptr, h, &a), 3);
        CHILD_CHECK(cumem_resource_from_allocation_handle(nullptr, h, &b), 3);
        if (a != b) return 4;
        cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
        CHILD_CHECK(cumem_resource_get_properties(a, &p), 5);
        if (p.is_imported != CUMEM_TRUE) return 6;
        cumem_buffer_t* x = nullptr;
        if (cumem_resource_allocate(a, 64, nullptr, &x) != CUMEM_ERROR_NOT_SUPPORTED) return 7;
        if (std::string(cumem_last_error_message()).find("imported from another process") ==
            std::string::npos)
          return 8;
        // Opening one descriptor twice: one mapping, two buffers.
        cumem_buffer_t *b1 = nullptr, *b2 = nullptr;
        CHILD_CHECK(cumem_buffer_from_ipc_descriptor(a, &d, nullptr, &b1), 9);
        CHILD_CHECK(cumem_buffer_from_ipc_descriptor(b, &d, nullptr, &b2), 9);
        void *p1 = nullptr, *p2 = nullptr;
        cumem_buffer_ptr(b1, &p1);
        cumem_buffer_ptr(b2, &p2);
        if (p1 != p2) return 10;
        cumem_buffer_release(b1);
        CHILD_CHECK(cumem_buffer_fill(b2, 0x11, 1, nullptr), 11);  // still mapped
        cumem_buffer_release(b2);
        cumem_resource_release(a);
        cumem_resource_release(b);
        cumem_allocation_handle_release(h);
        return 0;
      },
      socket);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  EXPECT_EQ(wait_exit_code(child), 0);
  close(socket);
  EXPECT_EQ(byte(0), 0x11);
}

TEST_F(HostShared, BadDescriptorsAreRefusedSayingWhy) {
  int socket = -1;
  cumem_resource_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_host_shared_resource_create(kCapacity, &other));
  cumem_buffer_t* other_buffer = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(other, 64, nullptr, &other_buffer));
  cumem_ipc_descriptor_t foreign;
  CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(other_buffer, &foreign));
  cumem_ipc_descriptor_t bad[5] = {descriptor, descriptor, descriptor, foreign, descriptor};
  bad[0].bytes[70] ^= 0x01;                    // corrupted
  put_u64(bad[1], 24, kCapacity - 16);         // offset past the file's end, CRC recomputed
  reseal(bad[1]);
  bad[2].bytes[8] = 3;                         // a format version from the future
  reseal(bad[2]);
  put_u64(bad[4], 16, kCapacity);              // size forged, CRC recomputed (issue 17, item 1)
  reseal(bad[4]);
  const pid_t child = spawn(
      [](int s) {
        cumem_allocation_handle_t* h = nullptr;
        cumem_ipc_descriptor_t d[5];
        uint32_t n = 0;
        CHILD_CHECK(cumem_ipc_receive(s, &h, d, 5, &n), 2);
        cumem_resource_t* imported = nullptr;
        CHILD_CHECK(cumem_resource_from_allocation_handle(nullptr, h, &imported), 3);
        // A field changed with the CRC recomputed fails the tag: only a
        // holder of the pool's key can describe its memory.
        const char* expected[5] = {"corrupted", "authentication tag does not match", "version 3",
                                   "another pool", "authentication tag does not match"};
        for (int i = 0; i < 5; ++i) {
          cumem_buffer_t* b = nullptr;
          const cumem_status_t st = cumem_buffer_from_ipc_descriptor(imported, &d[i], nullptr, &b);
          if (st != CUMEM_ERROR_INVALID_ARGUMENT || b != nullptr ||
              std::string(cumem_last_error_message()).find(expected[i]) == std::string::npos) {
            std::fprintf(stderr, "child: descriptor %d: %s\n", i, cumem_last_error_message());
            return 10 + i;
          }
        }
        cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
        CHILD_CHECK(cumem_resource_get_properties(imported, &p), 4);
        cumem_resource_statistics_t st = CUMEM_RESOURCE_STATISTICS_INIT;
        CHILD_CHECK(cumem_resource_get_statistics(imported, &st), 5);
        if (st.live_allocations != 0) return 6;
        cumem_resource_release(imported);
        cumem_allocation_handle_release(h);
        return 0;
      },
      socket);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, bad, 5));
  EXPECT_EQ(wait_exit_code(child), 0);
  close(socket);
  cumem_buffer_release(other_buffer);
  cumem_resource_release(other);
}

TEST_F(HostShared, NoFileDescriptorLeaksOverAThousandCycles) {
  const int before = open_fd_count();
  for (int i = 0; i < 1000; ++i) {
    cumem_allocation_handle_t* h = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_get_allocation_handle(resource, &h));
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CUMEM_ASSERT_OK(cumem_ipc_send(sv[0], h, &descriptor, 1));
    cumem_allocation_handle_t* got = nullptr;
    cumem_ipc_descriptor_t d;
    uint32_t n = 0;
    CUMEM_ASSERT_OK(cumem_ipc_receive(sv[1], &got, &d, 1, &n));
    int32_t dup = -1;
    CUMEM_ASSERT_OK(cumem_allocation_handle_dup_fd(got, &dup));
    close(dup);
    cumem_allocation_handle_release(got);
    cumem_allocation_handle_release(h);
    close(sv[0]);
    close(sv[1]);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST_F(HostShared, HandlesFromFdAndReceivingWithoutRoom) {
  cumem_ipc_descriptor_t pool;
  CUMEM_ASSERT_OK(cumem_allocation_handle_descriptor(handle, &pool));
  cumem_allocation_handle_t* h = nullptr;
  // A buffer descriptor is not a pool descriptor.
  CUMEM_EXPECT_ERROR(cumem_allocation_handle_from_fd(&descriptor, 0, &h),
                     CUMEM_ERROR_INVALID_ARGUMENT, "not the descriptor of a pool");
  CUMEM_EXPECT_ERROR(cumem_allocation_handle_from_fd(&pool, -1, &h), CUMEM_ERROR_INVALID_ARGUMENT,
                     "not open");
  EXPECT_EQ(h, nullptr);
  int32_t fd = -1;
  CUMEM_ASSERT_OK(cumem_allocation_handle_dup_fd(handle, &fd));
  CUMEM_ASSERT_OK(cumem_allocation_handle_from_fd(&pool, fd, &h));  // owns fd now
  cumem_allocation_handle_release(h);
  // A handle that arrives where none is expected is closed and refused.
  const int before = open_fd_count();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  CUMEM_ASSERT_OK(cumem_ipc_send(sv[0], handle, &descriptor, 1));
  cumem_ipc_descriptor_t d;
  uint32_t n = 99;
  CUMEM_EXPECT_ERROR(cumem_ipc_receive(sv[1], nullptr, &d, 1, &n), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_handle is NULL");
  EXPECT_EQ(n, 99u);
  // A message too large for the room given is dropped whole: the next one
  // is received intact, and its file descriptor was closed.
  const cumem_ipc_descriptor_t two[2] = {descriptor, descriptor};
  CUMEM_ASSERT_OK(cumem_ipc_send(sv[0], handle, two, 2));
  cumem_allocation_handle_t* got = nullptr;
  CUMEM_EXPECT_ERROR(cumem_ipc_receive(sv[1], &got, &d, 1, &n), CUMEM_ERROR_INVALID_ARGUMENT,
                     "more than capacity 1");
  EXPECT_EQ(got, nullptr);
  CUMEM_ASSERT_OK(cumem_ipc_send(sv[0], handle, &descriptor, 1));
  CUMEM_ASSERT_OK(cumem_ipc_receive(sv[1], &got, &d, 1, &n));
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(std::memcmp(&d, &descriptor, sizeof d), 0);
  cumem_allocation_handle_release(got);
  close(sv[0]);
  close(sv[1]);
  EXPECT_EQ(open_fd_count(), before);
}

TEST_F(HostShared, ResourcesThatCannotShareSaySo) {
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_allocation_handle_t* h = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_get_allocation_handle(host, &h), CUMEM_ERROR_NOT_SUPPORTED,
                     "only IPC-enabled resources");
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 64, nullptr, &b));
  cumem_ipc_descriptor_t d;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_ipc_descriptor(b, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "does not take part in IPC");
  // The exporter does not open its own descriptors (closing would free).
  cumem_buffer_t* self = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_from_ipc_descriptor(resource, &descriptor, nullptr, &self),
                     CUMEM_ERROR_INVALID_ARGUMENT, "this very resource");
  cumem_buffer_release(b);
  cumem_resource_release(host);
  cumem_resource_t* zero = nullptr;
  CUMEM_EXPECT_ERROR(cumem_host_shared_resource_create(0, &zero), CUMEM_ERROR_INVALID_ARGUMENT,
                     "capacity");
}

// Issue 17, item 2: the shared file is sealed against shrinking and
// growing, so a peer cannot shrink it under an importer's mapping (which
// made the importer's next fill a SIGBUS); the importer keeps working.
TEST_F(HostShared, TheSharedFileCannotBeShrunkUnderAnImporter) {
  int32_t fd = -1;
  CUMEM_ASSERT_OK(cumem_allocation_handle_fd(handle, &fd));
  const int seals = fcntl(fd, F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  int to_child = -1;
  const pid_t child = spawn(
      [](int s) {
        cumem_allocation_handle_t* h = nullptr;
        cumem_ipc_descriptor_t d;
        uint32_t n = 0;
        CHILD_CHECK(cumem_ipc_receive(s, &h, &d, 1, &n), 2);
        cumem_resource_t* imported = nullptr;
        CHILD_CHECK(cumem_resource_from_allocation_handle(nullptr, h, &imported), 3);
        cumem_buffer_t* b = nullptr;
        CHILD_CHECK(cumem_buffer_from_ipc_descriptor(imported, &d, nullptr, &b), 4);
        const char ready = 'r';
        if (write(s, &ready, 1) != 1) return 5;
        char go = 0;
        if (read(s, &go, 1) != 1) return 6;  // the exporter tried to shrink the file
        CHILD_CHECK(cumem_buffer_fill(b, 0x77, 1, nullptr), 7);
        cumem_buffer_t* copy = nullptr;
        cumem_resource_t* host = nullptr;
        CHILD_CHECK(cumem_host_resource_create(nullptr, &host), 8);
        CHILD_CHECK(cumem_resource_allocate(host, 4096, nullptr, &copy), 8);
        CHILD_CHECK(cumem_buffer_copy_to(b, copy, nullptr), 9);
        cumem_buffer_release(copy);
        cumem_resource_release(host);
        cumem_buffer_release(b);
        cumem_resource_release(imported);
        cumem_allocation_handle_release(h);
        return 0;
      },
      to_child);
  ASSERT_GT(child, 0);
  CUMEM_ASSERT_OK(cumem_ipc_send(to_child, handle, &descriptor, 1));
  char ready = 0;
  ASSERT_EQ(read(to_child, &ready, 1), 1);
  // The exporter (or any peer holding the fd) cannot change the file's size.
  EXPECT_NE(ftruncate(fd, 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(ftruncate(fd, int64_t{kCapacity} * 2), 0);
  EXPECT_NE(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0) << "no more seals can be added either";
  const char go = 'g';
  ASSERT_EQ(write(to_child, &go, 1), 1);
  EXPECT_EQ(wait_exit_code(child), 0) << "the importer died or failed after the shrink attempt";
  close(to_child);
  EXPECT_EQ(byte(10), 0x77);
}

// ... and a file that is not sealed so is not imported: a peer that sends
// its own memfd (or any file) with a forged pool descriptor gets a refusal.
TEST_F(HostShared, AnUnsealedFileIsRefusedOnImport) {
  cumem_ipc_descriptor_t pool;
  CUMEM_ASSERT_OK(cumem_allocation_handle_descriptor(handle, &pool));
  const int fds[2] = {memfd_create("unsealed", MFD_CLOEXEC),
                      memfd_create("sealable-unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
  for (int fd : fds) {
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, kCapacity), 0);
    cumem_allocation_handle_t* h = nullptr;
    CUMEM_ASSERT_OK(cumem_allocation_handle_from_fd(&pool, fd, &h));  // owns fd
    cumem_resource_t* imported = nullptr;
    CUMEM_EXPECT_ERROR(cumem_resource_from_allocation_handle(nullptr, h, &imported),
                       CUMEM_ERROR_INVALID_ARGUMENT, "sealed against shrinking and growing");
    EXPECT_EQ(imported, nullptr);
    cumem_allocation_handle_release(h);
  }
}

// Issue 17, item 11: out of file descriptors, each call says so with its own
// status (CUMEM_ERROR_OUT_OF_RESOURCES naming the limit), and a message
// whose handle cannot be received is left unread, to be received once a
// descriptor is free. In a child: it lowers its own limit.
int exhaust_file_descriptors(int socket) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = static_cast<rlim_t>(open_fd_count() + 16);
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return 2;
  std::vector<int> held;
  auto fill = [&] {
    for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) held.push_back(fd);
  };
  auto free_one = [&] {
    close(held.back());
    held.pop_back();
  };
  auto expect = [](cumem_status_t st, int code) {
    if (st == CUMEM_ERROR_OUT_OF_RESOURCES &&
        std::string(cumem_last_error_message()).find("RLIMIT_NOFILE") != std::string::npos)
      return 0;
    std::fprintf(stderr, "child: step %d: %s: %s\n", code, cumem_status_string(st),
                 cumem_last_error_message());
    return code;
  };
  fill();
  cumem_resource_t* r = nullptr;
  if (int rc = expect(cumem_host_shared_resource_create(4096, &r), 3)) return rc;
  free_one();
  CHILD_CHECK(cumem_host_shared_resource_create(4096, &r), 4);
  fill();
  cumem_allocation_handle_t* h = nullptr;
  if (int rc = expect(cumem_resource_get_allocation_handle(r, &h), 5)) return rc;
  // The parent's message carries a file descriptor: no room for it here.
  const char ready = 'r';
  if (write(socket, &ready, 1) != 1) return 6;
  cumem_ipc_descriptor_t d;
  uint32_t n = 0;
  cumem_allocation_handle_t* got = nullptr;
  if (int rc = expect(cumem_ipc_receive(socket, &got, &d, 1, &n), 7)) return rc;
  if (got != nullptr) return 8;
  free_one();
  CHILD_CHECK(cumem_ipc_receive(socket, &got, &d, 1, &n), 9);  // the same message, intact
  if (!got || n != 1) return 10;
  cumem_allocation_handle_release(got);
  for (int fd : held) close(fd);
  cumem_resource_release(r);
  return 0;
}

TEST_F(HostShared, OutOfFileDescriptorsEachCallSaysSoAndNoMessageIsLost) {
  int socket = -1;
  const pid_t child = spawn(exhaust_file_descriptors, socket);
  ASSERT_GT(child, 0);
  char ready = 0;
  ASSERT_EQ(read(socket, &ready, 1), 1);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  EXPECT_EQ(wait_exit_code(child), 0);
  close(socket);
}

}  // namespace
