// The C++ facade without a GPU: errors, owners, host resources and buffers,
// wrap callbacks, launch argument packing.
#include <cumem/cumem.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <cstdlib>

#include "facade_util.hpp"
#include "test_util.hpp"

namespace {

// Counts calls and destructions of a wrap release callable.
struct ReleaseCounter {
  int calls = 0;
  int destroyed = 0;
  void* ptr = nullptr;
  size_t size = 0;
};

struct CountingRelease {
  ReleaseCounter* counter;
  explicit CountingRelease(ReleaseCounter* c) : counter(c) {}
  CountingRelease(const CountingRelease&) = delete;
  CountingRelease(CountingRelease&& other) noexcept : counter(std::exchange(other.counter, nullptr)) {}
  ~CountingRelease() {
    if (counter) ++counter->destroyed;
  }
  void operator()(void* p, size_t n) const {
    ++counter->calls;
    counter->ptr = p;
    counter->size = n;
  }
};

class FacadeHost : public ::testing::Test {
 protected:
  cumem::Resource host = cumem::Resource::host();
};

}  // namespace

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

TEST(FacadeError, CategoryNamesStatuses) {
  const std::error_category& cat = cumem::error_category();
  EXPECT_STREQ(cat.name(), "cumem");
  EXPECT_EQ(cat.message(CUMEM_ERROR_OUT_OF_MEMORY), "CUMEM_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cat.message(12345), "CUMEM_STATUS_UNKNOWN");
  EXPECT_EQ(&cumem::error_category(), &cat);
  const std::error_code ec = cumem::make_error_code(CUMEM_ERROR_BUFFER_CLOSED);
  EXPECT_EQ(ec.value(), 6);
  EXPECT_EQ(&ec.category(), &cat);
  EXPECT_EQ(ec.message(), "CUMEM_ERROR_BUFFER_CLOSED");
}

TEST(FacadeError, ErrorIsASystemErrorWithStatusAndMessage) {
  static_assert(std::is_base_of_v<std::system_error, cumem::Error>);
  const cumem::Error e(CUMEM_ERROR_OUT_OF_RANGE, "region [4, 12) overruns 8 bytes");
  EXPECT_EQ(e.status(), CUMEM_ERROR_OUT_OF_RANGE);
  EXPECT_EQ(e.code(), cumem::make_error_code(CUMEM_ERROR_OUT_OF_RANGE));
  EXPECT_NE(std::string(e.what()).find("region [4, 12) overruns 8 bytes"), std::string::npos);
}

TEST(FacadeError, CheckPassesSuccessAndThrowsTheLastMessage) {
  EXPECT_NO_THROW(cumem::check(CUMEM_SUCCESS));
  // A real failure leaves its message; check() must carry it.
  cumem_resource_t* raw = nullptr;
  cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  o.alignment = 3;
  const cumem_status_t s = cumem_host_resource_create(&o, &raw);
  ASSERT_EQ(s, CUMEM_ERROR_INVALID_ARGUMENT);
  const std::string message = cumem_last_error_message();
  ASSERT_FALSE(message.empty());
  const cumem::Error e = error_of([&] { cumem::check(s); });
  EXPECT_EQ(e.status(), CUMEM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
}

TEST(FacadeError, FailingFactoryThrowsWithTheLibraryMessage) {
  cumem_host_resource_options_t o = cumem::host_resource_options();
  o.alignment = 48;  // not a power of two
  EXPECT_CUMEM_THROW(cumem::Resource::host(o), CUMEM_ERROR_INVALID_ARGUMENT, "alignment");
}

TEST(FacadeError, EmptyOwnerArgumentIsInvalidArgument) {
  const cumem::Device none;
  EXPECT_CUMEM_THROW(cumem::Stream::create(none), CUMEM_ERROR_INVALID_ARGUMENT, "device");
  EXPECT_CUMEM_THROW(cumem::Resource::device(none), CUMEM_ERROR_INVALID_ARGUMENT, "device");
  const cumem::Buffer empty;
  EXPECT_CUMEM_THROW(empty.size(), CUMEM_ERROR_INVALID_ARGUMENT, "buffer");
}

TEST(FacadeError, VersionAndStrings) {
  EXPECT_EQ(cumem::version(), static_cast<uint32_t>(CUMEM_VERSION_NUMBER));
  EXPECT_STREQ(cumem::status_string(CUMEM_ERROR_NO_DRIVER), "CUMEM_ERROR_NO_DRIVER");
}

TEST(FacadeError, NoDriverThrowsNoDriver) {
  int32_t count = 0;
  if (cumem_device_count(&count) == CUMEM_SUCCESS)
    GTEST_SKIP() << "a CUDA driver is present: the no-driver path cannot be seen here";
  // The fragment is read after the call: what() must hold the C call's message.
  EXPECT_CUMEM_THROW(cumem::Device::count(), CUMEM_ERROR_NO_DRIVER, cumem_last_error_message());
  EXPECT_CUMEM_THROW(cumem::Device::get(0), CUMEM_ERROR_NO_DRIVER, cumem_last_error_message());
  EXPECT_CUMEM_THROW(cumem::driver_version(), CUMEM_ERROR_NO_DRIVER, cumem_last_error_message());
  EXPECT_CUMEM_THROW(cumem::Device::get(0), CUMEM_ERROR_NO_DRIVER, "libcuda");
}

// ---------------------------------------------------------------------------
// Owners
// ---------------------------------------------------------------------------

TEST(FacadeOwners, OnePointerWideMoveOnly) {
  static_assert(sizeof(cumem::Device) == sizeof(void*));
  static_assert(sizeof(cumem::Stream) == sizeof(void*));
  static_assert(sizeof(cumem::Event) == sizeof(void*));
  static_assert(sizeof(cumem::Resource) == sizeof(void*));
  static_assert(sizeof(cumem::Buffer) == sizeof(void*));
  static_assert(sizeof(cumem::Program) == sizeof(void*));
  static_assert(sizeof(cumem::Library) == sizeof(void*));
  static_assert(sizeof(cumem::Kernel) == sizeof(void*));
  static_assert(!std::is_copy_constructible_v<cumem::Buffer>);
  static_assert(!std::is_copy_assignable_v<cumem::Buffer>);
  static_assert(std::is_nothrow_move_constructible_v<cumem::Buffer>);
  static_assert(std::is_nothrow_move_assignable_v<cumem::Buffer>);
  static_assert(!std::is_convertible_v<cumem::Buffer, bool>);  // explicit operator bool
  static_assert(!std::is_convertible_v<cumem_buffer_t*, cumem::Buffer>);  // explicit adoption
  const cumem::Buffer empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.get(), nullptr);
  EXPECT_FALSE(empty.share());
}

TEST_F(FacadeHost, MoveTransfersOwnership) {
  cumem::Buffer a = host.allocate(64);
  cumem_buffer_t* raw = a.get();
  ASSERT_TRUE(a);
  cumem::Buffer b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(b.get(), raw);
  cumem::Buffer c;
  c = std::move(b);
  EXPECT_FALSE(b);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.get(), raw);
  EXPECT_EQ(c.size(), 64u);
}

