// The C++ facade on a real GPU: devices, streams, events, every GPU resource
// kind, byte-exact copies between them, RAII closing, compile and launch,
// IPC export and interprocess events within one process.
#include <cumem/cumem.hpp>

#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

// Device 0 through the facade, or a skip that says why there is none.
class FacadeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int32_t count = 0;
    if (cumem_device_count(&count) != CUMEM_SUCCESS)
      GTEST_SKIP() << "no CUDA driver: " << cumem_last_error_message();
    if (count == 0) GTEST_SKIP() << "the CUDA driver reports no device";
    device_count = count;
    device = cumem::Device::get(0);
    props = device.properties();
  }

  // A host buffer holding bytes 0, 7, 14, ... (mod 251, so no power-of-two period).
  cumem::Buffer pattern(size_t size) const {
    cumem::Buffer b = host.allocate(size);
    for (size_t i = 0; i < size; ++i) b.data<uint8_t>()[i] = static_cast<uint8_t>((i * 7) % 251);
    return b;
  }
  // The contents of any buffer, through a host buffer.
  std::vector<uint8_t> read(const cumem::Buffer& b, const cumem::Stream& stream) const {
    const cumem::Buffer h = host.allocate(b.size());
    b.copy_to(h, stream);
    stream.synchronize();
    return std::vector<uint8_t>(h.data<uint8_t>(), h.data<uint8_t>() + h.size());
  }

  cumem::Device device;
  cumem_device_properties_t props = CUMEM_DEVICE_PROPERTIES_INIT;
  int32_t device_count = 0;
  cumem::Resource host = cumem::Resource::host();
};

// Runs `fn` and returns the status of the cumem::Error it throws.
template <class Fn>
cumem_status_t status_of(Fn&& fn) {
  try {
    fn();
  } catch (const cumem::Error& e) {
    return e.status();
  }
  return CUMEM_SUCCESS;
}

const char* const kAddOne = R"(
extern "C" __global__ void add_one(float* p, size_t n) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}
struct Affine { float scale; int offset; };
extern "C" __global__ void affine(const float* in, float* out, unsigned int n, Affine a) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * a.scale + (float)a.offset;
}
template <typename T> __global__ void set_index(T* p, unsigned int n) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (T)i;
}
)";

// Must match the kernel's parameter of the same name, byte for byte.
struct Affine {
  float scale;
  int offset;
};

// The program, or a skip when NVRTC is missing.
#define COMPILE_OR_SKIP(program, ...)                                                  \
  cumem::Program program;                                                              \
  try {                                                                                \
    program = cumem::Program::compile(__VA_ARGS__);                                    \
  } catch (const cumem::Error& e) {                                                    \
    if (e.status() == CUMEM_ERROR_NO_COMPILER) GTEST_SKIP() << "no NVRTC: " << e.what(); \
    throw;                                                                             \
  }

// Copies at scale through the facade: a batch over buffers, the device's
// memory resource, copy_to with no destination, batched prefetch.
TEST_F(FacadeGpu, BatchesAndTheDevicesMemoryResource) {
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource mr = device.memory_resource();
  EXPECT_EQ(mr.kind(), CUMEM_RESOURCE_DEVICE);
  const cumem::Buffer src = pattern(1 << 16);
  std::vector<cumem::Buffer> on_device;
  for (int i = 0; i < 4; ++i) on_device.push_back(device.allocate(1 << 14, s));
  std::vector<cumem::BatchCopy> copies;
  for (size_t i = 0; i < on_device.size(); ++i)
    copies.push_back({&on_device[i], 0, &src, i << 14, 1 << 14});
  cumem::copy_batch(s, copies);
  const cumem::Buffer back = on_device[3].copy_to(s);
  const std::vector<uint8_t> got = read(back, s);
  for (size_t k = 0; k < got.size(); ++k)
    ASSERT_EQ(got[k], static_cast<uint8_t>((((3u << 14) + k) * 7) % 251)) << k;
  EXPECT_TRUE(cumem::batch_statistics().driver_copy_batch);
  if (props.concurrent_managed_access) {
    cumem_managed_resource_options_t o = cumem::managed_resource_options();
    o.disable_pool = CUMEM_TRUE;
    const cumem::Resource managed = cumem::Resource::managed(device, o);
    const cumem::Buffer m1 = managed.allocate(1 << 16, s);
    const cumem::Buffer m2 = managed.allocate(1 << 16, s);
    cumem::prefetch_batch(s, {&m1, &m2}, cumem::location::device(0));
    s.synchronize();
    EXPECT_EQ(m1.last_prefetch_location().type, CUMEM_LOCATION_DEVICE);
    EXPECT_EQ(m2.last_prefetch_location().id, 0);
  }
}

}  // namespace

