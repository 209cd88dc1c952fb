// IPC of device, pinned and legacy memory between real processes. Children
// are started with fork + exec of this program (--ipc-child ROLE FD), so
// none inherits the parent's CUDA state; they report by exit code and
// print why they failed.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ipc_test_util.hpp"

namespace {

constexpr size_t kBytes = 1 << 20;
constexpr uint32_t kPattern = 0x5a5a5a5a, kReply = 0xa5a5a5a5;

// The arguments that make this program a child in `role` on socket `fd`.
std::vector<std::string> child_args(const char* role, int fd) {
  return {"--ipc-child", role, std::to_string(fd)};
}

// Starts this program as a child in `role`, connected by a socket.
pid_t start_child(const char* role, int& socket) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  const int fd = fcntl(sv[1], F_DUPFD, 3);  // the child's end, without close-on-exec
  const pid_t pid = start_self(child_args(role, fd));
  close(fd);
  close(sv[1]);
  socket = sv[0];
  return pid;
}

// As start_child, with the child pid 1 of new PID and mount namespaces
// with a /proc of its own (as in another container); -1 with `skip` saying
// why where that is not allowed.
pid_t start_child_in_new_pid_namespace(const char* role, int& socket, std::string& skip) {
  return spawn_in_new_pid_namespace(
      [role](int s) -> int { exec_self(child_args(role, dup(s))); },  // dup: no close-on-exec
      socket, skip, /*own_proc=*/true);
}

// Copies a buffer to host memory and checks every 32-bit word.
bool holds(cumem_buffer_t* b, uint32_t word, cumem_stream_t* s) {
  size_t size = 0;
  if (cumem_buffer_size(b, &size) != CUMEM_SUCCESS) return false;
  cumem_resource_t* host = nullptr;
  cumem_buffer_t* h = nullptr;
  bool ok = cumem_host_resource_create(nullptr, &host) == CUMEM_SUCCESS &&
            cumem_resource_allocate(host, size, nullptr, &h) == CUMEM_SUCCESS &&
            cumem_buffer_copy_to(b, h, s) == CUMEM_SUCCESS && cumem_stream_synchronize(s) == CUMEM_SUCCESS;
  void* p = nullptr;
  if (ok && cumem_buffer_ptr(h, &p) == CUMEM_SUCCESS)
    for (size_t i = 0; i < size / 4 && ok; ++i) ok = static_cast<uint32_t*>(p)[i] == word;
  else
    ok = false;
  if (!ok) std::fprintf(stderr, "holds(0x%x): %s\n", word, cumem_last_error_message());
  cumem_buffer_release(h);
  cumem_resource_release(host);
  return ok;
}

// ---------------------------------------------------------------------------
// Children
// ---------------------------------------------------------------------------

struct Opened {
  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_allocation_handle_t* handle = nullptr;
  cumem_resource_t* resource = nullptr;
  cumem_buffer_t* buffer = nullptr;
  cumem_ipc_descriptor_t descriptor{};
  ~Opened() {
    cumem_buffer_release(buffer);
    cumem_resource_release(resource);
    cumem_allocation_handle_release(handle);
    cumem_stream_release(stream);
    cumem_device_release(device);
  }
};

// Receives a pool (or none, for legacy) and one descriptor, and opens it.
int receive_and_open(int socket, Opened& o, bool legacy) {
  CHILD_CHECK(cumem_device_get(0, &o.device), 2);
  CHILD_CHECK(cumem_stream_create(o.device, nullptr, &o.stream), 2);
  uint32_t n = 0;
  CHILD_CHECK(cumem_ipc_receive(socket, legacy ? nullptr : &o.handle, &o.descriptor, 1, &n), 3);
  if (legacy) {
    CHILD_CHECK(cumem_legacy_device_resource_create(o.device, &o.resource), 4);
  } else {
    CHILD_CHECK(cumem_resource_from_allocation_handle(o.device, o.handle, &o.resource), 4);
  }
  CHILD_CHECK(cumem_buffer_from_ipc_descriptor(o.resource, &o.descriptor, o.stream, &o.buffer), 5);
  // Opening the same descriptor again is safe: the same mapping, counted.
  cumem_buffer_t* again = nullptr;
  CHILD_CHECK(cumem_buffer_from_ipc_descriptor(o.resource, &o.descriptor, o.stream, &again), 5);
  void *p1 = nullptr, *p2 = nullptr;
  cumem_buffer_ptr(o.buffer, &p1);
  cumem_buffer_ptr(again, &p2);
  cumem_buffer_release(again);
  if (p1 != p2) return 11;
  if (!legacy) {
    // Importing the pool again gives the same resource.
    cumem_resource_t* same = nullptr;
    CHILD_CHECK(cumem_resource_from_allocation_handle(o.device, o.handle, &same), 12);
    cumem_resource_release(same);
    if (same != o.resource) return 13;
  }
  return 0;
}

