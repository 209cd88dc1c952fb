// IPC between processes in different PID namespaces (containers), on the
// host shared resource (memfd) through the public API: the socket path
// works both ways; the pid path works where the exporter is visible (from
// the outer namespace, by the pid it has there) and says why it cannot work
// where it is not. Needs CAP_SYS_ADMIN for unshare(CLONE_NEWPID) (root);
// skips saying so elsewhere.
#include <cstdio>
#include <string>

#include "ipc_test_util.hpp"

namespace {


// Every byte of `b` is `v`.
bool holds(const cumem_buffer_t* b, unsigned char v) {
  void* p = nullptr;
  size_t size = 0;
  if (cumem_buffer_ptr(b, &p) != CUMEM_SUCCESS || cumem_buffer_size(b, &size) != CUMEM_SUCCESS)
    return false;
  for (size_t i = 0; i < size; ++i)
    if (static_cast<unsigned char*>(p)[i] != v) return false;
  return true;
}

// What a pool's exporter sends when the importer is to take the fd by pid:
// the pool descriptor, the fd's number and a buffer descriptor.
struct ByPid {
  cumem_ipc_descriptor_t pool;
  int32_t fd;
  cumem_ipc_descriptor_t buffer;
};

// The exporter's pid in its own namespace, from a pool descriptor (bytes
// 128..131, little-endian).
uint32_t exporter_pid(const cumem_ipc_descriptor_t& d) {
  return static_cast<uint32_t>(d.bytes[128]) | static_cast<uint32_t>(d.bytes[129]) << 8 |
         static_cast<uint32_t>(d.bytes[130]) << 16 | static_cast<uint32_t>(d.bytes[131]) << 24;
}

class PidNamespace : public HostSharedExporter {
 protected:
  // Starts `body(socket)` as pid 1 of a new PID namespace; `skip` says why
  // it could not. Returns the go-between's pid (wait_exit_code gives the
  // child's code).
  pid_t start(int (*body)(int), int& socket, std::string& skip) {
    return spawn_in_new_pid_namespace(body, socket, skip, /*own_proc=*/false, &child_here);
  }

