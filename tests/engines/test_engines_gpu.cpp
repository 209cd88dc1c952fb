// Communication engines on a device (gpu suite): dma-buf export of every
// kind of device memory 10,000 times with no file descriptor left behind,
// registration of the fd with an RDMA NIC (ibv_reg_dmabuf_mr, libibverbs
// loaded at run time) where one exists, an unmap notification from the
// real driver's virtual memory, and what the fabric probe says here.
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

int open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;
}

class EnginesGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
    CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
    props = p;
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  }
  void TearDown() override {
    cumem_stream_release(stream);
    GpuTest::TearDown();
  }
  cumem_buffer_t* allocate(cumem_resource_t* r, size_t size) {
    cumem_buffer_t* b = nullptr;
    EXPECT_EQ(cumem_resource_allocate(r, size, stream, &b), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return b;
  }
  static uintptr_t address_of(const cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS);
    return reinterpret_cast<uintptr_t>(p);
  }

  cumem_device_properties_t props = CUMEM_DEVICE_PROPERTIES_INIT;
  cumem_stream_t* stream = nullptr;
};

// The buffers of every exportable kind: a default-pool buffer, a legacy
// cuMemAlloc one, a virtual one of four chunks, and the second block of a
// caching segment (an offset inside its allocation).
struct Kinds {
  std::vector<cumem_resource_t*> resources;
  std::vector<cumem_buffer_t*> buffers;
  std::vector<const char*> names;
  ~Kinds() {
    for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
    for (auto it = resources.rbegin(); it != resources.rend(); ++it) cumem_resource_release(*it);
  }
};

TEST_F(EnginesGpu, TenThousandDmabufExportsOfEveryKindLeaveNoFd) {
  if (!props.dma_buf_supported)
    GTEST_SKIP() << "device 0 reports no dma-buf support (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED "
                    "is 0: the open GPU kernel modules and a dma-buf capable kernel are needed)";
  Kinds k;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  k.resources.push_back(pool);
  cumem_resource_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &legacy));
  k.resources.push_back(legacy);
  cumem_virtual_resource_options_t vo = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  vo.chunk_size = 2 * kMiB;
  cumem_resource_t* vr = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, &vo, &vr));
  k.resources.push_back(vr);
  // The cache over a pool of its own, whose first allocation is its
  // segment: over the default pool, after the 1 MiB buffer, the driver
  // refused the segment (it most likely spans two of the pool's physical
  // allocations; export_ranges says so).
  cumem_pool_options_t own = CUMEM_POOL_OPTIONS_INIT;
  own.new_pool = CUMEM_TRUE;
  cumem_resource_t* cache_pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &own, &cache_pool));
  k.resources.push_back(cache_pool);
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(cache_pool, &cache));
  k.resources.push_back(cache);
  k.buffers = {allocate(pool, 1 * kMiB + 100), allocate(legacy, 5000), allocate(vr, 8 * kMiB),
               allocate(cache, 3 * kMiB), allocate(cache, 3 * kMiB)};
  k.names = {"device pool", "legacy device", "virtual (4 chunks)", "caching block 1",
             "caching block 2"};
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  // Each kind once, saying what was exported.
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
    const cumem_status_t s = cumem_buffer_get_dmabuf(k.buffers[i], 0, &d);
    ASSERT_EQ(s, CUMEM_SUCCESS) << k.names[i] << ": " << cumem_status_string(s) << ": "
                                << cumem_last_error_message();
    std::printf("[ info     ] %s: fd range %llu bytes at 0x%llx, offset %llu, whole %u\n",
                k.names[i], static_cast<unsigned long long>(d.length),
                static_cast<unsigned long long>(d.address),
                static_cast<unsigned long long>(d.offset), d.whole_allocation);
    EXPECT_EQ(d.address + d.offset, address_of(k.buffers[i])) << k.names[i];
    EXPECT_EQ(d.length % static_cast<uint64_t>(sysconf(_SC_PAGESIZE)), 0u) << k.names[i];
    if (i == 4) {
      EXPECT_GT(d.offset, 0u) << "the second block lies inside its segment";
    }
    close(d.fd);
  }
  const int before = open_fds();
  ASSERT_GT(before, 0);
  for (int i = 0; i < 10000; ++i) {
    const size_t which = static_cast<size_t>(i) % k.buffers.size();
    cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
    ASSERT_EQ(cumem_buffer_get_dmabuf(k.buffers[which], 0, &d), CUMEM_SUCCESS)
        << "export " << i << " (" << k.names[which] << "): " << cumem_last_error_message();
    ASSERT_EQ(close(d.fd), 0) << "export " << i;
  }
  EXPECT_EQ(open_fds(), before) << "file descriptors leaked over 10,000 exports";
}

