// Two GPUs: IPC between processes on different devices. The parent exports
// memory of device 0 (an IPC-enabled pool; a virtual-memory buffer with
// POSIX fd handles); a child that works on device 1 imports it on device 0
// (the memory's device: importing it on device 1 is refused), gives device
// 1 access to it in its own process, reads it on device 1 (a copy on
// device 1's stream and a kernel of device 1) and writes a reply into it
// with a kernel of device 1, which the parent then finds in its memory.
// Children are this program run again (--peer-ipc-child ROLE FD: fork +
// exec, so none inherits the parent's CUDA state); they report by exit
// code and print why they failed. Skips on machines with one GPU or no
// peer path.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../ipc/ipc_test_util.hpp"
#include "gpu_fixture.hpp"
#include "peer_kernel_ptx.hpp"

namespace {

constexpr size_t kPoolBytes = 8u << 20;      // each of the pool's two buffers
constexpr size_t kVirtualBytes = 40u << 20;  // two 20 MiB chunks
constexpr uint32_t kBefore = 0x11B0B0B0u, kAfter = 0x22A0A0A0u, kVirtual = 0x33C0C0C0u;
constexpr uint32_t kReplyBefore = 0x44D0D0D0u, kReplyAfter = 0x55E0E0E0u,
                   kReplyVirtual = 0x66F0F0F0u;

// read_words(src, dst, n): dst[i] = src[i] (peer_kernel_ptx.hpp).
using peer_test::kReadWordsPtx;

// Starts this program as a child in `role`, connected by a socket.
pid_t start_child(const char* role, int& socket) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  const int fd = fcntl(sv[1], F_DUPFD, 3);  // the child's end, without close-on-exec
  const pid_t pid = start_self({"--peer-ipc-child", role, std::to_string(fd)});
  close(fd);
  close(sv[1]);
  socket = sv[0];
  return pid;
}

// 32-bit words of `b` that are not `word`, read through pinned memory on
// `s`; SIZE_MAX where the read itself failed (printed).
size_t wrong_words(cumem_buffer_t* b, uint32_t word, const cumem_device_t* device,
                   const cumem_stream_t* s) {
  size_t size = 0;
  cumem_resource_t* host = nullptr;
  cumem_buffer_t* h = nullptr;
  void* p = nullptr;
  const bool read = cumem_buffer_size(b, &size) == CUMEM_SUCCESS &&
                    cumem_legacy_pinned_resource_create(device, &host) == CUMEM_SUCCESS &&
                    cumem_resource_allocate(host, size, nullptr, &h) == CUMEM_SUCCESS &&
                    cumem_buffer_copy_to(b, h, s) == CUMEM_SUCCESS &&
                    cumem_stream_synchronize(s) == CUMEM_SUCCESS &&
                    cumem_buffer_ptr(h, &p) == CUMEM_SUCCESS;
  size_t wrong = SIZE_MAX;
  if (read) {
    wrong = 0;
    for (size_t i = 0; i < size / 4; ++i) wrong += static_cast<const uint32_t*>(p)[i] != word;
  } else {
    std::fprintf(stderr, "reading a buffer back: %s\n", cumem_last_error_message());
  }
  cumem_buffer_release(h);
  cumem_resource_release(host);
  return wrong;
}

// ---------------------------------------------------------------------------
// The child: works on device 1
// ---------------------------------------------------------------------------

// 0 when `got` is `want` with `fragment` in the message, else prints why
// and gives `code`.
int refused(cumem_status_t got, cumem_status_t want, const char* fragment, const char* what,
            int code) {
  const std::string message = cumem_last_error_message();
  if (got == want && message.find(fragment) != std::string::npos) return 0;
  std::fprintf(stderr, "child: %s: expected %s with \"%s\" in the message, got %s: %s\n", what,
               cumem_status_string(want), fragment, cumem_status_string(got), message.c_str());
  return code;
}

// Device 0 (where the memory lives), device 1 (where the child works), a
// stream of each, device 1's kernel and its device memory.
struct Child {
  cumem_device_t* dev0 = nullptr;
  cumem_device_t* dev1 = nullptr;
  cumem_stream_t* s0 = nullptr;
  cumem_stream_t* s1 = nullptr;
  cumem_kernel_t* kernel = nullptr;
  cumem_resource_t* on1 = nullptr;
  ~Child() {
    cumem_resource_release(on1);
    cumem_kernel_release(kernel);
    cumem_stream_release(s1);
    cumem_stream_release(s0);
    cumem_device_release(dev1);
    cumem_device_release(dev0);
  }