// Verifies the pattern, writes the reply, records the producer's event if
// one follows the message, and says "done".
int consumer(int socket, bool legacy, bool with_event) {
  Opened o;
  if (int rc = receive_and_open(socket, o, legacy)) return rc;
  cumem_event_t* event = nullptr;
  if (with_event) {
    cumem_ipc_event_handle_t h;
    if (!read_exact(socket, h.bytes, sizeof h.bytes)) return 6;
    CHILD_CHECK(cumem_event_from_ipc_handle(o.device, &h, &event), 6);
  }
  if (!holds(o.buffer, kPattern, o.stream)) return 7;
  CHILD_CHECK(cumem_buffer_fill(o.buffer, kReply, 4, o.stream), 8);
  if (event) {
    CHILD_CHECK(cumem_event_record(event, o.stream), 9);
  } else {
    CHILD_CHECK(cumem_stream_synchronize(o.stream), 9);
  }
  const char done = 'd';
  if (!write_exact(socket, &done, 1)) return 10;
  // Wait for the producer's word before unmapping (it may still wait on
  // the event).
  char bye = 0;
  read_exact(socket, &bye, 1);
  cumem_event_release(event);
  return 0;
}

// Opens, then passes its own export on to a grandchild consumer.
int reexporter(int socket) {
  Opened o;
  if (int rc = receive_and_open(socket, o, false)) return rc;
  cumem_allocation_handle_t* again = nullptr;
  CHILD_CHECK(cumem_resource_get_allocation_handle(o.resource, &again), 6);
  cumem_ipc_descriptor_t d;
  CHILD_CHECK(cumem_buffer_get_ipc_descriptor(o.buffer, &d), 7);
  int to_c = -1;
  const pid_t c = start_child("consumer", to_c);
  CHILD_CHECK(cumem_ipc_send(to_c, again, &d, 1), 8);
  char done = 0;
  if (!read_exact(to_c, &done, 1)) return 9;
  const char bye = 'b';
  write_exact(to_c, &bye, 1);
  const int code = wait_exit_code(c);
  cumem_allocation_handle_release(again);
  if (code != 0) return 20 + code;
  if (!holds(o.buffer, kReply, o.stream)) return 11;
  return 0;
}

// Opens and says "ready", waits for word that the producer is gone, then
// checks the memory can still be read.
int holder(int socket) {
  Opened o;
  if (int rc = receive_and_open(socket, o, false)) return rc;
  const char ready = 'r';
  if (!write_exact(socket, &ready, 1)) return 6;
  char gone = 0;
  if (!read_exact(socket, &gone, 1)) return 7;
  return holds(o.buffer, kPattern, o.stream) ? 0 : 8;
}

// Exports a filled buffer, then exits abruptly (no frees) when told to.
int producer_that_exits(int socket) {
  cumem_device_t* device = nullptr;
  CHILD_CHECK(cumem_device_get(0, &device), 2);
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  po.ipc_enabled = CUMEM_TRUE;
  cumem_resource_t* pool = nullptr;
  CHILD_CHECK(cumem_device_resource_create(device, &po, &pool), 3);
  cumem_buffer_t* b = nullptr;
  CHILD_CHECK(cumem_resource_allocate(pool, kBytes, nullptr, &b), 4);
  CHILD_CHECK(cumem_buffer_fill(b, kPattern, 4, nullptr), 4);
  CHILD_CHECK(cumem_device_synchronize(device), 4);
  cumem_allocation_handle_t* h = nullptr;
  cumem_ipc_descriptor_t d;
  CHILD_CHECK(cumem_resource_get_allocation_handle(pool, &h), 5);
  CHILD_CHECK(cumem_buffer_get_ipc_descriptor(b, &d), 5);
  CHILD_CHECK(cumem_ipc_send(socket, h, &d, 1), 6);
  char go = 0;
  read_exact(socket, &go, 1);
  _exit(0);  // the context, the pool and the buffer go with the process
}