TEST_F(FacadeHost, MoveAssignReleasesTheOldObject) {
  ReleaseCounter counter;
  std::vector<char> memory(32);
  cumem::Buffer target = cumem::Buffer::wrap(memory.data(), memory.size(), CountingRelease(&counter));
  EXPECT_EQ(counter.calls, 0);
  target = host.allocate(16);
  EXPECT_EQ(counter.calls, 1);
  EXPECT_EQ(counter.destroyed, 1);
  EXPECT_EQ(target.size(), 16u);
}

TEST_F(FacadeHost, ShareKeepsTheObjectUntilTheLastOwner) {
  ReleaseCounter counter;
  std::vector<char> memory(32);
  auto first = std::make_unique<cumem::Buffer>(
      cumem::Buffer::wrap(memory.data(), memory.size(), CountingRelease(&counter)));
  cumem::Buffer second = first->share();
  EXPECT_EQ(second.get(), first->get());
  cumem::Buffer third = cumem::Buffer::retain(second.get());
  EXPECT_EQ(third.get(), second.get());
  first.reset();
  third = cumem::Buffer();
  EXPECT_EQ(counter.calls, 0) << "released while an owner remained";
  EXPECT_EQ(second.size(), 32u);
  second = cumem::Buffer();
  EXPECT_EQ(counter.calls, 1);
  EXPECT_EQ(counter.destroyed, 1);
}

TEST_F(FacadeHost, ReleaseGivesUpOwnershipAndAdoptTakesItBack) {
  ReleaseCounter counter;
  std::vector<char> memory(8);
  cumem::Buffer b = cumem::Buffer::wrap(memory.data(), memory.size(), CountingRelease(&counter));
  cumem_buffer_t* raw = b.release();
  EXPECT_FALSE(b);
  b = cumem::Buffer();  // owns nothing: must not release raw
  EXPECT_EQ(counter.calls, 0);
  size_t size = 0;
  CUMEM_ASSERT_OK(cumem_buffer_size(raw, &size));
  EXPECT_EQ(size, 8u);
  {
    cumem::Buffer adopted = cumem::Buffer::adopt(raw);
    EXPECT_EQ(adopted.get(), raw);
  }
  EXPECT_EQ(counter.calls, 1);
}