  int open() {
    CHILD_CHECK(cumem_device_get(0, &dev0), 2);
    CHILD_CHECK(cumem_device_get(1, &dev1), 2);
    CHILD_CHECK(cumem_stream_create(dev0, nullptr, &s0), 2);
    CHILD_CHECK(cumem_stream_create(dev1, nullptr, &s1), 2);
    CHILD_CHECK(cumem_device_resource_create(dev1, nullptr, &on1), 2);
    cumem_library_t* library = nullptr;
    CHILD_CHECK(cumem_library_load_data(dev1, kReadWordsPtx, sizeof kReadWordsPtx, &library), 2);
    const cumem_status_t got = cumem_library_get_kernel(library, "read_words", &kernel);
    cumem_library_release(library);
    CHILD_CHECK(got, 2);
    return 0;
  }

  // dst[i] = src[i] for every word, by device 1's kernel on s1.
  int launch_copy(void* src, void* dst, size_t bytes) {
    unsigned long long n = bytes / 4;
    void* args[] = {&src, &dst, &n};
    cumem_launch_config_t config = CUMEM_LAUNCH_CONFIG_INIT;
    config.grid[0] = 264;
    config.block[0] = 256;
    CHILD_CHECK(cumem_launch(kernel, s1, &config, args, 3), 30);
    CHILD_CHECK(cumem_stream_synchronize(s1), 31);
    return 0;
  }

  // Device 1 reads `b` (memory of device 0) into memory of its own, by a
  // copy on its stream and by its kernel; each must find `word`.
  int read_on_device_1(cumem_buffer_t* b, uint32_t word, const char* what) {
    size_t size = 0;
    CHILD_CHECK(cumem_buffer_size(b, &size), 32);
    cumem_buffer_t* mine = nullptr;
    CHILD_CHECK(cumem_resource_allocate(on1, size, s1, &mine), 32);
    int rc = 0;
    if (cumem_buffer_fill(mine, 0, 4, s1) != CUMEM_SUCCESS ||
        cumem_buffer_copy_to(b, mine, s1) != CUMEM_SUCCESS) {
      std::fprintf(stderr, "child: %s: copy on device 1's stream: %s\n", what,
                   cumem_last_error_message());
      rc = 33;
    }
    size_t wrong = rc ? 0 : wrong_words(mine, word, dev1, s1);
    if (!rc && wrong != 0) {
      std::fprintf(stderr, "child: %s: a copy on device 1's stream read %zu wrong words\n", what,
                   wrong);
      rc = 34;
    }
    void* src = nullptr;
    void* dst = nullptr;
    if (!rc && (cumem_buffer_fill(mine, 0, 4, s1) != CUMEM_SUCCESS ||
                cumem_buffer_ptr(b, &src) != CUMEM_SUCCESS ||
                cumem_buffer_ptr(mine, &dst) != CUMEM_SUCCESS)) {
      std::fprintf(stderr, "child: %s: %s\n", what, cumem_last_error_message());
      rc = 35;
    }
    if (!rc) rc = launch_copy(src, dst, size);
    wrong = rc ? 0 : wrong_words(mine, word, dev1, s1);
    if (!rc && wrong != 0) {
      std::fprintf(stderr, "child: %s: device 1's kernel read %zu wrong words\n", what, wrong);
      rc = 36;
    }
    cumem_buffer_release(mine);
    return rc;
  }

  // Device 1's kernel writes `word` into every word of `b`.
  int write_from_device_1(cumem_buffer_t* b, uint32_t word) {
    size_t size = 0;
    CHILD_CHECK(cumem_buffer_size(b, &size), 37);
    cumem_buffer_t* mine = nullptr;
    CHILD_CHECK(cumem_resource_allocate(on1, size, s1, &mine), 37);
    void* src = nullptr;
    void* dst = nullptr;
    int rc = 0;
    if (cumem_buffer_fill(mine, word, 4, s1) != CUMEM_SUCCESS ||
        cumem_buffer_ptr(mine, &src) != CUMEM_SUCCESS || cumem_buffer_ptr(b, &dst) != CUMEM_SUCCESS) {
      std::fprintf(stderr, "child: writing from device 1: %s\n", cumem_last_error_message());
      rc = 38;
    }
    if (!rc) rc = launch_copy(src, dst, size);
    cumem_buffer_release(mine);
    return rc;
  }
};