// Imports pool A and tries a descriptor of pool B.
int wrong_pool(int socket) {
  cumem_device_t* device = nullptr;
  CHILD_CHECK(cumem_device_get(0, &device), 2);
  cumem_allocation_handle_t* h = nullptr;
  cumem_ipc_descriptor_t d[2];
  uint32_t n = 0;
  CHILD_CHECK(cumem_ipc_receive(socket, &h, d, 2, &n), 3);
  if (n != 2) return 3;
  cumem_resource_t* a = nullptr;
  CHILD_CHECK(cumem_resource_from_allocation_handle(device, h, &a), 4);
  cumem_buffer_t* b = nullptr;
  if (cumem_buffer_from_ipc_descriptor(a, &d[0], nullptr, &b) != CUMEM_ERROR_INVALID_ARGUMENT ||
      std::string(cumem_last_error_message()).find("another pool") == std::string::npos) {
    std::fprintf(stderr, "wrong_pool: %s\n", cumem_last_error_message());
    return 5;
  }
  // The right pool, but a forged size (CRC recomputed): the tag does not
  // match, so nothing reaches the driver.
  if (cumem_buffer_from_ipc_descriptor(a, &d[1], nullptr, &b) != CUMEM_ERROR_INVALID_ARGUMENT ||
      std::string(cumem_last_error_message()).find("authentication tag") == std::string::npos) {
    std::fprintf(stderr, "oversize: %s\n", cumem_last_error_message());
    return 7;
  }
  void* p = nullptr;
  if (cumem_resource_allocate_raw(a, 64, nullptr, &p) != CUMEM_ERROR_NOT_SUPPORTED) return 6;
  cumem_resource_release(a);
  cumem_allocation_handle_release(h);
  cumem_device_release(device);
  return 0;
}

// Issue 17, item 1: a peer forges a descriptor's size (and recomputes the
// CRC). The importer gets the pool and two descriptors, the valid one and
// the forged one, and tries them in the order its role names; a forged
// size is refused whatever was opened before, and the valid one still
// opens and holds the pattern. Prints each step, so that a crash shows
// where it happened.
int forged(int socket, const std::string& order) {
  cumem_device_t* device = nullptr;
  CHILD_CHECK(cumem_device_get(0, &device), 2);
  cumem_stream_t* stream = nullptr;
  CHILD_CHECK(cumem_stream_create(device, nullptr, &stream), 2);
  cumem_allocation_handle_t* h = nullptr;
  cumem_ipc_descriptor_t d[2];
  uint32_t n = 0;
  CHILD_CHECK(cumem_ipc_receive(socket, &h, d, 2, &n), 3);
  cumem_resource_t* pool = nullptr;
  CHILD_CHECK(cumem_resource_from_allocation_handle(device, h, &pool), 4);
  cumem_buffer_t* valid = nullptr;
  auto open_valid = [&]() -> int {
    std::fprintf(stderr, "forged/%s: opening the valid descriptor\n", order.c_str());
    CHILD_CHECK(cumem_buffer_from_ipc_descriptor(pool, &d[0], stream, &valid), 5);
    if (!holds(valid, kPattern, stream)) return 6;
    return 0;
  };
  auto open_forged = [&]() -> int {
    std::fprintf(stderr, "forged/%s: opening the forged descriptor\n", order.c_str());
    cumem_buffer_t* b = nullptr;
    const cumem_status_t st = cumem_buffer_from_ipc_descriptor(pool, &d[1], stream, &b);
    std::fprintf(stderr, "forged/%s: -> %s: %s\n", order.c_str(), cumem_status_string(st),
                 cumem_last_error_message());
    if (st != CUMEM_ERROR_INVALID_ARGUMENT || b != nullptr) return 7;
    return 0;
  };
  for (char step : order) {
    int rc = 0;
    if (step == 'v') rc = open_valid();
    if (step == 'f') rc = open_forged();
    if (step == 'c') {  // close and release the valid buffer
      std::fprintf(stderr, "forged/%s: closing the valid buffer\n", order.c_str());
      CHILD_CHECK(cumem_buffer_close(valid, stream), 8);
      cumem_buffer_release(valid);
      valid = nullptr;
      CHILD_CHECK(cumem_stream_synchronize(stream), 8);
    }
    if (rc) return rc;
  }
  cumem_resource_statistics_t st = CUMEM_RESOURCE_STATISTICS_INIT;
  cumem_buffer_release(valid);
  CHILD_CHECK(cumem_resource_get_statistics(pool, &st), 9);
  if (st.live_allocations != 0) return 10;
  CHILD_CHECK(cumem_stream_synchronize(stream), 11);
  cumem_resource_release(pool);
  cumem_allocation_handle_release(h);
  cumem_stream_release(stream);
  cumem_device_release(device);
  std::fprintf(stderr, "forged/%s: done\n", order.c_str());
  return 0;
}