TEST_F(FacadeGpu, DeviceProperties) {
  EXPECT_GE(cumem::Device::count(), 1);
  EXPECT_GT(cumem::driver_version(), 0);
  EXPECT_EQ(device.ordinal(), 0);
  EXPECT_EQ(props.ordinal, 0);
  EXPECT_EQ(device.name(), std::string(props.name));
  EXPECT_FALSE(device.name().empty());
  EXPECT_EQ(device.attribute(16 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */),
            props.multiprocessor_count);
  const cumem::MemoryInfo mem = device.memory_info();
  EXPECT_GT(mem.total, 0u);
  EXPECT_LE(mem.free, mem.total);
  const cumem::PriorityRange range = device.stream_priority_range();
  EXPECT_LE(range.greatest, range.least);
  EXPECT_FALSE(device.can_access_peer(device));
  EXPECT_EQ(status_of([&] { device.enable_peer_access(device); }), CUMEM_ERROR_INVALID_ARGUMENT);
  device.set_current();
  device.synchronize();
  // The same device object on every get(), as the C API promises.
  const cumem::Device again = cumem::Device::get(0);
  EXPECT_EQ(again.get(), device.get());
  EXPECT_EQ(status_of([&] { cumem::Device::get(device_count); }), CUMEM_ERROR_NO_DEVICE);
}

TEST_F(FacadeGpu, Streams) {
  const cumem::Stream s = cumem::Stream::create(device);
  EXPECT_NE(s.native(), nullptr);
  EXPECT_EQ(s.device().get(), device.get());
  EXPECT_EQ(s.priority(), 0);
  s.synchronize();
  EXPECT_TRUE(s.query());

  const cumem::PriorityRange range = device.stream_priority_range();
  cumem_stream_options_t o = cumem::stream_options();
  o.priority = range.greatest;
  o.priority_mode = CUMEM_PRIORITY_REJECT;
  const cumem::Stream high = cumem::Stream::create(device, o);
  EXPECT_EQ(high.priority(), range.greatest);
  o.priority = range.greatest - 1;
  EXPECT_EQ(status_of([&] { cumem::Stream::create(device, o); }), CUMEM_ERROR_INVALID_ARGUMENT);

  // Wrapping another stream's CUstream reaches the same queue.
  const cumem::Stream wrapped = cumem::Stream::wrap(device, s.native());
  EXPECT_EQ(wrapped.native(), s.native());
  wrapped.synchronize();

  const cumem::Stream legacy = cumem::Stream::legacy_default(device);
  const cumem::Stream per_thread = cumem::Stream::per_thread_default(device);
  legacy.synchronize();
  per_thread.synchronize();

  const cumem::Event e = cumem::Event::create(device);
  e.record(s);
  high.wait(e);
  high.wait(s);
  high.synchronize();
  EXPECT_TRUE(e.query());
}