// libibverbs at run time: only what the test calls, through opaque pointers.
struct Verbs {
  void* lib = nullptr;
  void** (*get_device_list)(int*) = nullptr;
  void (*free_device_list)(void**) = nullptr;
  const char* (*get_device_name)(void*) = nullptr;
  void* (*open_device)(void*) = nullptr;
  int (*close_device)(void*) = nullptr;
  void* (*alloc_pd)(void*) = nullptr;
  int (*dealloc_pd)(void*) = nullptr;
  void* (*reg_dmabuf_mr)(void*, uint64_t, size_t, uint64_t, int, int) = nullptr;
  int (*dereg_mr)(void*) = nullptr;

  std::string load() {
    lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::string("libibverbs.so.1 cannot be loaded: ") + dlerror();
    bool ok = find(get_device_list, "ibv_get_device_list") &&
              find(free_device_list, "ibv_free_device_list") &&
              find(get_device_name, "ibv_get_device_name") && find(open_device, "ibv_open_device") &&
              find(close_device, "ibv_close_device") && find(alloc_pd, "ibv_alloc_pd") &&
              find(dealloc_pd, "ibv_dealloc_pd") && find(dereg_mr, "ibv_dereg_mr");
    if (!ok) return "libibverbs.so.1 lacks the basic verbs";
    if (!find(reg_dmabuf_mr, "ibv_reg_dmabuf_mr"))
      return "libibverbs.so.1 has no ibv_reg_dmabuf_mr (rdma-core 34 or newer has it)";
    return "";
  }
  template <class F>
  bool find(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
  ~Verbs() {
    if (lib) dlclose(lib);
  }
};

TEST_F(EnginesGpu, TheFdRegistersWithAnRdmaNicWhereOneExists) {
  if (!props.dma_buf_supported) GTEST_SKIP() << "device 0 reports no dma-buf support";
  Verbs v;
  const std::string why = v.load();
  if (!why.empty()) GTEST_SKIP() << why;
  int n = 0;
  void** list = v.get_device_list(&n);
  if (!list || n == 0) {
    if (list) v.free_device_list(list);
    GTEST_SKIP() << "libibverbs finds no RDMA device here";
  }
  const std::string name = v.get_device_name(list[0]);
  void* context = v.open_device(list[0]);
  v.free_device_list(list);
  ASSERT_NE(context, nullptr) << "ibv_open_device(" << name << ")";
  void* pd = v.alloc_pd(context);
  ASSERT_NE(pd, nullptr) << "ibv_alloc_pd on " << name;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  cumem_buffer_t* first = allocate(cache, 3 * kMiB);
  cumem_buffer_t* b = allocate(cache, 3 * kMiB);  // inside its segment: offset > 0
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_dmabuf(b, 0, &d));
  const int access = 1 | 2 | 4;  // IBV_ACCESS_LOCAL_WRITE | _REMOTE_WRITE | _REMOTE_READ
  void* mr = v.reg_dmabuf_mr(pd, d.offset, 3 * kMiB, address_of(b), d.fd, access);
  EXPECT_NE(mr, nullptr) << "ibv_reg_dmabuf_mr on " << name << " at offset " << d.offset
                         << " of the fd failed (errno " << errno << ")";
  std::printf("[ info     ] ibv_reg_dmabuf_mr on %s: %s\n", name.c_str(), mr ? "registered" : "failed");
  if (mr) {
    EXPECT_EQ(v.dereg_mr(mr), 0);
  }
  close(d.fd);
  cumem_buffer_release(b);
  cumem_buffer_release(first);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
  v.dealloc_pd(pd);
  v.close_device(context);
}

struct Told {
  std::vector<cumem_unmap_event_t> events;
};
void told(const cumem_unmap_event_t* e, void* u) { static_cast<Told*>(u)->events.push_back(*e); }

TEST_F(EnginesGpu, AVirtualFreeIsNotifiedAndTheFabricProbeAnswers) {
  std::printf("[ info     ] fabric_export_supported %u, dma_buf_supported %u\n",
              props.fabric_export_supported, props.dma_buf_supported);
  Told t;
  uint64_t id = 0;
  CUMEM_ASSERT_OK(cumem_unmap_subscribe(told, &t, &id));
  cumem_virtual_resource_options_t vo = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  vo.chunk_size = 2 * kMiB;
  cumem_resource_t* vr = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, &vo, &vr));
  cumem_buffer_t* b = allocate(vr, 6 * kMiB);
  const uintptr_t p = address_of(b);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(vr));
  CUMEM_ASSERT_OK(cumem_unmap_unsubscribe(id));
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].reason, CUMEM_UNMAP_VIRTUAL);
  EXPECT_EQ(t.events[0].address, p);
  EXPECT_EQ(t.events[0].size, 6 * kMiB);
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

}  // namespace