// End to end on the GPU: many random mutations of a valid descriptor, each
// with its CRC recomputed (the CRC is no authentication), opened against
// the imported pool. Every open either fails with a status or gives a
// buffer no larger than the exported one; the process never dies; the
// valid descriptor still opens afterwards. Fields are mutated one or a few
// at a time so that the checks behind the first one are reached.
int fuzz_open(int socket, unsigned seed, int rounds, bool legacy) {
  cumem_device_t* device = nullptr;
  CHILD_CHECK(cumem_device_get(0, &device), 2);
  cumem_allocation_handle_t* h = nullptr;
  cumem_ipc_descriptor_t valid;
  uint32_t n = 0;
  CHILD_CHECK(cumem_ipc_receive(socket, legacy ? nullptr : &h, &valid, 1, &n), 3);
  cumem_resource_t* pool = nullptr;
  if (legacy) {
    CHILD_CHECK(cumem_legacy_device_resource_create(device, &pool), 4);
  } else {
    CHILD_CHECK(cumem_resource_from_allocation_handle(device, h, &pool), 4);
  }
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const uint64_t interesting[] = {0, 1, kBytes - 1, kBytes, kBytes + 1, uint64_t{2} << 20,
                                  uint64_t{1} << 32, uint64_t{1} << 40, UINT64_MAX,
                                  UINT64_MAX - kBytes, uint64_t{1} << 63};
  int opened = 0;
  for (int round = 0; round < rounds; ++round) {
    cumem_ipc_descriptor_t d = valid;
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits; ++e) {
      const uint64_t pick = next();
      switch (pick % 6) {
        case 0: put_u64(d, 16, interesting[(pick >> 8) % 11]); break;            // size
        case 1: put_u64(d, 24, interesting[(pick >> 8) % 11]); break;            // offset
        case 2: d.bytes[64 + (pick >> 8) % 64] ^= static_cast<uint8_t>(1 + (pick >> 16) % 255); break;
        case 3: d.bytes[8 + (pick >> 8) % 8] = static_cast<uint8_t>(pick >> 16); break;  // version, type, kind
        case 4: d.bytes[32 + (pick >> 8) % 32] ^= static_cast<uint8_t>(1 + (pick >> 16) % 255); break;
        default: d.bytes[(pick >> 8) % 156] = static_cast<uint8_t>(pick >> 16); break;
      }
    }
    reseal(d);
    if (std::getenv("CUMEM_IPC_FUZZ_VERBOSE")) {
      std::fprintf(stderr, "fuzz round %d:", round);
      for (size_t i = 0; i < sizeof d.bytes; ++i)
        if (d.bytes[i] != valid.bytes[i] && i < 156) std::fprintf(stderr, " [%zu]=%02x", i, d.bytes[i]);
      std::fprintf(stderr, "\n");
    }
    cumem_buffer_t* b = nullptr;
    if (cumem_buffer_from_ipc_descriptor(pool, &d, nullptr, &b) != CUMEM_SUCCESS) continue;
    ++opened;
    size_t size = 0;
    CHILD_CHECK(cumem_buffer_size(b, &size), 5);
    // A pool descriptor is authenticated: its size is the exporter's. A
    // legacy one is not, and the importer sees only the driver's mapping
    // of the exporter's cuMemAlloc, which is rounded up to the 2 MiB
    // granularity: a forged size may reach the end of that mapping (the
    // exporter's own allocation), never beyond it.
    const size_t bound = legacy ? (kBytes + (size_t{2} << 20) - 1) / (size_t{2} << 20) * (size_t{2} << 20)
                                : kBytes;
    if (size > bound) {
      std::fprintf(stderr, "fuzz: round %d opened %zu bytes of a %zu-byte buffer (bound %zu)\n",
                   round, size, kBytes, bound);
      return 6;
    }
    CHILD_CHECK(cumem_buffer_close(b, nullptr), 7);
    cumem_buffer_release(b);
  }
  cumem_buffer_t* b = nullptr;
  CHILD_CHECK(cumem_buffer_from_ipc_descriptor(pool, &valid, nullptr, &b), 8);
  cumem_stream_t* stream = nullptr;
  CHILD_CHECK(cumem_stream_create(device, nullptr, &stream), 10);
  if (!holds(b, kPattern, stream)) return 9;
  cumem_buffer_release(b);
  cumem_stream_release(stream);
  std::fprintf(stderr, "fuzz: seed %u, %d rounds, %d mutated descriptors opened\n", seed, rounds,
               opened);
  cumem_resource_release(pool);
  cumem_allocation_handle_release(h);
  cumem_device_release(device);
  return 0;
}

