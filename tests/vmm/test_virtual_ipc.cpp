// IPC of virtual buffers through the C API on the VMM fake driver, whose
// chunks are memfds: export as fds plus a descriptor, rebuild from bytes
// and fds, send and receive over Unix sockets, import into one range (in
// this process and in a forked child), and the refusal of forged or
// mismatched descriptors by what the driver says.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "virtual_fixture.hpp"

namespace {

// zlib's crc32, as the descriptor's, to forge descriptors the way an
// attacker could.
uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}
void put(std::vector<uint8_t>& b, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void reseal(std::vector<uint8_t>& b) { put(b, b.size() - 4, crc32(b.data(), b.size() - 4), 4); }

class VirtualIpc : public VirtualTest {
 protected:
  void SetUp() override {
    VirtualTest::SetUp();
    resource = make(2 * kGranule);
    CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 5 * kGranule + 3, stream, &buffer));
    pattern(bytes(buffer), 5 * kGranule + 3, 11);
    CUMEM_ASSERT_OK(cumem_buffer_get_virtual_ipc_handle(buffer, &handle));
  }
  void TearDown() override {
    cumem_virtual_ipc_handle_release(handle);
    cumem_buffer_release(buffer);
    cumem_resource_release(resource);
    VirtualTest::TearDown();
  }
  std::vector<uint8_t> descriptor(const cumem_virtual_ipc_handle_t* h) const {
    size_t length = 0;
    EXPECT_EQ(cumem_virtual_ipc_handle_descriptor(h, nullptr, 0, &length), CUMEM_SUCCESS);
    std::vector<uint8_t> b(length);
    EXPECT_EQ(cumem_virtual_ipc_handle_descriptor(h, b.data(), b.size(), &length), CUMEM_SUCCESS);
    return b;
  }
  std::vector<int32_t> dup_fds(const cumem_virtual_ipc_handle_t* h) const {
    uint32_t n = 0;
    EXPECT_EQ(cumem_virtual_ipc_handle_fd_count(h, &n), CUMEM_SUCCESS);
    std::vector<int32_t> fds;
    for (uint32_t i = 0; i < n; ++i) {
      int32_t fd = -1;
      EXPECT_EQ(cumem_virtual_ipc_handle_fd(h, i, &fd), CUMEM_SUCCESS);
      fds.push_back(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    }
    return fds;
  }
  // Rebuilds a handle from `bytes` and copies of the real fds, then imports
  // it on `on`: the status, with whatever was made released again.
  cumem_status_t import_forged(const std::vector<uint8_t>& bytes, std::vector<int32_t> fds,
                               cumem_device_t* on) {
    cumem_virtual_ipc_handle_t* forged = nullptr;
    cumem_status_t s = cumem_virtual_ipc_handle_from_fds(bytes.data(), bytes.size(), fds.data(),
                                                         static_cast<uint32_t>(fds.size()), &forged);
    if (s != CUMEM_SUCCESS) {
      for (int fd : fds) ::close(fd);
      return s;
    }
    cumem_buffer_t* b = nullptr;
    s = cumem_buffer_from_virtual_ipc_handle(on, forged, nullptr, &b);
    cumem_virtual_ipc_handle_release(forged);
    cumem_buffer_release(b);
    return s;
  }

  cumem_resource_t* resource = nullptr;
  cumem_buffer_t* buffer = nullptr;
  cumem_virtual_ipc_handle_t* handle = nullptr;
};

TEST_F(VirtualIpc, ExportsOneFdPerChunkAndADescriptorListingThem) {
  uint32_t n = 0;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(handle, &n));
  EXPECT_EQ(n, 3u) << "6 granules in chunks of 2";
  int32_t fd = -1;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd(handle, 2, &fd));
  EXPECT_GE(fd, 0);
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_fd(handle, 3, &fd), CUMEM_ERROR_OUT_OF_RANGE, "index 3");
  const std::vector<uint8_t> d = descriptor(handle);
  ASSERT_EQ(d.size(), 100u + 3 * 16);
  EXPECT_EQ(std::string(d.begin(), d.begin() + 8), "CUMEMVMM");
  uint8_t small[10] = {};
  size_t length = 0;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_descriptor(handle, small, sizeof small, &length));
  EXPECT_EQ(length, d.size()) << "the full length, like snprintf";
  EXPECT_EQ(std::memcmp(small, d.data(), sizeof small), 0);
}