TEST_F(FacadeHost, ResourceSharedByBuffersOutlivesItsOwner) {
  cumem::Buffer buffer = host.allocate(128);
  cumem::Resource from_buffer = buffer.resource();
  EXPECT_EQ(from_buffer.get(), host.get());
  host.reset();
  // The buffer and the owner from resource() keep the resource alive.
  buffer.fill_bytes(0x5a);
  EXPECT_EQ(from_buffer.statistics().live_allocations, 1u);
}

// ---------------------------------------------------------------------------
// Host resource and buffers
// ---------------------------------------------------------------------------

TEST_F(FacadeHost, ResourceProperties) {
  const cumem_resource_properties_t p = host.properties();
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_HOST);
  EXPECT_EQ(host.kind(), CUMEM_RESOURCE_HOST);
  EXPECT_TRUE(p.host_accessible);
  EXPECT_FALSE(p.device_accessible);
  EXPECT_EQ(p.device_id, -1);
  EXPECT_FALSE(p.is_pool);
  EXPECT_CUMEM_THROW(host.pool_get_attributes(), CUMEM_ERROR_NOT_SUPPORTED, "");
}

TEST_F(FacadeHost, AllocateAlignedBuffer) {
  cumem_host_resource_options_t o = cumem::host_resource_options();
  o.alignment = 4096;
  const cumem::Resource paged = cumem::Resource::host(o);
  const cumem::Buffer b = paged.allocate(100);
  EXPECT_EQ(b.size(), 100u);
  ASSERT_NE(b.ptr(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.ptr()) % 4096, 0u);
  EXPECT_EQ(b.data<char>(), static_cast<char*>(b.ptr()));
  EXPECT_EQ(b.device_id(), -1);
  const cumem_buffer_info_t info = b.info();
  EXPECT_EQ(info.ptr, b.ptr());
  EXPECT_EQ(info.size, 100u);
  EXPECT_EQ(info.memory_kind, CUMEM_MEMORY_HOST);
  EXPECT_TRUE(info.host_accessible);
  EXPECT_FALSE(info.is_slice);
  EXPECT_TRUE(info.owns_memory);
  const cumem::Buffer empty = paged.allocate(0);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.ptr(), nullptr);
}

TEST_F(FacadeHost, FillWithEachWidthAndTypedValues) {
  const cumem::Buffer b = host.allocate(16);
  b.fill_bytes(0xab);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(b.data<uint8_t>()[i], 0xab) << i;
  b.fill(0x1234, 2);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(b.data<uint16_t>()[i], 0x1234) << i;
  b.fill_value(2.5f);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(b.data<float>()[i], 2.5f) << i;
  b.fill_value(int32_t{-7});
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(b.data<int32_t>()[i], -7) << i;
  b.fill_value(uint16_t{0xbeef});
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(b.data<uint16_t>()[i], 0xbeef) << i;
  b.fill_value(int8_t{-1});
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(b.data<uint8_t>()[i], 0xff) << i;
  b.zero();
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(b.data<uint8_t>()[i], 0) << i;
}

TEST_F(FacadeHost, FillErrors) {
  const cumem::Buffer b = host.allocate(6);
  EXPECT_CUMEM_THROW(b.fill(1, 3), CUMEM_ERROR_INVALID_ARGUMENT, "3");
  EXPECT_CUMEM_THROW(b.fill(0x100, 1), CUMEM_ERROR_INVALID_ARGUMENT, "256");
  EXPECT_CUMEM_THROW(b.fill_value(1.0f), CUMEM_ERROR_SIZE_MISMATCH, "6");
}

TEST_F(FacadeHost, WholeBufferCopies) {
  const cumem::Buffer a = host.allocate(64);
  const cumem::Buffer b = host.allocate(64);
  for (size_t i = 0; i < 64; ++i) a.data<uint8_t>()[i] = static_cast<uint8_t>(i * 3 + 1);
  b.zero();
  a.copy_to(b);
  EXPECT_EQ(std::memcmp(a.ptr(), b.ptr(), 64), 0);
  b.fill_bytes(9);
  a.copy_from(b);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(a.data<uint8_t>()[i], 9) << i;
  const cumem::Buffer small = host.allocate(32);
  EXPECT_CUMEM_THROW(a.copy_to(small), CUMEM_ERROR_SIZE_MISMATCH, "");
  EXPECT_CUMEM_THROW(small.copy_from(a), CUMEM_ERROR_SIZE_MISMATCH, "");
  const cumem::StreamRef no_stream = nullptr;  // the legacy default, as with no argument
  const cumem::Stream* none = nullptr;
  a.copy_to(b, no_stream);
  a.copy_to(b, none);
}