// Opens and then waits to be killed.
int hang(int socket) {
  Opened o;
  if (int rc = receive_and_open(socket, o, false)) return rc;
  const char ready = 'r';
  write_exact(socket, &ready, 1);
  for (;;) pause();
}

int run_child(const std::string& role, int socket) {
  if (role == "consumer") return consumer(socket, false, false);
  if (role == "consumer_event") return consumer(socket, false, true);
  if (role == "consumer_legacy") return consumer(socket, true, false);
  if (role == "reexporter") return reexporter(socket);
  if (role == "holder") return holder(socket);
  if (role == "producer_that_exits") return producer_that_exits(socket);
  if (role == "wrong_pool") return wrong_pool(socket);
  if (role == "hang") return hang(socket);
  if (role.rfind("forged_", 0) == 0) return forged(socket, role.substr(7));
  if (role == "fuzz_open") {
    const char* seed = std::getenv("CUMEM_IPC_FUZZ_SEED");
    const char* rounds = std::getenv("CUMEM_IPC_FUZZ_ROUNDS");
    return fuzz_open(socket, seed ? static_cast<unsigned>(std::atoi(seed)) : 1,
                     rounds ? std::atoi(rounds) : 3000, false);
  }
  if (role == "fuzz_open_legacy") {
    const char* seed = std::getenv("CUMEM_IPC_FUZZ_SEED");
    const char* rounds = std::getenv("CUMEM_IPC_FUZZ_ROUNDS");
    return fuzz_open(socket, seed ? static_cast<unsigned>(std::atoi(seed)) : 1,
                     rounds ? std::atoi(rounds) : 3000, true);
  }
  std::fprintf(stderr, "unknown role %s\n", role.c_str());
  return 99;
}

// ---------------------------------------------------------------------------
// Tests (the producer side)
// ---------------------------------------------------------------------------

class IpcGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int32_t n = 0;
    if (cumem_device_count(&n) != CUMEM_SUCCESS || n == 0)
      GTEST_SKIP() << "no CUDA device: " << cumem_last_error_message();
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
    CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
    if (!(p.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD))
      GTEST_SKIP() << "device 0 cannot export pools as file descriptors";
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    fds_before = open_fd_count();
  }
  void TearDown() override {
    cumem_stream_release(stream);
    cumem_device_release(device);
  }

  // A new IPC-enabled device (or pinned) pool with a buffer holding kPattern.
  void make_pool(bool pinned = false) {
    cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
    po.new_pool = CUMEM_TRUE;
    po.ipc_enabled = CUMEM_TRUE;
    CUMEM_ASSERT_OK(pinned ? cumem_pinned_resource_create(device, &po, &pool)
                           : cumem_device_resource_create(device, &po, &pool));
    CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &buffer));
    CUMEM_ASSERT_OK(cumem_buffer_fill(buffer, kPattern, 4, stream));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
    CUMEM_ASSERT_OK(cumem_resource_get_allocation_handle(pool, &handle));
    CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(buffer, &descriptor));
  }
  void release_pool() {
    cumem_allocation_handle_release(handle);
    cumem_buffer_release(buffer);
    cumem_resource_release(pool);
    handle = nullptr;
    buffer = nullptr;
    pool = nullptr;
  }
  // Runs a consumer of `role` on (handle, descriptor) and checks the reply.
  void run_consumer(const char* role, const cumem_allocation_handle_t* h) {
    int socket = -1;
    const pid_t child = start_child(role, socket);
    ASSERT_GT(child, 0);
    serve_consumer(child, socket, h);
  }
  // Sends (h, descriptor) to a started consumer and checks its reply.
  void serve_consumer(pid_t child, int socket, const cumem_allocation_handle_t* h) {
    CUMEM_ASSERT_OK(cumem_ipc_send(socket, h, &descriptor, 1));
    char done = 0;
    EXPECT_TRUE(read_exact(socket, &done, 1)) << "the consumer died before replying";
    const char bye = 'b';
    write_exact(socket, &bye, 1);
    EXPECT_EQ(wait_exit_code(child), 0);
    close(socket);
    EXPECT_TRUE(holds(buffer, kReply, stream));
  }

  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* pool = nullptr;
  cumem_buffer_t* buffer = nullptr;
  cumem_allocation_handle_t* handle = nullptr;
  cumem_ipc_descriptor_t descriptor{};
  int fds_before = 0;
};