TEST_F(FacadeGpu, EventTiming) {
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource r = cumem::Resource::device(device);
  const cumem::Buffer big = r.allocate(64u << 20, s);
  const cumem::Event start = cumem::Event::create_timed(device);
  cumem_event_options_t o = cumem::event_options();
  o.enable_timing = CUMEM_TRUE;
  o.blocking_sync = CUMEM_TRUE;
  const cumem::Event end = cumem::Event::create(device, o);
  start.record(s);
  for (int i = 0; i < 8; ++i) big.fill_value(static_cast<uint32_t>(i), s);
  end.record(&s);
  end.synchronize();
  EXPECT_TRUE(end.query());
  const float ms = cumem::Event::elapsed_ms(start, end);
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 10000.0f);
  EXPECT_NE(start.native(), nullptr);
  // Events without timing cannot be timed.
  const cumem::Event plain = cumem::Event::create(device);
  plain.record(s);
  plain.synchronize();
  EXPECT_EQ(status_of([&] { cumem::Event::elapsed_ms(start, plain); }), CUMEM_ERROR_INVALID_STATE);
}

TEST_F(FacadeGpu, DeviceResource) {
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource r = cumem::Resource::device(device);
  const cumem_resource_properties_t p = r.properties();
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_DEVICE);
  EXPECT_TRUE(p.device_accessible);
  EXPECT_FALSE(p.host_accessible);
  EXPECT_EQ(p.device_id, 0);
  const cumem::Buffer b = r.allocate(1 << 20, s);
  EXPECT_EQ(b.device_id(), 0);
  EXPECT_EQ(b.info().memory_kind, CUMEM_MEMORY_DEVICE);
  EXPECT_EQ(b.resource().get(), r.get());
  b.fill_value(0xdeadbeefu, s);
  const std::vector<uint8_t> bytes = read(b, s);
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t v;
    std::memcpy(&v, &bytes[i], 4);
    ASSERT_EQ(v, 0xdeadbeefu) << i;
  }
  if (p.is_pool) {
    const cumem_pool_attributes_t a = r.pool_get_attributes();
    EXPECT_GE(a.used_mem_current, 1u << 20);
    EXPECT_NE(r.pool_native(), nullptr);
    EXPECT_TRUE(r.pool_get_access(device));
    r.pool_reset_highs();
    r.pool_set_attributes(a);
  }
}

TEST_F(FacadeGpu, NewDevicePoolWithOptions) {
  if (!props.memory_pools_supported) GTEST_SKIP() << "the device has no memory pools";
  cumem_pool_options_t o = cumem::pool_options();
  o.new_pool = CUMEM_TRUE;
  o.release_all_unused = CUMEM_TRUE;
  o.max_size = 64u << 20;
  const cumem::Resource pool = cumem::Resource::device(device, o);
  EXPECT_TRUE(pool.properties().is_pool);
  const cumem::Stream s = cumem::Stream::create(device);
  {
    const cumem::Buffer b = pool.allocate(4u << 20, s);
    EXPECT_EQ(pool.statistics().bytes_in_use, 4u << 20);
  }
  s.synchronize();
  EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
  pool.pool_trim(0);
  EXPECT_EQ(status_of([&] { pool.allocate(128u << 20, s); }), CUMEM_ERROR_OUT_OF_MEMORY);
}