TEST_F(FacadeHost, RegionCopies) {
  const cumem::Buffer src = host.allocate(32);
  const cumem::Buffer dst = host.allocate(32);
  for (size_t i = 0; i < 32; ++i) src.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  dst.zero();
  dst.copy_region(8, src, 4, 16);
  for (size_t i = 0; i < 32; ++i) {
    const uint8_t expected = (i >= 8 && i < 24) ? static_cast<uint8_t>(i - 4) : 0;
    EXPECT_EQ(dst.data<uint8_t>()[i], expected) << i;
  }
  dst.copy_region(0, src, 0, 0);  // length 0 does nothing
  EXPECT_CUMEM_THROW(dst.copy_region(20, src, 0, 16), CUMEM_ERROR_OUT_OF_RANGE, "");
  EXPECT_CUMEM_THROW(dst.copy_region(0, src, 20, 16), CUMEM_ERROR_OUT_OF_RANGE, "");
  EXPECT_CUMEM_THROW(src.copy_region(0, src, 4, 8), CUMEM_ERROR_INVALID_ARGUMENT, "overlap");
}

TEST_F(FacadeHost, SliceViewsAndKeepsItsParent) {
  cumem::Buffer parent = host.allocate(64);
  parent.zero();
  const cumem::Buffer slice = parent.slice(16, 32);
  EXPECT_EQ(slice.size(), 32u);
  EXPECT_EQ(slice.data<uint8_t>(), parent.data<uint8_t>() + 16);
  EXPECT_TRUE(slice.info().is_slice);
  EXPECT_FALSE(slice.info().owns_memory);
  slice.fill_bytes(7);
  EXPECT_EQ(parent.data<uint8_t>()[15], 0);
  EXPECT_EQ(parent.data<uint8_t>()[16], 7);
  EXPECT_EQ(parent.data<uint8_t>()[47], 7);
  EXPECT_EQ(parent.data<uint8_t>()[48], 0);
  EXPECT_CUMEM_THROW(parent.slice(60, 8), CUMEM_ERROR_OUT_OF_RANGE, "");
  const cumem::Resource r = parent.resource();
  parent.reset();  // the slice keeps the memory
  EXPECT_EQ(r.statistics().live_allocations, 1u);
  EXPECT_EQ(slice.data<uint8_t>()[0], 7);
  const cumem::Buffer inner = slice.slice(8, 8);
  EXPECT_EQ(inner.data<uint8_t>(), slice.data<uint8_t>() + 8);
}