TEST_F(IpcGpu, DevicePoolChildVerifiesAndWrites) {
  make_pool();
  run_consumer("consumer", handle);
  release_pool();
  EXPECT_EQ(open_fd_count(), fds_before) << "file descriptors leaked";
}

// The socket path between PID namespaces (containers): the consumer is
// pid 1 of a namespace of its own.
TEST_F(IpcGpu, DevicePoolChildInAnotherPidNamespaceVerifiesAndWrites) {
  make_pool();
  int socket = -1;
  std::string skip;
  const pid_t between = start_child_in_new_pid_namespace("consumer", socket, skip);
  if (between < 0) {
    release_pool();
    GTEST_SKIP() << skip;
  }
  serve_consumer(between, socket, handle);
  release_pool();
  EXPECT_EQ(open_fd_count(), fds_before) << "file descriptors leaked";
}

TEST_F(IpcGpu, PinnedPoolChildVerifiesAndWrites) {
  cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
  if (p.host_numa_id < 0) GTEST_SKIP() << "IPC pinned pools need a host NUMA node";
  make_pool(/*pinned=*/true);
  run_consumer("consumer", handle);
  release_pool();
}

TEST_F(IpcGpu, TwoChildrenAtOnce) {
  make_pool();
  int s1 = -1, s2 = -1;
  const pid_t c1 = start_child("consumer", s1);
  const pid_t c2 = start_child("consumer", s2);
  CUMEM_ASSERT_OK(cumem_ipc_send(s1, handle, &descriptor, 1));
  char done = 0;
  // One at a time writes the reply; the second still sees the pattern only
  // if it reads first, so the second gets the buffer after a refill.
  EXPECT_TRUE(read_exact(s1, &done, 1));
  CUMEM_ASSERT_OK(cumem_buffer_fill(buffer, kPattern, 4, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_ipc_send(s2, handle, &descriptor, 1));
  EXPECT_TRUE(read_exact(s2, &done, 1));
  const char bye = 'b';
  write_exact(s1, &bye, 1);
  write_exact(s2, &bye, 1);
  EXPECT_EQ(wait_exit_code(c1), 0);
  EXPECT_EQ(wait_exit_code(c2), 0);
  close(s1);
  close(s2);
  EXPECT_TRUE(holds(buffer, kReply, stream));
  release_pool();
}

TEST_F(IpcGpu, ReexportedThroughASecondProcessToAThird) {
  make_pool();
  int socket = -1;
  const pid_t b = start_child("reexporter", socket);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  EXPECT_EQ(wait_exit_code(b), 0);
  close(socket);
  EXPECT_TRUE(holds(buffer, kReply, stream));
  release_pool();
}

TEST_F(IpcGpu, InterprocessEventOrdersTheConsumersWrite) {
  make_pool();
  cumem_event_options_t eo = CUMEM_EVENT_OPTIONS_INIT;
  eo.interprocess = CUMEM_TRUE;
  cumem_event_t* event = nullptr;
  CUMEM_ASSERT_OK(cumem_event_create(device, &eo, &event));
  cumem_ipc_event_handle_t eh;
  CUMEM_ASSERT_OK(cumem_event_get_ipc_handle(event, &eh));
  int socket = -1;
  const pid_t child = start_child("consumer_event", socket);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  ASSERT_TRUE(write_exact(socket, eh.bytes, sizeof eh.bytes));
  char done = 0;
  EXPECT_TRUE(read_exact(socket, &done, 1));
  CUMEM_ASSERT_OK(cumem_stream_wait_event(stream, event));
  EXPECT_TRUE(holds(buffer, kReply, stream));
  const char bye = 'b';
  write_exact(socket, &bye, 1);
  EXPECT_EQ(wait_exit_code(child), 0);
  close(socket);
  cumem_event_release(event);
  // A timed event cannot be interprocess; a plain one has no IPC handle.
  eo.enable_timing = CUMEM_TRUE;
  CUMEM_EXPECT_ERROR(cumem_event_create(device, &eo, &event), CUMEM_ERROR_INVALID_ARGUMENT,
                     "timing");
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &event));
  CUMEM_EXPECT_ERROR(cumem_event_get_ipc_handle(event, &eh), CUMEM_ERROR_INVALID_STATE,
                     "interprocess");
  cumem_event_release(event);
  release_pool();
}