// The IPC calls of one process (sharing across processes is the
// ipc_producer_consumer examples' job): export, descriptors, event handles.
TEST_F(FacadeGpu, IpcExportAndInterprocessEvents) {
  if (!props.memory_pools_supported) GTEST_SKIP() << "the device has no memory pools";
  if (!(props.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD))
    GTEST_SKIP() << "the device cannot export pools as POSIX file descriptors";
  const cumem::Stream s = cumem::Stream::create(device);
  cumem_pool_options_t o = cumem::pool_options();
  o.new_pool = CUMEM_TRUE;
  o.ipc_enabled = CUMEM_TRUE;
  const cumem::Resource pool = cumem::Resource::device(device, o);
  EXPECT_TRUE(pool.properties().ipc_enabled);
  EXPECT_FALSE(pool.properties().is_imported);
  const cumem::AllocationHandle handle = pool.get_allocation_handle();
  EXPECT_GE(handle.fd(), 0);
  const cumem::Buffer b = pool.allocate(1 << 20, s);
  (void)b.get_ipc_descriptor();
  EXPECT_EQ(status_of([&] { b.slice(0, 4096).get_ipc_descriptor(); }), CUMEM_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(status_of([&] { cumem::Resource::device(device).get_allocation_handle(); }),
            CUMEM_ERROR_NOT_SUPPORTED);

  const cumem::Resource legacy = cumem::Resource::legacy_device(device);
  EXPECT_EQ(legacy.kind(), CUMEM_RESOURCE_LEGACY_DEVICE);
  const cumem::Buffer l = legacy.allocate(1 << 20, s);
  (void)l.get_ipc_descriptor();

  const cumem::Event shared_event = cumem::Event::create_interprocess(device);
  (void)shared_event.get_ipc_handle();
  shared_event.record(s);
  s.synchronize();
  EXPECT_EQ(status_of([&] { cumem::Event::create(device).get_ipc_handle(); }),
            CUMEM_ERROR_INVALID_STATE);
}

TEST_F(FacadeGpu, CopiesBetweenEveryKindAreByteExact) {
  const size_t size = (1u << 20) + 13;  // odd: no copy may round the size
  const cumem::Stream s = cumem::Stream::create(device);
  std::vector<cumem::Resource> chain;
  chain.push_back(cumem::Resource::device(device));
  try {
    chain.push_back(cumem::Resource::pinned(device));
  } catch (const cumem::Error& e) {
    if (e.status() != CUMEM_ERROR_NOT_SUPPORTED) throw;
    std::printf("pinned pools not supported here: %s\n", e.what());
  }
  chain.push_back(cumem::Resource::legacy_pinned(device));
  if (props.managed_memory) chain.push_back(cumem::Resource::managed(device));
  chain.push_back(cumem::Resource::device(device));

  const cumem::Buffer source = pattern(size);
  std::vector<cumem::Buffer> buffers;
  for (const cumem::Resource& r : chain) {
    buffers.push_back(r.allocate(size, s));
    buffers.back().zero(s);
  }
  buffers.front().copy_from(source, s);
  for (size_t i = 0; i + 1 < buffers.size(); ++i) buffers[i].copy_to(buffers[i + 1], s);
  const cumem::Buffer back = host.allocate(size);
  buffers.back().copy_to(back, s);
  s.synchronize();
  ASSERT_EQ(std::memcmp(back.ptr(), source.ptr(), size), 0);
  // Host-accessible kinds can be read directly.
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!chain[i].properties().host_accessible) continue;
    EXPECT_EQ(std::memcmp(buffers[i].ptr(), source.ptr(), size), 0) << "buffer " << i;
  }
}

TEST_F(FacadeGpu, RegionCopiesAndSlicesOnTheDevice) {
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource r = cumem::Resource::device(device);
  const cumem::Buffer a = r.allocate(4096, s);
  const cumem::Buffer b = r.allocate(4096, s);
  const cumem::Buffer expected_src = pattern(4096);
  a.copy_from(expected_src, s);
  b.zero(s);
  b.copy_region(100, a, 1000, 2000, s);
  const cumem::Buffer tail = b.slice(3000, 1096);
  tail.fill_bytes(0xee, s);
  const std::vector<uint8_t> got = read(b, s);
  for (size_t i = 0; i < 4096; ++i) {
    uint8_t expected = 0;
    if (i >= 100 && i < 2100) expected = expected_src.data<uint8_t>()[i + 900];
    if (i >= 3000) expected = 0xee;
    ASSERT_EQ(got[i], expected) << i;
  }
  EXPECT_EQ(status_of([&] { b.copy_region(3000, a, 0, 2000, s); }), CUMEM_ERROR_OUT_OF_RANGE);
}