TEST_F(FacadeHost, CloseFreesAndLaterCallsThrowBufferClosed) {
  cumem::Buffer parent = host.allocate(64);
  const cumem::Buffer slice = parent.slice(0, 8);
  EXPECT_FALSE(parent.is_closed());
  parent.close();
  EXPECT_TRUE(parent.is_closed());
  EXPECT_TRUE(parent);  // the owner keeps the handle until released
  EXPECT_CUMEM_THROW(parent.ptr(), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  EXPECT_CUMEM_THROW(parent.close(), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  EXPECT_CUMEM_THROW(slice.fill_bytes(0), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  EXPECT_EQ(host.statistics().live_allocations, 0u);
}

TEST_F(FacadeHost, DestructorClosesOnLastRelease) {
  {
    const cumem::Buffer a = host.allocate(1000);
    const cumem::Buffer b = host.allocate(24);
    EXPECT_EQ(host.statistics().live_allocations, 2u);
  }
  EXPECT_EQ(host.statistics().live_allocations, 0u);
  EXPECT_EQ(host.statistics().bytes_in_use, 0u);
}

TEST_F(FacadeHost, Statistics) {
  const cumem_resource_statistics_t zero = host.statistics();
  EXPECT_EQ(zero.bytes_in_use, 0u);
  EXPECT_EQ(zero.total_allocations, 0u);
  cumem::Buffer a = host.allocate(1000);
  cumem::Buffer b = host.allocate(24);
  cumem_resource_statistics_t s = host.statistics();
  EXPECT_EQ(s.bytes_in_use, 1024u);
  EXPECT_EQ(s.peak_bytes_in_use, 1024u);
  EXPECT_EQ(s.live_allocations, 2u);
  EXPECT_EQ(s.total_allocations, 2u);
  a.close();
  s = host.statistics();
  EXPECT_EQ(s.bytes_in_use, 24u);
  EXPECT_EQ(s.peak_bytes_in_use, 1024u);
  EXPECT_EQ(s.live_allocations, 1u);
  host.reset_peak();
  EXPECT_EQ(host.statistics().peak_bytes_in_use, 24u);
  b = cumem::Buffer();
  EXPECT_EQ(host.statistics().bytes_in_use, 0u);
  EXPECT_EQ(host.statistics().total_allocations, 2u);
}

TEST_F(FacadeHost, RawAllocationAndWrapOwned) {
  void* p = host.allocate_raw(256);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(host.statistics().bytes_in_use, 256u);
  host.deallocate_raw(p, 256);
  EXPECT_EQ(host.statistics().bytes_in_use, 0u);
  p = host.allocate_raw(128);
  {
    const cumem::Buffer owned = cumem::Buffer::wrap_owned(host, p, 128);
    EXPECT_EQ(owned.ptr(), p);
    EXPECT_EQ(owned.resource().get(), host.get());
    EXPECT_EQ(host.statistics().bytes_in_use, 128u);
  }
  EXPECT_EQ(host.statistics().bytes_in_use, 0u);
  EXPECT_CUMEM_THROW(host.deallocate_raw(nullptr, 8), CUMEM_ERROR_INVALID_ARGUMENT, "");
}

TEST_F(FacadeHost, DeallocationStreamAndManagedOnlyCalls) {
  const cumem::Buffer b = host.allocate(64);
  b.set_deallocation_stream({});
  EXPECT_CUMEM_THROW(b.prefetch(cumem::location::host()), CUMEM_ERROR_INVALID_ARGUMENT, "managed");
  EXPECT_CUMEM_THROW(b.advise(CUMEM_ADVICE_SET_READ_MOSTLY), CUMEM_ERROR_INVALID_ARGUMENT, "managed");
  EXPECT_CUMEM_THROW(b.discard(), CUMEM_ERROR_INVALID_ARGUMENT, "managed");
}

// ---------------------------------------------------------------------------
// Wrapping foreign memory with C++ callables
// ---------------------------------------------------------------------------

TEST(FacadeWrap, LambdaRunsOnceOnCloseWithPointerAndSize) {
  std::vector<char> memory(48, 'x');
  int calls = 0;
  void* seen_ptr = nullptr;
  size_t seen_size = 0;
  {
    const cumem::Buffer b = cumem::Buffer::wrap(memory.data(), memory.size(), [&](void* p, size_t n) {
      ++calls;
      seen_ptr = p;
      seen_size = n;
    });
    EXPECT_EQ(b.ptr(), memory.data());
    EXPECT_EQ(b.size(), 48u);
    EXPECT_FALSE(b.resource());
    EXPECT_TRUE(b.info().owns_memory);
    EXPECT_EQ(b.info().memory_kind, CUMEM_MEMORY_HOST);
    b.fill_bytes('y');
    EXPECT_EQ(memory[47], 'y');
    EXPECT_EQ(calls, 0);
    b.close();
    EXPECT_EQ(calls, 1);
  }
  EXPECT_EQ(calls, 1) << "the release callback must run once, not again on release";
  EXPECT_EQ(seen_ptr, memory.data());
  EXPECT_EQ(seen_size, 48u);
}

TEST(FacadeWrap, CallableWithoutArgumentsRunsOnLastRelease) {
  std::vector<char> memory(8);
  auto flag = std::make_shared<int>(0);
  {
    const cumem::Buffer b = cumem::Buffer::wrap(memory.data(), memory.size(), [flag] { ++*flag; });
    EXPECT_EQ(flag.use_count(), 2);
  }
  EXPECT_EQ(*flag, 1);
  EXPECT_EQ(flag.use_count(), 1) << "the stored callable must be destroyed";
}

TEST(FacadeWrap, CallableIsDestroyedExactlyOnce) {
  ReleaseCounter counter;
  std::vector<char> memory(16);
  { const cumem::Buffer b = cumem::Buffer::wrap(memory.data(), 16, CountingRelease(&counter)); }
  EXPECT_EQ(counter.calls, 1);
  EXPECT_EQ(counter.destroyed, 1);
  EXPECT_EQ(counter.ptr, memory.data());
  EXPECT_EQ(counter.size, 16u);
}

TEST(FacadeWrap, FailedWrapDestroysTheCallableWithoutRunningIt) {
  ReleaseCounter counter;
  EXPECT_CUMEM_THROW(cumem::Buffer::wrap(nullptr, 16, CountingRelease(&counter)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "16");
  EXPECT_EQ(counter.calls, 0);
  EXPECT_EQ(counter.destroyed, 1);
}

TEST(FacadeWrap, FailedWrapReportsItsOwnMessageEvenIfTheCallableCallsTheLibrary) {
  // The callable's destructor makes a failing libcumem call of its own; the
  // thrown error must still describe the wrap.
  struct Noisy {
    ~Noisy() {
      cumem_resource_t* r = nullptr;
      cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
      o.alignment = 3;
      if (armed) (void)cumem_host_resource_create(&o, &r);
    }
    Noisy() = default;
    Noisy(Noisy&& other) noexcept : armed(std::exchange(other.armed, false)) {}
    void operator()() const {}
    bool armed = true;
  };
  const cumem::Error e = error_of([] { cumem::Buffer::wrap(nullptr, 16, Noisy()); });
  EXPECT_EQ(e.status(), CUMEM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(e.what()).find("alignment"), std::string::npos) << e.what();
}

namespace {
void c_release(void* ptr, size_t size, void* user_data) {
  auto* seen = static_cast<std::vector<size_t>*>(user_data);
  seen->push_back(reinterpret_cast<uintptr_t>(ptr));
  seen->push_back(size);
}
}  // namespace

TEST(FacadeWrap, CCallbackAndNoCallback) {
  std::vector<char> memory(12);
  std::vector<size_t> seen;
  { const cumem::Buffer b = cumem::Buffer::wrap(memory.data(), 12, c_release, &seen); }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], reinterpret_cast<uintptr_t>(memory.data()));
  EXPECT_EQ(seen[1], 12u);
  const cumem::Buffer plain = cumem::Buffer::wrap(memory.data(), 12);
  EXPECT_FALSE(plain.info().owns_memory);
  plain.close();
  EXPECT_TRUE(plain.is_closed());
}

// ---------------------------------------------------------------------------
// Launch configuration and argument packing (no GPU needed to check them)
// ---------------------------------------------------------------------------

TEST(FacadeLaunch, ConfigConvertsBothWays) {
  const cumem::LaunchConfig cfg({64, 2}, 256, 1024, {2, 1, 1});
  const cumem_launch_config_t c = cfg;
  EXPECT_EQ(c.struct_size, sizeof(cumem_launch_config_t));
  EXPECT_EQ(c.grid[0], 64u);
  EXPECT_EQ(c.grid[1], 2u);
  EXPECT_EQ(c.grid[2], 1u);
  EXPECT_EQ(c.block[0], 256u);
  EXPECT_EQ(c.block[1], 1u);
  EXPECT_EQ(c.shared_memory_bytes, 1024u);
  EXPECT_EQ(c.cluster[0], 2u);
  EXPECT_EQ(c.cluster[1], 1u);
  // The facade's defaults are written out as 1s, which the library reads as
  // the C defaults (a 0 dimension counts as 1).
  const cumem::LaunchConfig defaults;
  const cumem_launch_config_t d = defaults;
  EXPECT_EQ(d.struct_size, sizeof(cumem_launch_config_t));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d.grid[i], 1u);
    EXPECT_EQ(d.block[i], 1u);
    EXPECT_EQ(d.cluster[i], 0u);
  }
  EXPECT_EQ(d.shared_memory_bytes, 0u);
  const cumem::LaunchConfig back = c;
  EXPECT_EQ(back.grid.y, 2u);
  EXPECT_EQ(back.block.x, 256u);
  EXPECT_EQ(back.cluster.x, 2u);
  const unsigned n = 1000;
  const cumem::LaunchConfig computed((n + 127) / 128, 128);
  EXPECT_EQ(computed.grid.x, 8u);
}