TEST_F(VirtualIpc, AnImportMapsTheSameMemory) {
  cumem_buffer_t* imported = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_from_virtual_ipc_handle(device, handle, stream, &imported));
  EXPECT_EQ(size_of(imported), 5 * kGranule + 3);
  EXPECT_NE(bytes(imported), bytes(buffer)) << "a range of its own";
  EXPECT_TRUE(has_pattern(bytes(imported), 5 * kGranule + 3, 11));
  bytes(imported)[42] = 0x99;
  EXPECT_EQ(bytes(buffer)[42], 0x99) << "the same physical memory";
  cumem_resource_t* owner = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_resource(imported, &owner));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(owner, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_VIRTUAL);
  EXPECT_EQ(p.is_imported, CUMEM_TRUE);
  EXPECT_EQ(p.device_id, 0);
  cumem_buffer_t* more = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(owner, 10, nullptr, &more), CUMEM_ERROR_NOT_SUPPORTED,
                     "cannot allocate");
  EXPECT_EQ(statistics_of(owner).bytes_in_use, 5 * kGranule + 3);
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(imported, kGranule, stream), CUMEM_ERROR_NOT_SUPPORTED,
                     "mapped from another process");
  cumem_resource_release(owner);
  // The handle can go first; the import keeps its own chunks.
  cumem_virtual_ipc_handle_release(handle);
  handle = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_close(imported, stream));
  cumem_buffer_release(imported);
  EXPECT_TRUE(has_pattern(bytes(buffer), 42, 11));
}

TEST_F(VirtualIpc, HandlesRebuildFromBytesAndFds) {
  const std::vector<uint8_t> d = descriptor(handle);
  std::vector<int32_t> fds = dup_fds(handle);
  cumem_virtual_ipc_handle_t* again = nullptr;
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_from_fds(d.data(), d.size(), fds.data(), 2, &again),
                     CUMEM_ERROR_INVALID_ARGUMENT, "needs one per chunk");
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_from_fds(d.data(), d.size(), fds.data(), 3, &again));
  cumem_buffer_t* imported = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_from_virtual_ipc_handle(device, again, nullptr, &imported));
  EXPECT_TRUE(has_pattern(bytes(imported), 5 * kGranule + 3, 11));
  cumem_buffer_release(imported);
  cumem_virtual_ipc_handle_release(again);
  const int32_t closed[3] = {-1, -1, -1};
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_from_fds(d.data(), d.size(), closed, 3, &again),
                     CUMEM_ERROR_INVALID_ARGUMENT, "is not open");
}

TEST_F(VirtualIpc, TravelsOverStreamAndSeqpacketSockets) {
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    SCOPED_TRACE(type == SOCK_STREAM ? "SOCK_STREAM" : "SOCK_SEQPACKET");
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, type, 0, sv), 0);
    CUMEM_ASSERT_OK(cumem_ipc_send_virtual(sv[0], handle));
    cumem_virtual_ipc_handle_t* got = nullptr;
    CUMEM_ASSERT_OK(cumem_ipc_receive_virtual(sv[1], &got));
    EXPECT_EQ(descriptor(got), descriptor(handle));
    cumem_buffer_t* imported = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_from_virtual_ipc_handle(device, got, nullptr, &imported));
    EXPECT_TRUE(has_pattern(bytes(imported), 5 * kGranule + 3, 11));
    cumem_buffer_release(imported);
    cumem_virtual_ipc_handle_release(got);
    // A pool-style message (descriptors, no fd) is not a virtual handle.
    cumem_ipc_descriptor_t plain;
    std::memset(&plain, 0, sizeof plain);
    CUMEM_ASSERT_OK(cumem_ipc_send(sv[0], nullptr, &plain, 1));
    CUMEM_EXPECT_ERROR(cumem_ipc_receive_virtual(sv[1], &got), CUMEM_ERROR_INVALID_ARGUMENT,
                       "carries no file descriptor");
    ::close(sv[0]);
    CUMEM_EXPECT_ERROR(cumem_ipc_receive_virtual(sv[1], &got), CUMEM_ERROR_INVALID_STATE,
                       "closed the connection");
    ::close(sv[1]);
  }
}