TEST_F(FacadeGpu, PinnedAndRegisteredHostMemory) {
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource legacy = cumem::Resource::legacy_pinned(device);
  EXPECT_EQ(legacy.kind(), CUMEM_RESOURCE_LEGACY_PINNED);
  EXPECT_TRUE(legacy.properties().host_accessible);
  EXPECT_TRUE(legacy.properties().device_accessible);
  const cumem::Buffer pinned = legacy.allocate(8192, s);
  EXPECT_EQ(pinned.info().memory_kind, CUMEM_MEMORY_PINNED);
  pinned.fill_value(uint16_t{0x4321}, s);
  s.synchronize();
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(pinned.data<uint16_t>()[i], 0x4321) << i;

  std::vector<uint8_t> user(8192, 0);
  const cumem::Buffer expected = pattern(8192);
  {
    const cumem::Buffer registered = cumem::Buffer::register_host(device, user.data(), user.size());
    EXPECT_EQ(registered.info().memory_kind, CUMEM_MEMORY_PINNED);
    const cumem::Buffer dev = cumem::Resource::device(device).allocate(8192, s);
    dev.copy_from(expected, s);
    dev.copy_to(registered, s);
    s.synchronize();
  }  // unregistered here; the memory stays ours
  EXPECT_EQ(std::memcmp(user.data(), expected.ptr(), user.size()), 0);
}

TEST_F(FacadeGpu, ManagedMemory) {
  if (!props.managed_memory) GTEST_SKIP() << "the device has no managed memory";
  const cumem::Stream s = cumem::Stream::create(device);
  cumem_managed_resource_options_t o = cumem::managed_resource_options();
  o.preferred_location = cumem::location::device(0);
  const cumem::Resource r = cumem::Resource::managed(device, o);
  EXPECT_EQ(r.kind(), CUMEM_RESOURCE_MANAGED);
  const cumem::Buffer b = r.allocate(1 << 20, s);  // small: never oversubscribe managed memory
  EXPECT_EQ(b.info().memory_kind, CUMEM_MEMORY_MANAGED);
  if (props.concurrent_managed_access) {
    b.prefetch(cumem::location::device(0), s);
    b.fill_value(7.0f, s);
    b.prefetch(cumem::location::host(), s);
  } else {
    b.fill_value(7.0f, s);
  }
  s.synchronize();
  for (size_t i = 0; i < b.size() / sizeof(float); ++i) ASSERT_EQ(b.data<float>()[i], 7.0f) << i;
  const cumem_status_t discarded = status_of([&] { b.discard(s); });
  EXPECT_TRUE(discarded == CUMEM_SUCCESS || discarded == CUMEM_ERROR_NOT_SUPPORTED)
      << cumem_status_string(discarded);
  s.synchronize();
}

// cumem.h: the location is ignored for the read-mostly advices (so the
// default, no location, must do). Memory from the managed pool may not take
// advice (CUDA 13.0 drivers): then NOT_SUPPORTED says to use disable_pool true.
TEST_F(FacadeGpu, ManagedAdvice) {
  if (!props.managed_memory) GTEST_SKIP() << "the device has no managed memory";
  const cumem::Stream s = cumem::Stream::create(device);
  for (const cumem_bool_t disable_pool : {CUMEM_FALSE, CUMEM_TRUE}) {
    SCOPED_TRACE(disable_pool ? "cuMemAllocManaged" : "managed pool");
    cumem_managed_resource_options_t o = cumem::managed_resource_options();
    o.disable_pool = disable_pool;
    const cumem::Resource r = cumem::Resource::managed(device, o);
    const cumem::Buffer b = r.allocate(1 << 20, s);
    s.synchronize();
    if (r.properties().is_pool) {
      try {
        b.advise(CUMEM_ADVICE_SET_READ_MOSTLY);
      } catch (const cumem::Error& e) {
        EXPECT_EQ(e.status(), CUMEM_ERROR_NOT_SUPPORTED);
        EXPECT_NE(std::string(e.what()).find("disable_pool = true"), std::string::npos) << e.what();
        continue;
      }
    }
    EXPECT_NO_THROW(b.advise(CUMEM_ADVICE_SET_READ_MOSTLY));
    EXPECT_NO_THROW(b.advise(CUMEM_ADVICE_UNSET_READ_MOSTLY));
    EXPECT_NO_THROW(b.advise(CUMEM_ADVICE_SET_PREFERRED_LOCATION, cumem::location::device(0)));
    EXPECT_NO_THROW(b.advise(CUMEM_ADVICE_UNSET_PREFERRED_LOCATION, cumem::location::device(0)));
    EXPECT_NO_THROW(b.advise(CUMEM_ADVICE_SET_ACCESSED_BY, cumem::location::device(0)));
    EXPECT_NO_THROW(b.advise(CUMEM_ADVICE_UNSET_ACCESSED_BY, cumem::location::device(0)));
  }
}