// The pool: receives its handle and two buffer descriptors; opens the first
// before device 1 has access and the second after; both are read and
// written by device 1.
int pool_on_device_1(int socket) {
  Child c;
  if (int rc = c.open()) return rc;
  cumem_allocation_handle_t* handle = nullptr;
  cumem_ipc_descriptor_t d[2];
  uint32_t n = 0;
  CHILD_CHECK(cumem_ipc_receive(socket, &handle, d, 2, &n), 3);
  if (n != 2) return 3;
  // The pool lives on device 0: importing it on device 1 is refused.
  cumem_resource_t* pool = nullptr;
  if (int rc = refused(cumem_resource_from_allocation_handle(c.dev1, handle, &pool),
                       CUMEM_ERROR_WRONG_DEVICE, "another device", "importing on device 1", 4))
    return rc;
  CHILD_CHECK(cumem_resource_from_allocation_handle(c.dev0, handle, &pool), 5);
  cumem_buffer_t* before = nullptr;
  cumem_buffer_t* after = nullptr;
  CHILD_CHECK(cumem_buffer_from_ipc_descriptor(pool, &d[0], c.s0, &before), 6);
  // In this process device 1 has no access to the imported pool until it
  // is granted here.
  cumem_bool_t access = CUMEM_TRUE;
  CHILD_CHECK(cumem_resource_pool_get_access(pool, c.dev1, &access), 7);
  if (access) {
    std::fprintf(stderr, "child: device 1 has access to the imported pool before the grant\n");
    return 7;
  }
  CHILD_CHECK(cumem_resource_pool_set_access(pool, c.dev1, CUMEM_TRUE), 8);
  CHILD_CHECK(cumem_resource_pool_get_access(pool, c.dev1, &access), 8);
  CHILD_CHECK(cumem_resource_get_peer_access(pool, c.dev1, &access), 8);
  if (!access) return 8;
  CHILD_CHECK(cumem_buffer_from_ipc_descriptor(pool, &d[1], c.s0, &after), 9);

  if (int rc = c.read_on_device_1(after, kAfter, "opened after the grant")) return rc;
  if (int rc = c.read_on_device_1(before, kBefore, "opened before the grant")) return rc;
  if (int rc = c.write_from_device_1(after, kReplyAfter)) return rc;
  if (int rc = c.write_from_device_1(before, kReplyBefore)) return rc;

  // What is refused, with the documented status.
  if (int rc = refused(cumem_buffer_fill(after, 0, 4, c.s1), CUMEM_ERROR_WRONG_DEVICE, "device 0",
                       "filling device 0's memory on device 1's stream", 10))
    return rc;
  void* p = nullptr;
  if (int rc = refused(cumem_resource_allocate_raw(pool, 4096, c.s0, &p), CUMEM_ERROR_NOT_SUPPORTED,
                       "cannot allocate", "allocating from the imported pool", 11))
    return rc;
  if (int rc = refused(cumem_resource_pool_set_access(pool, c.dev0, CUMEM_FALSE),
                       CUMEM_ERROR_INVALID_ARGUMENT, "cannot revoke",
                       "revoking device 0's access to its own pool", 12))
    return rc;

  CHILD_CHECK(cumem_resource_pool_set_access(pool, c.dev1, CUMEM_FALSE), 13);
  CHILD_CHECK(cumem_resource_pool_get_access(pool, c.dev1, &access), 13);
  if (access) return 13;
  CHILD_CHECK(cumem_buffer_close(before, c.s0), 14);
  CHILD_CHECK(cumem_buffer_close(after, c.s0), 14);
  CHILD_CHECK(cumem_stream_synchronize(c.s0), 14);
  cumem_buffer_release(before);
  cumem_buffer_release(after);
  cumem_resource_release(pool);
  cumem_allocation_handle_release(handle);
  return 0;
}