TEST_F(IpcGpu, LegacyDeviceResourceSharesByDescriptorAlone) {
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &pool));
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &buffer));
  CUMEM_ASSERT_OK(cumem_buffer_fill(buffer, kPattern, 4, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(buffer, &descriptor));
  cumem_allocation_handle_t* none = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_get_allocation_handle(pool, &none), CUMEM_ERROR_NOT_SUPPORTED,
                     "IPC-enabled");
  run_consumer("consumer_legacy", nullptr);
  release_pool();
}

TEST_F(IpcGpu, ProducerExitsWhileTheConsumerHoldsTheBuffer) {
  int to_producer = -1, to_holder = -1;
  const pid_t producer = start_child("producer_that_exits", to_producer);
  cumem_allocation_handle_t* h = nullptr;
  uint32_t n = 0;
  CUMEM_ASSERT_OK(cumem_ipc_receive(to_producer, &h, &descriptor, 1, &n));
  const pid_t holder = start_child("holder", to_holder);
  CUMEM_ASSERT_OK(cumem_ipc_send(to_holder, h, &descriptor, 1));
  char ready = 0;
  EXPECT_TRUE(read_exact(to_holder, &ready, 1));
  const char go = 'x';
  write_exact(to_producer, &go, 1);
  EXPECT_EQ(wait_exit_code(producer), 0);
  write_exact(to_holder, &go, 1);
  // Documented: the driver keeps the memory of an imported pool alive while
  // it is mapped, so the holder still reads the producer's data.
  EXPECT_EQ(wait_exit_code(holder), 0);
  close(to_producer);
  close(to_holder);
  cumem_allocation_handle_release(h);
}

TEST_F(IpcGpu, KilledConsumerLeavesTheProducerUnaffected) {
  make_pool();
  int socket = -1;
  const pid_t child = start_child("hang", socket);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
  char ready = 0;
  EXPECT_TRUE(read_exact(socket, &ready, 1));
  kill(child, SIGKILL);
  EXPECT_EQ(wait_exit_code(child), 128 + SIGKILL);
  close(socket);
  CUMEM_ASSERT_OK(cumem_buffer_fill(buffer, kReply, 4, stream));
  EXPECT_TRUE(holds(buffer, kReply, stream));
  cumem_buffer_t* more = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &more));
  CUMEM_ASSERT_OK(cumem_buffer_close(more, stream));
  cumem_buffer_release(more);
  release_pool();
}

TEST_F(IpcGpu, DescriptorOfAnotherPoolIsRefused) {
  make_pool();
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  po.ipc_enabled = CUMEM_TRUE;
  cumem_resource_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &po, &other));
  cumem_buffer_t* other_buffer = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(other, 4096, stream, &other_buffer));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  // A buffer of a pool that was never exported can be shared too.
  cumem_ipc_descriptor_t foreign;
  CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(other_buffer, &foreign));
  int socket = -1;
  cumem_ipc_descriptor_t sent[2] = {foreign, descriptor};
  put_u64(sent[1], 16, uint64_t{1} << 40);  // size: 1 TiB
  reseal(sent[1]);
  const pid_t child = start_child("wrong_pool", socket);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, sent, 2));
  EXPECT_EQ(wait_exit_code(child), 0);
  close(socket);
  cumem_buffer_release(other_buffer);
  cumem_resource_release(other);
  release_pool();
}