TEST_F(FacadeGpu, RaiiClosesOnTheDeallocationStream) {
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource r = cumem::Resource::device(device);
  const uint64_t before = r.statistics().bytes_in_use;
  {
    const cumem::Buffer b = r.allocate(1 << 16, s);
    EXPECT_EQ(r.statistics().bytes_in_use, before + (1 << 16));
    const cumem::Stream other = cumem::Stream::create(device);
    other.wait(s);  // the allocation was ordered on s
    b.set_deallocation_stream(other);
    b.fill_bytes(1, other);
  }  // freed on `other`, which the buffer keeps alive until then
  EXPECT_EQ(r.statistics().bytes_in_use, before);

  cumem::Buffer explicit_close = r.allocate(4096, s);
  explicit_close.close(s);
  EXPECT_TRUE(explicit_close.is_closed());
  EXPECT_EQ(status_of([&] { explicit_close.fill_bytes(0, s); }), CUMEM_ERROR_BUFFER_CLOSED);
  EXPECT_EQ(r.statistics().bytes_in_use, before);
  s.synchronize();
}

TEST_F(FacadeGpu, WrapDeviceMemoryWithALambda) {
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource r = cumem::Resource::device(device);
  void* raw = r.allocate_raw(4096, s);
  int released = 0;
  {
    // The callable owns a Resource: its destructor calls into libcumem.
    const cumem::Buffer b = cumem::Buffer::wrap(
        raw, 4096, [&released, res = r.share(), &s](void* p, size_t n) {
          res.deallocate_raw(p, n, s);
          ++released;
        });
    EXPECT_EQ(b.device_id(), 0);
    EXPECT_TRUE(b.info().device_accessible);
    b.fill_bytes(3, s);
    EXPECT_EQ(read(b, s), std::vector<uint8_t>(4096, 3));
  }
  EXPECT_EQ(released, 1);
  s.synchronize();
  EXPECT_EQ(r.statistics().live_allocations, 0u);
}