// The virtual buffer: receives its handle (one fd per chunk), maps it on
// device 0, gives device 1 read access, then read-write access, and takes
// it back.
int virtual_on_device_1(int socket) {
  Child c;
  if (int rc = c.open()) return rc;
  cumem_virtual_ipc_handle_t* handle = nullptr;
  CHILD_CHECK(cumem_ipc_receive_virtual(socket, &handle), 3);
  // Device memory of device 0: mapping it on device 1 is refused.
  cumem_buffer_t* b = nullptr;
  if (int rc = refused(cumem_buffer_from_virtual_ipc_handle(c.dev1, handle, c.s1, &b),
                       CUMEM_ERROR_WRONG_DEVICE, "another device", "mapping on device 1", 4))
    return rc;
  CHILD_CHECK(cumem_buffer_from_virtual_ipc_handle(c.dev0, handle, c.s0, &b), 5);
  cumem_virtual_ipc_handle_release(handle);
  size_t size = 0;
  CHILD_CHECK(cumem_buffer_size(b, &size), 5);
  if (size != kVirtualBytes) {
    std::fprintf(stderr, "child: mapped %zu bytes, not %zu\n", size, kVirtualBytes);
    return 5;
  }
  cumem_resource_t* imported = nullptr;
  CHILD_CHECK(cumem_buffer_resource(b, &imported), 6);
  cumem_access_t access = CUMEM_ACCESS_READ_WRITE;
  CHILD_CHECK(cumem_virtual_resource_get_access(imported, c.dev1, &access), 7);
  if (access != CUMEM_ACCESS_NONE) {
    std::fprintf(stderr, "child: device 1 has access %d to the mapping before the grant\n", access);
    return 7;
  }

  // Read access: device 1 reads.
  CHILD_CHECK(cumem_virtual_resource_set_access(imported, c.dev1, CUMEM_ACCESS_READ), 8);
  CHILD_CHECK(cumem_virtual_resource_get_access(imported, c.dev1, &access), 8);
  if (access != CUMEM_ACCESS_READ) return 8;
  if (int rc = c.read_on_device_1(b, kVirtual, "the virtual buffer, read access")) return rc;
  // Read-write access (cumem_resource_set_peer_access, as a framework
  // calls it): device 1 writes the reply.
  CHILD_CHECK(cumem_resource_set_peer_access(imported, c.dev1, CUMEM_TRUE), 9);
  CHILD_CHECK(cumem_virtual_resource_get_access(imported, c.dev1, &access), 9);
  if (access != CUMEM_ACCESS_READ_WRITE) return 9;
  if (int rc = c.write_from_device_1(b, kReplyVirtual)) return rc;

  // What is refused, with the documented status.
  void* p = nullptr;
  if (int rc = refused(cumem_resource_allocate_raw(imported, 4096, c.s0, &p),
                       CUMEM_ERROR_NOT_SUPPORTED, "cannot allocate",
                       "allocating from the imported virtual resource", 10))
    return rc;
  if (int rc = refused(cumem_buffer_resize(b, 2 * kVirtualBytes, c.s0), CUMEM_ERROR_NOT_SUPPORTED,
                       "another process", "resizing the mapped buffer", 11))
    return rc;
  if (int rc = refused(cumem_virtual_resource_set_access(imported, c.dev0, CUMEM_ACCESS_NONE),
                       CUMEM_ERROR_INVALID_ARGUMENT, "from the device it is made for",
                       "taking device 0's access to its own memory", 12))
    return rc;
  if (int rc = refused(cumem_buffer_fill(b, 0, 4, c.s1), CUMEM_ERROR_WRONG_DEVICE, "device 0",
                       "filling device 0's memory on device 1's stream", 13))
    return rc;

  CHILD_CHECK(cumem_virtual_resource_set_access(imported, c.dev1, CUMEM_ACCESS_NONE), 14);
  CHILD_CHECK(cumem_virtual_resource_get_access(imported, c.dev1, &access), 14);
  if (access != CUMEM_ACCESS_NONE) return 14;
  CHILD_CHECK(cumem_buffer_close(b, c.s0), 15);
  CHILD_CHECK(cumem_stream_synchronize(c.s0), 15);
  cumem_buffer_release(b);
  cumem_resource_release(imported);
  return 0;
}

int run_child(const std::string& role, int socket) {
  if (role == "pool_on_device_1") return pool_on_device_1(socket);
  if (role == "virtual_on_device_1") return virtual_on_device_1(socket);
  std::fprintf(stderr, "unknown role %s\n", role.c_str());
  return 99;
}