// The child of AnotherProcessMapsAndWritesTheBuffer: receives the handle on
// `socket`, maps the chunks, checks the pattern and writes over it.
int virtual_ipc_child(int socket) {
  cumem_device_t* device = nullptr;
  if (cumem_device_get(0, &device) != CUMEM_SUCCESS) return 3;
  cumem_virtual_ipc_handle_t* got = nullptr;
  cumem_buffer_t* b = nullptr;
  int code = 1;
  if (cumem_ipc_receive_virtual(socket, &got) == CUMEM_SUCCESS &&
      cumem_buffer_from_virtual_ipc_handle(device, got, nullptr, &b) == CUMEM_SUCCESS) {
    void* p = nullptr;
    size_t n = 0;
    cumem_buffer_ptr(b, &p);
    cumem_buffer_size(b, &n);
    code = 0;
    for (size_t i = 0; i < n && code == 0; ++i)  // VirtualTest::pattern(p, n, 11)
      if (static_cast<unsigned char*>(p)[i] != static_cast<unsigned char>((i * 131 + 11) >> 3)) code = 2;
    std::memset(p, 0x3C, n);
    cumem_buffer_release(b);
  }
  if (code == 1) std::fprintf(stderr, "child: %s\n", cumem_last_error_message());
  cumem_virtual_ipc_handle_release(got);
  cumem_device_release(device);
  return code;
}

// Another process receives the handle, maps the chunks and writes them;
// the exporter sees the writes.
TEST_F(VirtualIpc, AnotherProcessMapsAndWritesTheBuffer) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  // fork + exec: a child forked after CUDA was initialised cannot use the
  // driver (libcumem refuses it, as the real driver would fail), so the
  // child is this program started afresh.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string fd = std::to_string(dup(sv[1]));  // without close-on-exec
    execl("/proc/self/exe", "/proc/self/exe", "--virtual-ipc-child", fd.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(sv[1]);
  CUMEM_ASSERT_OK(cumem_ipc_send_virtual(sv[0], handle));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ::close(sv[0]);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the import failed; 2: it saw other contents";
  const unsigned char* p = bytes(buffer);
  for (size_t i = 0; i < 5 * kGranule + 3; ++i) ASSERT_EQ(p[i], 0x3C) << "byte " << i;
}