// Forged sizes (CRC recomputed) against device and pinned pools, tried
// first, after the valid descriptor was opened and closed, and while it is
// open: refused every time, never a crash (each importer is a process of
// its own, so a crash is a failed exit code here).
TEST_F(IpcGpu, ForgedSizesAreRefusedAndNeverCrashTheImporter) {
  cumem_device_properties_t props = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &props));
  const uint64_t sizes[] = {kBytes + 1, kBytes * 2, uint64_t{64} << 20, uint64_t{1} << 40,
                            UINT64_MAX, UINT64_MAX - kBytes, 0};
  const char* orders[] = {"fv", "vcfv", "vf", "fvcf"};
  for (bool pinned : {false, true}) {
    if (pinned && props.host_numa_id < 0) continue;  // IPC pinned pools need a NUMA node
    make_pool(pinned);
    for (uint64_t size : sizes) {
      for (const char* order : orders) {
        cumem_ipc_descriptor_t sent[2] = {descriptor, descriptor};
        put_u64(sent[1], 16, size);
        reseal(sent[1]);
        int socket = -1;
        const std::string role = std::string("forged_") + order;
        const pid_t child = start_child(role.c_str(), socket);
        ASSERT_GT(child, 0);
        CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, sent, 2));
        EXPECT_EQ(wait_exit_code(child), 0)
            << (pinned ? "pinned" : "device") << " pool, forged size " << size << ", order "
            << order << " (128 + n: killed by signal n)";
        close(socket);
      }
    }
    release_pool();
  }
}

// The end-to-end fuzz above, on device and pinned pools
// (CUMEM_IPC_FUZZ_SEED and CUMEM_IPC_FUZZ_ROUNDS choose another run).
TEST_F(IpcGpu, MutatedDescriptorsWithRecomputedCrcsNeverCrashTheImporter) {
  cumem_device_properties_t props = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &props));
  for (bool pinned : {false, true}) {
    if (pinned && props.host_numa_id < 0) continue;
    make_pool(pinned);
    int socket = -1;
    const pid_t child = start_child("fuzz_open", socket);
    ASSERT_GT(child, 0);
    CUMEM_ASSERT_OK(cumem_ipc_send(socket, handle, &descriptor, 1));
    EXPECT_EQ(wait_exit_code(child), 0) << (pinned ? "pinned" : "device")
                                        << " pool (128 + n: killed by signal n)";
    close(socket);
    release_pool();
  }
}

// Legacy descriptors carry no tag (no pool, no key): what reaches the
// driver is its own IPC handle. Fuzzed the same way, to see that it holds.
TEST_F(IpcGpu, MutatedLegacyDescriptorsNeverCrashTheImporter) {
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &pool));
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool, kBytes, stream, &buffer));
  CUMEM_ASSERT_OK(cumem_buffer_fill(buffer, kPattern, 4, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(buffer, &descriptor));
  int socket = -1;
  const pid_t child = start_child("fuzz_open_legacy", socket);
  ASSERT_GT(child, 0);
  CUMEM_ASSERT_OK(cumem_ipc_send(socket, nullptr, &descriptor, 1));
  EXPECT_EQ(wait_exit_code(child), 0) << "(128 + n: killed by signal n)";
  close(socket);
  release_pool();
}

TEST_F(IpcGpu, SharingNeedsAnIpcPoolAndAWholeBuffer) {
  cumem_resource_t* plain = nullptr;
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &po, &plain));
  cumem_allocation_handle_t* h = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_get_allocation_handle(plain, &h), CUMEM_ERROR_NOT_SUPPORTED,
                     "ipc_enabled");
  cumem_resource_release(plain);
  make_pool();
  cumem_buffer_t* part = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(buffer, 4096, 4096, &part));
  cumem_ipc_descriptor_t d;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_ipc_descriptor(part, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "share the whole buffer");
  cumem_buffer_release(part);
  // Exporting many times leaks no file descriptor.
  const int before = open_fd_count();
  for (int i = 0; i < 200; ++i) {
    cumem_allocation_handle_t* again = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_get_allocation_handle(pool, &again));
    CUMEM_ASSERT_OK(cumem_buffer_get_ipc_descriptor(buffer, &d));
    cumem_allocation_handle_release(again);
  }
  EXPECT_EQ(open_fd_count(), before);
  release_pool();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--ipc-child") return run_child(argv[2], std::atoi(argv[3]));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
