// libcumem's memory under a real NCCL (issue 23), on one GPU: a one-rank
// communicator registers buffers of every kind of resource (the driver's
// pool, cuMemAlloc, the NCCL-qualified virtual resource, blocks of the
// caching adaptor) with ncclCommRegister and, where the NCCL version has it,
// ncclCommWindowRegister, and runs all-reduces on them. NCCL is loaded at
// run time as the driver is: $CUMEM_LIBNCCL (the build sets it to the NCCL
// of the Python packages it finds), else libnccl.so.2; without one, the
// tests skip saying so. NCCL_NVLS_ENABLE=0: no NVLink multicast, ever.
// NCCL_DEBUG=INFO (subsystems INIT and REG) is written to a file whose
// registration lines the last test prints.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

namespace {

// The few NCCL declarations the test needs (nccl.h is not on the build
// machine): the types are NCCL's own, by value.
using ncclResult_t = int;
struct ncclUniqueId {
  char internal[128];
};
using ncclComm_t = void*;
using ncclWindow_t = void*;
constexpr int ncclFloat32 = 7;
constexpr int ncclSum = 0;
constexpr int NCCL_WIN_DEFAULT = 0;

struct Nccl {
  void* library = nullptr;
  std::string why_not;  // "" when loaded
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*comm_finalize)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, int, int, ncclComm_t, void*) = nullptr;
  ncclResult_t (*comm_register)(ncclComm_t, void*, size_t, void**) = nullptr;
  ncclResult_t (*comm_deregister)(ncclComm_t, void*) = nullptr;
  ncclResult_t (*window_register)(ncclComm_t, void*, size_t, ncclWindow_t*, int) = nullptr;
  ncclResult_t (*window_deregister)(ncclComm_t, ncclWindow_t) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  const char* (*last_error)(ncclComm_t) = nullptr;
  int version = 0;
  std::string debug_file;

  template <class F>
  bool find(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(library, name));
    return f != nullptr;
  }

  void load() {
    // Never NVLink SHARP / multicast on the machines this runs on.
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,REG", 1);
    const char* tmp = std::getenv("TMPDIR");
    debug_file = std::string(tmp && *tmp ? tmp : "/tmp") + "/cumem-nccl-" +
                 std::to_string(getpid()) + ".log";
    setenv("NCCL_DEBUG_FILE", debug_file.c_str(), 1);
    const char* named = std::getenv("CUMEM_LIBNCCL");
    const char* path = named && *named ? named : "libnccl.so.2";
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      why_not = std::string("no NCCL: dlopen(") + path + ") failed: " + dlerror() +
                " (set $CUMEM_LIBNCCL to a libnccl.so.2)";
      return;
    }
    if (!find(get_version, "ncclGetVersion") || !find(get_unique_id, "ncclGetUniqueId") ||
        !find(comm_init_rank, "ncclCommInitRank") || !find(comm_destroy, "ncclCommDestroy") ||
        !find(all_reduce, "ncclAllReduce") || !find(error_string, "ncclGetErrorString") ||
        !find(comm_register, "ncclCommRegister") || !find(comm_deregister, "ncclCommDeregister")) {
      why_not = std::string(path) + " lacks ncclCommRegister or another call (NCCL before 2.19)";
      return;
    }
    find(comm_finalize, "ncclCommFinalize");
    find(last_error, "ncclGetLastError");
    find(window_register, "ncclCommWindowRegister");    // NCCL 2.27
    find(window_deregister, "ncclCommWindowDeregister");
    get_version(&version);
  }

  std::string describe(ncclResult_t r, ncclComm_t comm) const {
    std::string s = "NCCL error " + std::to_string(r) + " (" + error_string(r) + ")";
    if (last_error) s += std::string(": ") + last_error(comm);
    return s;
  }
};

Nccl& nccl() {
  static Nccl n;
  static bool loaded = false;
  if (!loaded) {
    loaded = true;
    n.load();
  }
  return n;
}

#define NCCL_ASSERT(call)                                                           \
  do {                                                                              \
    const ncclResult_t nccl_result_ = (call);                                       \
    ASSERT_EQ(nccl_result_, 0) << #call << ": " << nccl().describe(nccl_result_, comm); \
  } while (0)

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

class NcclGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    Nccl& n = nccl();
    if (!n.why_not.empty()) GTEST_SKIP() << n.why_not;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
    ncclUniqueId id;
    NCCL_ASSERT(n.get_unique_id(&id));
    NCCL_ASSERT(n.comm_init_rank(&comm, 1, id, 0));
  }
  void TearDown() override {
    if (comm) {
      if (nccl().comm_finalize) nccl().comm_finalize(comm);
      nccl().comm_destroy(comm);
    }
    if (stream) cumem_stream_release(stream);
    GpuTest::TearDown();
  }

  // Fills `send` with `value` and `recv` with zeros, all-reduces (sum, one
  // rank: recv == send) `count` floats at the two pointers, and checks recv.
  void all_reduce_and_check(cumem_buffer_t* send, cumem_buffer_t* recv, size_t offset,
                            size_t count, float value) {
    CUMEM_ASSERT_OK(cumem_buffer_fill(send, bits_of(value), 4, stream));
    CUMEM_ASSERT_OK(cumem_buffer_fill(recv, 0, 4, stream));
    auto* s = static_cast<char*>(buffer_address(send)) + offset;
    auto* r = static_cast<char*>(buffer_address(recv)) + offset;
    NCCL_ASSERT(nccl().all_reduce(s, r, count, ncclFloat32, ncclSum, comm, native));
    std::vector<float> host(count);
    cumem_buffer_t* view = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_wrap(host.data(), count * sizeof(float), nullptr, nullptr, &view));
    cumem_buffer_t* part = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_slice(recv, offset, count * sizeof(float), &part));
    CUMEM_ASSERT_OK(cumem_buffer_copy_to(part, view, stream));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
    size_t wrong = 0;
    for (float f : host) wrong += f != value;
    EXPECT_EQ(wrong, 0u) << "of " << count << " floats";
    cumem_buffer_release(part);
    cumem_buffer_release(view);
  }

  // Two buffers of `r`, registered with ncclCommRegister, all-reduced whole
  // and on an inner range (a sub-allocation's offset), then deregistered.
  void registered_all_reduce(cumem_resource_t* r, const char* what) {
    SCOPED_TRACE(what);
    const size_t bytes = size_t{8} << 20;
    cumem_buffer_t *send = nullptr, *recv = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, bytes, stream, &send));
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, bytes, stream, &recv));
    void *hs = nullptr, *hr = nullptr;
    NCCL_ASSERT(nccl().comm_register(comm, buffer_address(send), bytes, &hs));
    NCCL_ASSERT(nccl().comm_register(comm, buffer_address(recv), bytes, &hr));
    all_reduce_and_check(send, recv, 0, bytes / sizeof(float), 1.5f);
    all_reduce_and_check(send, recv, 4096, (bytes - 8192) / sizeof(float), -2.25f);
    NCCL_ASSERT(nccl().comm_deregister(comm, hs));
    NCCL_ASSERT(nccl().comm_deregister(comm, hr));
    CUMEM_ASSERT_OK(cumem_buffer_close(send, stream));
    CUMEM_ASSERT_OK(cumem_buffer_close(recv, stream));
    cumem_buffer_release(send);
    cumem_buffer_release(recv);
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  }

  cumem_resource_t* nccl_qualified_resource() {
    cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
    o.nccl_qualified = CUMEM_TRUE;
    cumem_resource_t* r = nullptr;
    EXPECT_EQ(cumem_virtual_resource_create(device, &o, &r), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return r;
  }

  cumem_stream_t* stream = nullptr;
  void* native = nullptr;
  ncclComm_t comm = nullptr;
};

TEST_F(NcclGpu, RegisteredBuffersOfEveryResourceAllReduce) {
  std::printf("NCCL %d from %s\n", nccl().version,
              std::getenv("CUMEM_LIBNCCL") ? std::getenv("CUMEM_LIBNCCL") : "libnccl.so.2");
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  registered_all_reduce(pool, "the device's memory pool");
  cumem_resource_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &legacy));
  registered_all_reduce(legacy, "cuMemAlloc");
  cumem_resource_t* vr = nccl_qualified_resource();
  ASSERT_NE(vr, nullptr);
  registered_all_reduce(vr, "the NCCL-qualified virtual resource");
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  registered_all_reduce(cache, "blocks of the caching adaptor");
  cumem_resource_release(cache);
  cumem_resource_release(vr);
  cumem_resource_release(legacy);
  cumem_resource_release(pool);
}

// NCCL 2.27's windows (symmetric memory) need VMM memory: the qualified
// virtual resource's buffers are accepted and all-reduce through them.
TEST_F(NcclGpu, TheQualifiedVirtualResourcesBuffersRegisterAsWindows) {
  if (!nccl().window_register || !nccl().window_deregister)
    GTEST_SKIP() << "NCCL " << nccl().version << " has no ncclCommWindowRegister (2.27+)";
  cumem_resource_t* vr = nccl_qualified_resource();
  ASSERT_NE(vr, nullptr);
  const size_t bytes = size_t{4} << 20;
  cumem_buffer_t *send = nullptr, *recv = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(vr, bytes, stream, &send));
  CUMEM_ASSERT_OK(cumem_resource_allocate(vr, bytes, stream, &recv));
  ncclWindow_t ws = nullptr, wr = nullptr;
  NCCL_ASSERT(nccl().window_register(comm, buffer_address(send), bytes, &ws, NCCL_WIN_DEFAULT));
  NCCL_ASSERT(nccl().window_register(comm, buffer_address(recv), bytes, &wr, NCCL_WIN_DEFAULT));
  EXPECT_NE(ws, nullptr);
  all_reduce_and_check(send, recv, 0, bytes / sizeof(float), 3.0f);
  NCCL_ASSERT(nccl().window_deregister(comm, ws));
  NCCL_ASSERT(nccl().window_deregister(comm, wr));
  cumem_buffer_release(send);
  cumem_buffer_release(recv);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_resource_release(vr);
}

// What NCCL_DEBUG=INFO said about registration (REG) in this process.
TEST_F(NcclGpu, ZzPrintsWhatNcclSaidAboutRegistration) {
  std::ifstream in(nccl().debug_file);
  ASSERT_TRUE(in) << "NCCL wrote no debug file at " << nccl().debug_file;
  std::string line;
  int lines = 0, shown = 0;
  while (std::getline(in, line)) {
    ++lines;
    if ((line.find("REG") != std::string::npos || line.find("egist") != std::string::npos) &&
        shown < 40) {
      std::printf("  %s\n", line.c_str());
      ++shown;
    }
  }
  std::printf("NCCL_DEBUG=INFO: %d lines, %d about registration (%s)\n", lines, shown,
              nccl().debug_file.c_str());
  EXPECT_GT(lines, 0);
  in.close();
  std::remove(nccl().debug_file.c_str());
}

}  // namespace