// Descriptors that are valid on their own (CRC recomputed) but do not match
// what the driver says of the fds are refused by name.
TEST_F(VirtualIpc, ForgedDescriptorsAreRefusedByWhatTheDriverSays) {
  const std::vector<uint8_t> good = descriptor(handle);
  {
    std::vector<uint8_t> b = good;
    put(b, 96 + 8, 4 * kGranule, 8);  // chunk 0 claims 4 granules...
    put(b, 96 + 16, 4 * kGranule, 8);  // ...and the others follow it
    put(b, 96 + 32, 6 * kGranule, 8);
    put(b, 24, 8 * kGranule, 8);
    reseal(b);
    CUMEM_EXPECT_ERROR(import_forged(b, dup_fds(handle), device), CUMEM_ERROR_INVALID_ARGUMENT,
                       "does not map as the descriptor says");
  }
  {
    std::vector<uint8_t> b = good;
    put(b, 32, 3, 4);  // host NUMA memory, by the descriptor
    std::memset(&b[40], 0, 16);
    reseal(b);
    CUMEM_EXPECT_ERROR(import_forged(b, dup_fds(handle), device), CUMEM_ERROR_INVALID_ARGUMENT,
                       "by the driver's account");
  }
  {
    std::vector<uint8_t> b = good;
    b[41] ^= 0xFF;  // another device's UUID
    reseal(b);
    CUMEM_EXPECT_ERROR(import_forged(b, dup_fds(handle), device), CUMEM_ERROR_WRONG_DEVICE,
                       "another device");
  }
  CUMEM_EXPECT_ERROR(import_forged(good, dup_fds(handle), peer), CUMEM_ERROR_WRONG_DEVICE,
                     "on device 1");
  {
    // Fds that are not chunks: a pipe's.
    int pipefd[2];
    ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
    std::vector<int32_t> fds = dup_fds(handle);
    ::close(fds[1]);
    fds[1] = pipefd[0];
    CUMEM_EXPECT_ERROR(import_forged(good, fds, device), CUMEM_ERROR_INVALID_ARGUMENT,
                       "does not import as memory");
    ::close(pipefd[1]);
  }
  {
    std::vector<uint8_t> b = good;
    b[30] ^= 1;  // not resealed
    CUMEM_EXPECT_ERROR(import_forged(b, dup_fds(handle), device), CUMEM_ERROR_INVALID_ARGUMENT,
                       "integrity check failed");
  }
  // Random forgeries with a correct CRC: refused or imported, never a crash,
  // and nothing left behind (TearDown counts).
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> b = good;
    for (int k = 0; k < 2; ++k) b[rng() % (b.size() - 4)] = static_cast<uint8_t>(rng());
    reseal(b);
    const cumem_status_t s = import_forged(b, dup_fds(handle), device);
    EXPECT_TRUE(s == CUMEM_SUCCESS || s == CUMEM_ERROR_INVALID_ARGUMENT ||
                s == CUMEM_ERROR_WRONG_DEVICE)
        << cumem_status_string(s) << ": " << cumem_last_error_message();
  }
}

TEST_F(VirtualIpc, OnlyWholeBuffersOfASharingResourceExport) {
  cumem_virtual_ipc_handle_t* h = nullptr;
  cumem_buffer_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(buffer, 0, 10, &s));
  CUMEM_EXPECT_ERROR(cumem_buffer_get_virtual_ipc_handle(s, &h), CUMEM_ERROR_NOT_SUPPORTED, "a slice");
  cumem_buffer_release(s);
  cumem_ipc_descriptor_t d;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_ipc_descriptor(buffer, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "cumem_buffer_get_virtual_ipc_handle");
  cumem_resource_t* plain = make(kGranule, [](cumem_virtual_resource_options_t& o) { o.handle_types = 0; });
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(plain, 10, nullptr, &b));
  CUMEM_EXPECT_ERROR(cumem_buffer_get_virtual_ipc_handle(b, &h), CUMEM_ERROR_NOT_SUPPORTED,
                     "without the POSIX fd handle type");
  cumem_buffer_release(b);
  cumem_resource_release(plain);
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 10, nullptr, &b));
  CUMEM_EXPECT_ERROR(cumem_buffer_get_virtual_ipc_handle(b, &h), CUMEM_ERROR_NOT_SUPPORTED,
                     "does not share as virtual IPC handles");
  cumem_buffer_release(b);
  cumem_resource_release(host);
  // After a resize the export lists the chunks it has now.
  CUMEM_ASSERT_OK(cumem_buffer_resize(buffer, 9 * kGranule, stream));
  CUMEM_ASSERT_OK(cumem_buffer_get_virtual_ipc_handle(buffer, &h));
  uint32_t n = 0;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(h, &n));
  EXPECT_EQ(n, 5u) << "3 chunks, then 2 more for granules 6 to 9";
  cumem_virtual_ipc_handle_release(h);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--virtual-ipc-child")
    return virtual_ipc_child(std::atoi(argv[2]));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