TEST_F(FacadeHost, KernelArgumentsPointAtValuesAndBuffersPassTheirPointer) {
  const cumem::Buffer b = host.allocate(64);
  const float scale = 1.5f;
  const size_t n = 16;
  struct Pair {
    int32_t a, b;
  };
  cumem::detail::KernelArgs<cumem::Buffer, float, size_t, Pair> args(b, scale, n, Pair{3, 4});
  ASSERT_EQ(args.size(), 4u);
  void** p = args.data();
  EXPECT_EQ(*static_cast<void**>(p[0]), b.ptr());
  EXPECT_EQ(*static_cast<float*>(p[1]), 1.5f);
  EXPECT_EQ(*static_cast<size_t*>(p[2]), 16u);
  EXPECT_EQ(static_cast<Pair*>(p[3])->b, 4);
  cumem::detail::KernelArgs<> none;
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.data(), nullptr);
}

TEST(FacadeLaunch, EmptyKernelIsInvalidArgument) {
  const cumem::Kernel none;
  EXPECT_CUMEM_THROW(cumem::launch(none, {}, cumem::LaunchConfig(1, 1), 1.0f),
                     CUMEM_ERROR_INVALID_ARGUMENT, "kernel");
}

TEST(FacadeAdaptors, CachingTrackingAndLoggingCompose) {
  const cumem::Resource host = cumem::Resource::host();
  const cumem::Resource tracked = cumem::Resource::tracking(host);
  const cumem::Resource cache = cumem::Resource::caching(tracked);
  {
    const cumem::Buffer b = cache.allocate(1000);
    b.fill_bytes(1);
    EXPECT_NE(tracked.tracking_report().find("1024 bytes"), std::string::npos)
        << "the cache asked its upstream for the rounded size";
  }
  EXPECT_EQ(cache.caching_statistics().bytes_cached, 1024u);
  cache.release_cached();
  EXPECT_NE(tracked.tracking_report().find("0 allocation(s) outstanding"), std::string::npos);
  EXPECT_CUMEM_THROW(host.caching_statistics(), CUMEM_ERROR_NOT_SUPPORTED, "not a caching adaptor");
  EXPECT_CUMEM_THROW(cumem::Resource::logging(host, "/nonexistent/x.csv"), CUMEM_ERROR_INVALID_ARGUMENT,
                     "cannot open");
  EXPECT_EQ(tracked.tracking_outstanding().count, 0u);
  EXPECT_CUMEM_THROW(host.tracking_outstanding(), CUMEM_ERROR_NOT_SUPPORTED, "not a tracking adaptor");
}