// ---------------------------------------------------------------------------
// Tests (the exporter on device 0)
// ---------------------------------------------------------------------------

class PeerIpcTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (device_count < 2)
      GTEST_SKIP() << "IPC between devices needs two GPUs; this machine has " << device_count;
    CUMEM_ASSERT_OK(cumem_device_get(1, &other));
    cumem_bool_t can = CUMEM_FALSE;
    CUMEM_ASSERT_OK(cumem_device_can_access_peer(other, device, &can));
    if (!can) GTEST_SKIP() << "device 1 cannot access device 0's memory on this machine (no peer path)";
    CUMEM_ASSERT_OK(cumem_device_get_properties(device, &props));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  }
  void TearDown() override {
    cumem_stream_release(stream);
    cumem_device_release(other);
    GpuTest::TearDown();
  }

  cumem_device_t* other = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_device_properties_t props = CUMEM_DEVICE_PROPERTIES_INIT;
};

TEST_F(PeerIpcTest, PoolOfDevice0IsReadAndWrittenByDevice1InAnotherProcess) {
  if (!(props.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD))
    GTEST_SKIP() << "device 0 cannot export pools as file descriptors";
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  po.ipc_enabled = CUMEM_TRUE;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &po, &pool));
  cumem_buffer_t* before = nullptr;
  cumem_buffer_t* after = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kPoolBytes, stream, &before));
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kPoolBytes, stream, &after));
  CUMEM_ASSERT_OK(cumem_buffer_fill(before, kBefore, 4, stream));
  CUMEM_ASSERT_OK(cumem_buffer_fill(after, kAfter, 4, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_allocation_handle_t* handle = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_get_allocation_handle(pool, &handle));
  cumem_ipc_descriptor_t d[2];
  CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(before, &d[0]));
  CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(after, &d[1]));

  int socket = -1;
  const pid_t child = start_child("pool_on_device_1", socket);
  ASSERT_GT(child, 0);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, d, 2));
  EXPECT_EQ(wait_exit_code(child), 0) << "the child on device 1 (its stderr says why; 128 + n: "
                                         "killed by signal n)";
  close(socket);
  EXPECT_EQ(wrong_words(before, kReplyBefore, device, stream), 0u)
      << "device 1's writes to the buffer opened before the grant";
  EXPECT_EQ(wrong_words(after, kReplyAfter, device, stream), 0u)
      << "device 1's writes to the buffer opened after the grant";

  cumem_allocation_handle_release(handle);
  cumem_buffer_release(before);
  cumem_buffer_release(after);
  cumem_resource_release(pool);
}

TEST_F(PeerIpcTest, VirtualBufferOfDevice0IsReadAndWrittenByDevice1InAnotherProcess) {
  if (!props.virtual_memory_management)
    GTEST_SKIP() << "device 0 has no virtual memory management";
  cumem_virtual_resource_options_t vo = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  vo.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
  vo.chunk_size = 20u << 20;
  cumem_resource_t* vr = nullptr;
  const cumem_status_t made = cumem_virtual_resource_create(device, &vo, &vr);
  if (made == CUMEM_ERROR_NOT_SUPPORTED) GTEST_SKIP() << cumem_last_error_message();
  CUMEM_ASSERT_OK(made);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(vr, kVirtualBytes, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, kVirtual, 4, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_virtual_ipc_handle_t* handle = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_get_virtual_ipc_handle(b, &handle));
  uint32_t fds = 0;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(handle, &fds));
  EXPECT_EQ(fds, 2u) << "one file descriptor per 20 MiB chunk";

  int socket = -1;
  const pid_t child = start_child("virtual_on_device_1", socket);
  ASSERT_GT(child, 0);
  CUMEM_ASSERT_OK(cumem_ipc_send_virtual(socket, handle));
  EXPECT_EQ(wait_exit_code(child), 0) << "the child on device 1 (its stderr says why; 128 + n: "
                                         "killed by signal n)";
  close(socket);
  EXPECT_EQ(wrong_words(b, kReplyVirtual, device, stream), 0u) << "device 1's writes";

  cumem_virtual_ipc_handle_release(handle);
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--peer-ipc-child")
    return run_child(argv[2], std::atoi(argv[3]));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