TEST_F(FacadeGpu, CompileAndLaunchTypedArguments) {
  COMPILE_OR_SKIP(program, device, kAddOne);
  const cumem::Library library = program.load();
  const cumem::Kernel add_one = library.get_kernel("add_one");
  const cumem::Kernel affine = library.get_kernel("affine");
  EXPECT_GE(add_one.attributes().max_threads_per_block, 256);
  EXPECT_NE(add_one.native(), nullptr);
  EXPECT_EQ(status_of([&] { library.get_kernel("no_such_kernel"); }), CUMEM_ERROR_NOT_FOUND);

  const size_t n = (1u << 20) + 5;
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Resource r = cumem::Resource::device(device);
  const cumem::Buffer x = r.allocate(n * sizeof(float), s);
  const cumem::Buffer y = r.allocate(n * sizeof(float), s);
  x.fill_value(1.0f, s);
  const cumem::LaunchConfig config(static_cast<uint32_t>((n + 255) / 256), 256);
  cumem::launch(add_one, s, config, x, n);  // a Buffer passes its device pointer
  cumem::launch(affine, s, config, x, y, static_cast<unsigned int>(n), Affine{3.0f, -2});

  const cumem::Buffer h = host.allocate(n * sizeof(float));
  y.copy_to(h, s);
  s.synchronize();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(h.data<float>()[i], 4.0f) << i;  // (1 + 1) * 3 - 2

  // Raw pointers and the C config work too; the legacy default stream as well.
  float* raw_x = x.data<float>();
  cumem_launch_config_t c = CUMEM_LAUNCH_CONFIG_INIT;
  c.grid[0] = static_cast<uint32_t>((n + 127) / 128);
  c.block[0] = 128;
  s.synchronize();
  cumem::launch(add_one, {}, c, raw_x, n);
  cumem::Stream::legacy_default(device).synchronize();
  x.copy_to(h, s);
  s.synchronize();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(h.data<float>()[i], 3.0f) << i;
}

TEST_F(FacadeGpu, InvalidLaunchConfigThrows) {
  COMPILE_OR_SKIP(program, device, kAddOne);
  const cumem::Kernel k = program.load().get_kernel("add_one");
  const cumem::Buffer x = cumem::Resource::device(device).allocate(1024);
  const size_t n = 256;
  // A 0 dimension counts as 1 (zero-filled means the default).
  EXPECT_EQ(status_of([&] { cumem::launch(k, {}, cumem::LaunchConfig(1, 0), x, n); }), CUMEM_SUCCESS);
  EXPECT_EQ(status_of([&] { cumem::launch(k, {}, cumem::LaunchConfig(1, 4096), x, n); }),
            CUMEM_ERROR_INVALID_LAUNCH_CONFIG);
}

TEST_F(FacadeGpu, NameExpressionsAndPtx) {
  cumem::ProgramOptions o;
  o.code_type = CUMEM_CODE_PTX;
  o.options = {"-std=c++17"};
  o.name_expressions = {"set_index<int>"};
  o.name = "facade_test.cu";
  COMPILE_OR_SKIP(program, device, kAddOne, o);
  const std::string lowered = program.lowered_name("set_index<int>");
  EXPECT_NE(lowered, "set_index<int>");
  EXPECT_EQ(status_of([&] { program.lowered_name("set_index<float>"); }), CUMEM_ERROR_NOT_FOUND);
  const std::string ptx = program.code();
  ASSERT_FALSE(ptx.empty());
  EXPECT_NE(ptx.find(".entry"), std::string::npos);
  (void)program.log();

  // The PTX loads by itself, as precompiled code would.
  const cumem::Library library = cumem::Library::load_data(device, ptx);
  const cumem::Kernel set_index = library.get_kernel(lowered);
  const unsigned int n = 1000;
  const cumem::Stream s = cumem::Stream::create(device);
  const cumem::Buffer b = cumem::Resource::device(device).allocate(n * sizeof(int), s);
  cumem::launch(set_index, s, cumem::LaunchConfig((n + 63) / 64, 64), b, n);
  const std::vector<uint8_t> bytes = read(b, s);
  std::vector<int> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), bytes.size()), 0);
}

TEST_F(FacadeGpu, CompilationErrorCarriesTheLog) {
  try {
    cumem::Program::compile(device, "extern \"C\" __global__ void broken() { undeclared_name(); }");
    FAIL() << "broken source compiled";
  } catch (const cumem::Error& e) {
    if (e.status() == CUMEM_ERROR_NO_COMPILER) GTEST_SKIP() << "no NVRTC: " << e.what();
    EXPECT_EQ(e.status(), CUMEM_ERROR_COMPILATION);
    EXPECT_NE(std::string(e.what()).find("undeclared_name"), std::string::npos) << e.what();
  }
}