TEST(FacadeAdaptors, CallbackResourceFromUserFunctions) {
  auto callbacks = cumem::resource_callbacks();
  callbacks.allocate = [](size_t size, void*, void*, void** out) -> int32_t {
    *out = std::malloc(size);
    return *out ? 0 : 1;
  };
  callbacks.deallocate = [](void* ptr, size_t, void*, void*) { std::free(ptr); };
  const cumem::Resource r = cumem::Resource::callback(callbacks);
  {
    const cumem::Buffer b = r.allocate(64);
    b.fill_bytes(3);
    EXPECT_EQ(b.data<unsigned char>()[63], 3);
    EXPECT_EQ(r.statistics().bytes_in_use, 64u);
  }
  EXPECT_EQ(r.statistics().bytes_in_use, 0u);
  callbacks.allocate = nullptr;
  EXPECT_CUMEM_THROW(cumem::Resource::callback(callbacks), CUMEM_ERROR_INVALID_ARGUMENT,
                     "must not be NULL");
}

namespace {

void count_message(cumem_log_level_t, const char*, void* user_data) {
  ++*static_cast<int*>(user_data);
}

TEST(FacadeLog, LevelAndCallback) {
  cumem::set_log_level(CUMEM_LOG_LEVEL_DEBUG);
  EXPECT_EQ(cumem::log_level(), CUMEM_LOG_LEVEL_DEBUG);
  int messages = 0;
  cumem::set_log_callback(count_message, &messages);
  EXPECT_EQ(cumem_resource_allocate_raw(nullptr, 8, nullptr, nullptr), CUMEM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(messages, 1);
  cumem::set_log_callback(nullptr);
  try {
    cumem::set_log_level(static_cast<cumem_log_level_t>(9));
    ADD_FAILURE() << "an invalid level must throw";
  } catch (const cumem::Error& e) {
    EXPECT_EQ(e.status(), CUMEM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("argument 'level' is 9"), std::string::npos) << e.what();
  }
  cumem::set_log_level(CUMEM_LOG_LEVEL_WARNING);
  EXPECT_EQ(cumem::log_level(), CUMEM_LOG_LEVEL_WARNING);
}

// The caching adaptor with options (Resource::caching(upstream, options)):
// the defaults are the plain cache; expandable segments need device memory.
TEST(FacadeAdaptors, CachingWithOptions) {
  const cumem::Resource host = cumem::Resource::host();
  auto o = cumem::caching_resource_options();
  EXPECT_EQ(o.struct_size, sizeof(cumem_caching_resource_options_t));
  EXPECT_EQ(o.expandable, CUMEM_FALSE);
  const cumem::Resource cache = cumem::Resource::caching(host, o);
  { const cumem::Buffer b = cache.allocate(1000); }
  EXPECT_EQ(cache.caching_statistics().bytes_cached, 1024u);
  EXPECT_EQ(cache.caching_statistics().pages_mapped, 0u);
  o.expandable = CUMEM_TRUE;
  EXPECT_CUMEM_THROW(cumem::Resource::caching(host, o), CUMEM_ERROR_NOT_SUPPORTED,
                     "expandable segments are device memory");
}

// Copies at scale and the rest of cuda.core 1.3, where no GPU is needed.
TEST(FacadeBatches, CopyBatchOverHostBuffersAndTheRawForm) {
  const cumem::Resource host = cumem::Resource::host();
  const cumem::Buffer a = host.allocate(256);
  const cumem::Buffer b = host.allocate(256);
  const cumem::Buffer c = host.allocate(512);
  a.fill_bytes(0x11);
  cumem::copy_batch({}, {{&b, 0, &a, 0, 128}, {&c, 384, &a, 128, 128}});
  EXPECT_EQ(b.data<unsigned char>()[127], 0x11);
  EXPECT_EQ(c.data<unsigned char>()[511], 0x11);
  // Whole buffers, as cuda.core's copy_batch(stream, srcs, dsts).
  const cumem::Buffer d = host.allocate(256);
  cumem::copy_batch({}, std::vector<const cumem::Buffer*>{&a}, std::vector<const cumem::Buffer*>{&d});
  EXPECT_EQ(d.data<unsigned char>()[255], 0x11);
  EXPECT_CUMEM_THROW(cumem::copy_batch({}, std::vector<const cumem::Buffer*>{&a, &b},
                                       std::vector<const cumem::Buffer*>{&d}),
                     CUMEM_ERROR_INVALID_ARGUMENT, "2 sources but 1 destinations");
  EXPECT_CUMEM_THROW(cumem::copy_batch({}, std::vector<const cumem::Buffer*>{&a},
                                       std::vector<const cumem::Buffer*>{&c}),
                     CUMEM_ERROR_SIZE_MISMATCH, "copy 0 of the batch");
  EXPECT_CUMEM_THROW(cumem::copy_batch({}, {{&b, 0, &b, 64, 128}}), CUMEM_ERROR_INVALID_ARGUMENT,
                     "overlap");
  EXPECT_CUMEM_THROW(cumem::copy_batch({}, {{nullptr, 0, &a, 0, 1}}), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'dsts[0]'");
  cumem_copy_options_t any = cumem::copy_options();
  any.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_ANY;
  cumem::copy_batch({}, {{&b, 128, &a, 0, 128}}, {any});
  EXPECT_EQ(b.data<unsigned char>()[255], 0x11);
  const cumem_batch_statistics_t s = cumem::batch_statistics();
  EXPECT_GE(s.copy_batches, 3u);
}

TEST(FacadeBatches, CopyToWithNoDestinationUsesTheBuffersResource) {
  const cumem::Resource host = cumem::Resource::host();
  const cumem::Buffer a = host.allocate(100);
  a.fill_bytes(7);
  const cumem::Buffer copy = a.copy_to();
  EXPECT_EQ(copy.size(), 100u);
  EXPECT_EQ(copy.resource().get(), host.get());
  EXPECT_EQ(copy.data<unsigned char>()[99], 7);
  char bytes[4] = {};
  const cumem::Buffer wrapped = cumem::Buffer::wrap(bytes, sizeof bytes);
  EXPECT_CUMEM_THROW(wrapped.copy_to(), CUMEM_ERROR_INVALID_ARGUMENT, "no resource");
}

TEST(FacadeBatches, FailureCallbackWithALambda) {
  const cumem::Resource limited = cumem::Resource::limit(cumem::Resource::host(), 4096);
  cumem::Buffer held = limited.allocate(3000);
  int calls = 0;
  size_t asked = 0;
  const cumem::Resource r = cumem::Resource::failure_callback(
      limited, [&](const cumem_failure_info_t& info) {
        ++calls;
        asked = info.size;
        held.reset();  // frees the 3000 bytes: the retry fits
        return true;
      });
  EXPECT_EQ(r.kind(), CUMEM_RESOURCE_FAILURE_CALLBACK);
  const cumem::Buffer b = r.allocate(2000);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(asked, 2000u);
  // A callable that throws gives up.
  const cumem::Resource throwing = cumem::Resource::failure_callback(
      limited, [](const cumem_failure_info_t&) -> bool { throw 1; }, 2);
  EXPECT_CUMEM_THROW(throwing.allocate(4000), CUMEM_ERROR_OUT_OF_MEMORY, "gave up");
  EXPECT_CUMEM_THROW(cumem::Resource::failure_callback(limited, cumem::failure_callback()),
                     CUMEM_ERROR_INVALID_ARGUMENT, "callback->callback");
}

}  // namespace

// The framework entry points' configuration (CUMEM_ALLOC_CONF's text).
TEST(FacadeFramework, ConfigureThrowsNamingTheKey) {
  cumem::framework_configure("kind:caching, limit:1GiB");
  try {
    cumem::framework_configure("kind:caching,colour:blue");
    FAIL() << "an unknown key was accepted";
  } catch (const cumem::Error& e) {
    EXPECT_EQ(e.status(), CUMEM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("unknown key 'colour'"), std::string::npos) << e.what();
  }
  cumem::framework_configure("");
}