  pid_t child_here = -1;
};

// The socket path (SCM_RIGHTS) into a new namespace: the child imports,
// checks every byte and writes its reply, which the exporter sees.
TEST_F(PidNamespace, TheSocketPathWorksIntoAnotherNamespace) {
  int socket = -1;
  std::string skip;
  const pid_t between = start([](int s) { return open_and_reply(s, 0x5a, 0xa5); }, socket, skip);
  if (between < 0) GTEST_SKIP() << skip;
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  EXPECT_EQ(wait_exit_code(between), 0);
  close(socket);
  EXPECT_TRUE(holds(buffer, 0xa5)) << "the child's write reached the exporter";
}

// Inside the new namespace the exporter's pid names no process (or another
// one): the pid path is refused, saying why and what to use instead.
TEST_F(PidNamespace, ThePidPathFromInsideIsRefusedSayingWhy) {
  int socket = -1;
  std::string skip;
  const pid_t between = start(
      [](int s) {
        ByPid m{};
        if (!read_exact(s, &m, sizeof m)) return 2;
        cumem_allocation_handle_t* h = nullptr;
        const cumem_status_t st = cumem_allocation_handle_from_pid(
            &m.pool, static_cast<int32_t>(exporter_pid(m.pool)), m.fd, &h);
        const std::string message = cumem_last_error_message();
        if (st != CUMEM_ERROR_INVALID_ARGUMENT || h) {
          std::fprintf(stderr, "child: from_pid gave %s: %s\n", cumem_status_string(st),
                       message.c_str());
          return 3;
        }
        if (message.find("PID namespace") == std::string::npos ||
            message.find("cumem_ipc_send") == std::string::npos) {
          std::fprintf(stderr, "child: the message does not say why: %s\n", message.c_str());
          return 4;
        }
        return 0;
      },
      socket, skip);
  if (between < 0) GTEST_SKIP() << skip;
  ByPid m{};
  CUMEM_ASSERT_OK(cumem_allocation_handle_descriptor(handle, &m.pool));
  CUMEM_ASSERT_OK(cumem_allocation_handle_fd(handle, &m.fd));
  m.buffer = descriptor;
  ASSERT_EQ(exporter_pid(m.pool), static_cast<uint32_t>(getpid()));
  ASSERT_TRUE(write_exact(socket, &m, sizeof m));
  EXPECT_EQ(wait_exit_code(between), 0);
  close(socket);
}

// From the outer namespace the exporter inside is visible, by the pid the
// outer namespace gives it (its descriptor says 1): the pid path works by
// that pid, and a process that is not the exporter is refused.
TEST_F(PidNamespace, ThePidPathFromOutsideTakesTheExportersOuterPid) {
  int socket = -1;
  std::string skip;
  const pid_t between = start(
      [](int s) {
        cumem_resource_t* r = nullptr;
        CHILD_CHECK(cumem_host_shared_resource_create(kCapacity, &r), 2);
        cumem_buffer_t* b = nullptr;
        CHILD_CHECK(cumem_resource_allocate(r, kBytes, nullptr, &b), 3);
        CHILD_CHECK(cumem_buffer_fill(b, 0x77, 1, nullptr), 4);
        cumem_allocation_handle_t* h = nullptr;
        CHILD_CHECK(cumem_resource_get_allocation_handle(r, &h), 5);
        ByPid m{};
        CHILD_CHECK(cumem_allocation_handle_descriptor(h, &m.pool), 6);
        CHILD_CHECK(cumem_allocation_handle_fd(h, &m.fd), 6);
        CHILD_CHECK(cumem_buffer_get_ipc_descriptor(b, &m.buffer), 6);
        if (!write_exact(s, &m, sizeof m)) return 7;
        char done = 0;
        if (!read_exact(s, &done, 1)) return 8;  // the importer is done
        cumem_allocation_handle_release(h);
        cumem_buffer_release(b);
        cumem_resource_release(r);
        return 0;
      },
      socket, skip);
  if (between < 0) GTEST_SKIP() << skip;
  ByPid m{};
  ASSERT_TRUE(read_exact(socket, &m, sizeof m));
  EXPECT_EQ(exporter_pid(m.pool), 1u) << "the exporter is pid 1 of its namespace";
  // The go-between is a real process, but not the exporter.
  cumem_allocation_handle_t* h = nullptr;
  CUMEM_EXPECT_ERROR(cumem_allocation_handle_from_pid(&m.pool, between, m.fd, &h),
                     CUMEM_ERROR_INVALID_ARGUMENT, "is not the process that exported the pool");
  EXPECT_EQ(h, nullptr);
  const cumem_status_t st = cumem_allocation_handle_from_pid(&m.pool, child_here, m.fd, &h);
  std::string skip_after;
  if (st == CUMEM_ERROR_NOT_SUPPORTED) {
    skip_after = std::string("pidfd_getfd is not permitted here: ") + cumem_last_error_message();
  } else {
    EXPECT_EQ(st, CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_resource_t* imported = nullptr;
    cumem_buffer_t* b = nullptr;
    EXPECT_EQ(cumem_resource_from_allocation_handle(nullptr, h, &imported), CUMEM_SUCCESS)
        << cumem_last_error_message();
    EXPECT_EQ(cumem_buffer_from_ipc_descriptor(imported, &m.buffer, nullptr, &b), CUMEM_SUCCESS)
        << cumem_last_error_message();
    EXPECT_TRUE(b && holds(b, 0x77)) << "the exporter's bytes, read from outside";
    cumem_buffer_release(b);
    cumem_resource_release(imported);
    cumem_allocation_handle_release(h);
  }
  const char done = 'd';
  write_exact(socket, &done, 1);
  EXPECT_EQ(wait_exit_code(between), 0);
  close(socket);
  if (!skip_after.empty()) GTEST_SKIP() << skip_after;
}

}  // namespace
