// "Zero means default" (cumem.h conventions): every _INIT macro and every
// _init() function gives the bytes of a zero-filled struct whose struct_size
// is sizeof(the struct); a zero-filled struct with struct_size set works as
// the defaults where a host test can see it; a struct left fully zero
// (struct_size 0) is refused with a message that says what to do; reserved
// fields of structs the library reads must be 0.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "test_util.hpp"

namespace {

// A struct as an FFI constructor makes it (all zero) once struct_size is set.
template <class T>
T zero_filled() {
  T t;
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  t.struct_size = static_cast<uint32_t>(sizeof t);
  return t;
}

// Compares bytes: every public struct is free of padding, so the bytes of
// an initialised struct are all its fields' bytes.
template <class T>
::testing::AssertionResult same_bytes(const T& a, const T& b) {
  const auto* pa = reinterpret_cast<const unsigned char*>(&a);
  const auto* pb = reinterpret_cast<const unsigned char*>(&b);
  for (size_t i = 0; i < sizeof(T); ++i)
    if (pa[i] != pb[i])
      return ::testing::AssertionFailure() << "byte " << i << " differs: " << int(pa[i])
                                           << " != " << int(pb[i]);
  return ::testing::AssertionSuccess();
}

// The result of an _init() function over memory that held garbage before.
template <class T>
T from_init(void (*init)(T*)) {
  T t;
  std::memset(static_cast<void*>(&t), 0xA5, sizeof t);
  init(&t);
  return t;
}

TEST(ZeroDefaults, InitFunctionsGiveZeroFilledStructs) {
  EXPECT_TRUE(same_bytes(from_init(cumem_stream_options_init), zero_filled<cumem_stream_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_event_options_init), zero_filled<cumem_event_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_host_resource_options_init),
                         zero_filled<cumem_host_resource_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_pool_options_init), zero_filled<cumem_pool_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_managed_resource_options_init),
                         zero_filled<cumem_managed_resource_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_program_options_init), zero_filled<cumem_program_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_launch_config_init), zero_filled<cumem_launch_config_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_dlpack_options_init), zero_filled<cumem_dlpack_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_copy_options_init), zero_filled<cumem_copy_options_t>()));
  EXPECT_TRUE(same_bytes(from_init(cumem_failure_callback_init),
                         zero_filled<cumem_failure_callback_t>()));
}

// Each macro into memory that held garbage before, so that a field the
// macro left out would show.
#define CUMEM_FROM_MACRO(T, MACRO)                                  \
  [] {                                                              \
    T t;                                                            \
    std::memset(static_cast<void*>(&t), 0xA5, sizeof t);            \
    t = T MACRO;                                                    \
    return t;                                                       \
  }()

TEST(ZeroDefaults, InitMacrosGiveZeroFilledStructs) {
  // Options and the structs read as options.
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_stream_options_t, CUMEM_STREAM_OPTIONS_INIT),
                         zero_filled<cumem_stream_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_event_options_t, CUMEM_EVENT_OPTIONS_INIT),
                         zero_filled<cumem_event_options_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_host_resource_options_t, CUMEM_HOST_RESOURCE_OPTIONS_INIT),
      zero_filled<cumem_host_resource_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_pool_options_t, CUMEM_POOL_OPTIONS_INIT),
                         zero_filled<cumem_pool_options_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_managed_resource_options_t, CUMEM_MANAGED_RESOURCE_OPTIONS_INIT),
      zero_filled<cumem_managed_resource_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_program_options_t, CUMEM_PROGRAM_OPTIONS_INIT),
                         zero_filled<cumem_program_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_launch_config_t, CUMEM_LAUNCH_CONFIG_INIT),
                         zero_filled<cumem_launch_config_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_dlpack_options_t, CUMEM_DLPACK_OPTIONS_INIT),
                         zero_filled<cumem_dlpack_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_resource_callbacks_t, CUMEM_RESOURCE_CALLBACKS_INIT),
                         zero_filled<cumem_resource_callbacks_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_pool_attributes_t, CUMEM_POOL_ATTRIBUTES_INIT),
                         zero_filled<cumem_pool_attributes_t>()));
  // Out structs.
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_device_properties_t, CUMEM_DEVICE_PROPERTIES_INIT),
                         zero_filled<cumem_device_properties_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_resource_properties_t, CUMEM_RESOURCE_PROPERTIES_INIT),
      zero_filled<cumem_resource_properties_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_resource_statistics_t, CUMEM_RESOURCE_STATISTICS_INIT),
      zero_filled<cumem_resource_statistics_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_caching_statistics_t, CUMEM_CACHING_STATISTICS_INIT),
                         zero_filled<cumem_caching_statistics_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_buffer_info_t, CUMEM_BUFFER_INFO_INIT),
                         zero_filled<cumem_buffer_info_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_kernel_attributes_t, CUMEM_KERNEL_ATTRIBUTES_INIT),
                         zero_filled<cumem_kernel_attributes_t>()));
  // Batches and the failure-callback adaptor: options, the struct read as
  // options, and the out structs.
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_copy_options_t, CUMEM_COPY_OPTIONS_INIT),
                         zero_filled<cumem_copy_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_failure_callback_t, CUMEM_FAILURE_CALLBACK_INIT),
                         zero_filled<cumem_failure_callback_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_batch_statistics_t, CUMEM_BATCH_STATISTICS_INIT),
                         zero_filled<cumem_batch_statistics_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_failure_info_t, CUMEM_FAILURE_INFO_INIT),
                         zero_filled<cumem_failure_info_t>()));
}

// The enum values that are the defaults are 0.
TEST(ZeroDefaults, DefaultEnumValuesAreZero) {
  EXPECT_EQ(static_cast<int>(CUMEM_PRIORITY_CLAMP), 0);
  EXPECT_EQ(static_cast<int>(CUMEM_CODE_CUBIN), 0);
  EXPECT_EQ(static_cast<int>(CUMEM_LOCATION_NONE), 0);
  EXPECT_EQ(static_cast<int>(CUMEM_MEMORY_HOST), 0);
  EXPECT_EQ(static_cast<int>(CUMEM_COPY_SRC_ACCESS_ORDER_STREAM), 0);
  EXPECT_EQ(static_cast<int>(CUMEM_COPY_OVERLAP_DEFAULT), 0);
  EXPECT_EQ(static_cast<int>(CUMEM_FAILURE_FAIL), 0);
}

TEST(ZeroDefaults, ZeroFilledStructIsRefusedWithAClearMessage) {
  cumem_host_resource_options_t options;
  std::memset(&options, 0, sizeof options);
  cumem_resource_t* resource = nullptr;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&options, &resource), CUMEM_ERROR_INVALID_ARGUMENT,
                     "argument 'options' (cumem_host_resource_options_t) has struct_size 0: the "
                     "struct looks zero-filled");
  const std::string message = cumem_last_error_message();
  EXPECT_NE(message.find("set struct_size to sizeof(cumem_host_resource_options_t) (" +
                         std::to_string(sizeof options) + " bytes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("cumem_host_resource_options_init()"), std::string::npos) << message;
  EXPECT_EQ(resource, nullptr);

  // An out struct: the message names its _INIT macro.
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &resource));
  cumem_resource_statistics_t stats;
  std::memset(&stats, 0, sizeof stats);
  CUMEM_EXPECT_ERROR(cumem_resource_get_statistics(resource, &stats), CUMEM_ERROR_INVALID_ARGUMENT,
                     "looks zero-filled");
  EXPECT_NE(std::string(cumem_last_error_message()).find("CUMEM_RESOURCE_STATISTICS_INIT"),
            std::string::npos)
      << cumem_last_error_message();
  CUMEM_ASSERT_OK(cumem_resource_release(resource));
}

// Host resource: zero alignment is the default 64.
TEST(ZeroDefaults, HostResourceZeroFilledOptionsAreTheDefaults) {
  const auto options = zero_filled<cumem_host_resource_options_t>();
  cumem_resource_t* resource = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&options, &resource));
  for (size_t size : {1u, 3u, 100u, 4097u}) {
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(resource, size, nullptr, &p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << "size " << size;
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(resource, p, size, nullptr));
  }
  CUMEM_ASSERT_OK(cumem_resource_release(resource));

  auto wide = options;
  wide.alignment = 4096;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&wide, &resource));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(resource, 10, nullptr, &p));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(resource, p, 10, nullptr));
  CUMEM_ASSERT_OK(cumem_resource_release(resource));
}

TEST(ZeroDefaults, ReservedFieldsMustBeZero) {
  auto options = zero_filled<cumem_host_resource_options_t>();
  options.reserved0 = 7;
  cumem_resource_t* resource = nullptr;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&options, &resource), CUMEM_ERROR_INVALID_ARGUMENT,
                     "options->reserved0 is 7; reserved fields must be 0");
  EXPECT_EQ(resource, nullptr);
}

int32_t host_allocate(size_t size, void*, void*, void** out_ptr) {
  *out_ptr = std::malloc(size == 0 ? 1 : size);
  return *out_ptr ? 0 : 1;
}
void host_deallocate(void* ptr, size_t, void*, void*) { std::free(ptr); }

cumem_resource_properties_t properties_of(const cumem_resource_t* resource) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  EXPECT_EQ(cumem_resource_get_properties(resource, &p), CUMEM_SUCCESS) << cumem_last_error_message();
  return p;
}

// Callbacks: zero is host memory, host-accessible only, freed at once.
TEST(ZeroDefaults, CallbackResourceZeroFilledIsHostMemory) {
  auto callbacks = zero_filled<cumem_resource_callbacks_t>();
  cumem_resource_t* resource = nullptr;
  CUMEM_EXPECT_ERROR(cumem_callback_resource_create(nullptr, &callbacks, &resource),
                     CUMEM_ERROR_INVALID_ARGUMENT, "must not be NULL");
  callbacks.allocate = host_allocate;
  callbacks.deallocate = host_deallocate;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(nullptr, &callbacks, &resource));
  const auto p = properties_of(resource);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.device_accessible, CUMEM_FALSE);
  EXPECT_EQ(p.is_stream_ordered, CUMEM_FALSE);
  cumem_buffer_t* buffer = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 16, nullptr, &buffer));
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(buffer, &info));
  EXPECT_EQ(info.memory_kind, CUMEM_MEMORY_HOST);
  EXPECT_EQ(info.reserved0, 0u);
  CUMEM_ASSERT_OK(cumem_buffer_release(buffer));
  CUMEM_ASSERT_OK(cumem_resource_release(resource));

  // device_accessible adds the device to host memory's own access.
  callbacks.device_accessible = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(nullptr, &callbacks, &resource));
  const auto both = properties_of(resource);
  EXPECT_EQ(both.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(both.device_accessible, CUMEM_TRUE);
  CUMEM_ASSERT_OK(cumem_resource_release(resource));

  callbacks.device_accessible = CUMEM_FALSE;
  callbacks.reserved0 = 1;
  CUMEM_EXPECT_ERROR(cumem_callback_resource_create(nullptr, &callbacks, &resource),
                     CUMEM_ERROR_INVALID_ARGUMENT, "callbacks->reserved0 is 1");
  callbacks.reserved0 = 0;
  callbacks.memory_kind = static_cast<cumem_memory_kind_t>(4);
  CUMEM_EXPECT_ERROR(cumem_callback_resource_create(nullptr, &callbacks, &resource),
                     CUMEM_ERROR_INVALID_ARGUMENT,
                     "callbacks->memory_kind 4 is not a cumem_memory_kind_t");
}

// Virtual memory (cumem_virtual_resource_*): its options and statistics.
TEST(ZeroDefaults, VirtualMemoryStructsAreZeroFilled) {
  EXPECT_TRUE(same_bytes(from_init(cumem_virtual_resource_options_init),
                         zero_filled<cumem_virtual_resource_options_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_virtual_resource_options_t, CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT),
      zero_filled<cumem_virtual_resource_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_virtual_statistics_t, CUMEM_VIRTUAL_STATISTICS_INIT),
                         zero_filled<cumem_virtual_statistics_t>()));
  EXPECT_EQ(static_cast<int>(CUMEM_GRANULARITY_RECOMMENDED), 0) << "the default granularity";
  EXPECT_EQ(static_cast<int>(CUMEM_ACCESS_NONE), 0);
}

// Communication engines: the dma-buf and unmap event structs' macros.
TEST(ZeroDefaults, CommunicationEngineStructsAreZeroFilled) {
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_dmabuf_t, CUMEM_DMABUF_INIT),
                         zero_filled<cumem_dmabuf_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_unmap_event_t, CUMEM_UNMAP_EVENT_INIT),
                         zero_filled<cumem_unmap_event_t>()));
}

// The caching adaptor's options (table version 2): the _init function and
// the macro give the zero-filled struct, which is the plain cache; a page
// size without expandable is refused, naming both fields.
TEST(ZeroDefaults, CachingResourceOptions) {
  EXPECT_TRUE(same_bytes(from_init(cumem_caching_resource_options_init),
                         zero_filled<cumem_caching_resource_options_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_caching_resource_options_t, CUMEM_CACHING_RESOURCE_OPTIONS_INIT),
      zero_filled<cumem_caching_resource_options_t>()));
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_caching_resource_options_t o = zero_filled<cumem_caching_resource_options_t>();
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(host, &o, &cache));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(cache, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_CACHING);
  cumem_resource_release(cache);
  o.page_size = 2u << 20;
  cache = nullptr;
  CUMEM_EXPECT_ERROR(cumem_caching_resource_create_with_options(host, &o, &cache),
                     CUMEM_ERROR_INVALID_ARGUMENT, "options->page_size is 2097152 but options->expandable is false");
  EXPECT_EQ(cache, nullptr);
  // Expandable segments are device memory: over the host resource, refused.
  o.page_size = 0;
  o.expandable = CUMEM_TRUE;
  CUMEM_EXPECT_ERROR(cumem_caching_resource_create_with_options(host, &o, &cache),
                     CUMEM_ERROR_NOT_SUPPORTED, "expandable segments are device memory");
  std::memset(&o, 0, sizeof o);
  CUMEM_EXPECT_ERROR(cumem_caching_resource_create_with_options(host, &o, &cache),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cumem_caching_resource_options_init()");
  EXPECT_EQ(cache, nullptr);
  cumem_resource_release(host);
}

// CUDA graphs: the options struct, and the two out structs.
TEST(ZeroDefaults, CudaGraphStructs) {
  EXPECT_TRUE(same_bytes(from_init(cumem_graph_options_init), zero_filled<cumem_graph_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_graph_options_t, CUMEM_GRAPH_OPTIONS_INIT),
                         zero_filled<cumem_graph_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_capture_info_t, CUMEM_CAPTURE_INFO_INIT),
                         zero_filled<cumem_capture_info_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_graph_memory_attributes_t, CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT),
      zero_filled<cumem_graph_memory_attributes_t>()));
  // The zero value of each enum is its default.
  EXPECT_EQ(static_cast<int>(CUMEM_CAPTURE_STATUS_NONE), 0);
}

}  // namespace

// Batch copies: zero-filled options are the defaults (stream order, no
// hints), which a copy between host buffers shows without a driver.
TEST(ZeroDefaults, CopyOptionsZeroFilledAreTheDefaults) {
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_buffer_t* a = nullptr;
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 64, nullptr, &a));
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 64, nullptr, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(a, 0x5A, 1, nullptr));
  const auto options = zero_filled<cumem_copy_options_t>();
  cumem_buffer_t* dsts[] = {b};
  const cumem_buffer_t* srcs[] = {a};
  CUMEM_ASSERT_OK(cumem_copy_batch(nullptr, 1, dsts, nullptr, srcs, nullptr, nullptr, &options, 1));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
  EXPECT_EQ(static_cast<unsigned char*>(p)[63], 0x5A);
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_resource_release(host);
}

// Seeing the memory: the history's options (an _init function and its
// macro) and the snapshot's out structs.
TEST(ZeroDefaults, SeeingTheMemoryStructs) {
  EXPECT_TRUE(same_bytes(from_init(cumem_memory_history_options_init),
                         zero_filled<cumem_memory_history_options_t>()));
  EXPECT_TRUE(same_bytes(
      CUMEM_FROM_MACRO(cumem_memory_history_options_t, CUMEM_MEMORY_HISTORY_OPTIONS_INIT),
      zero_filled<cumem_memory_history_options_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_snapshot_totals_t, CUMEM_SNAPSHOT_TOTALS_INIT),
                         zero_filled<cumem_snapshot_totals_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_snapshot_resource_t, CUMEM_SNAPSHOT_RESOURCE_INIT),
                         zero_filled<cumem_snapshot_resource_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_snapshot_segment_t, CUMEM_SNAPSHOT_SEGMENT_INIT),
                         zero_filled<cumem_snapshot_segment_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_snapshot_block_t, CUMEM_SNAPSHOT_BLOCK_INIT),
                         zero_filled<cumem_snapshot_block_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_memory_event_t, CUMEM_MEMORY_EVENT_INIT),
                         zero_filled<cumem_memory_event_t>()));
  EXPECT_TRUE(same_bytes(CUMEM_FROM_MACRO(cumem_stack_frame_t, CUMEM_STACK_FRAME_INIT),
                         zero_filled<cumem_stack_frame_t>()));
  // Zero-filled options are the defaults: stacks off, 65536 events.
  const auto options = zero_filled<cumem_memory_history_options_t>();
  CUMEM_ASSERT_OK(cumem_memory_history_start(&options));
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  for (int i = 0; i < 40000; ++i) {
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(host, 64, nullptr, &p));
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(host, p, 64, nullptr));
  }
  cumem_snapshot_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_snapshot_take(host, &s));
  cumem_snapshot_totals_t t = CUMEM_SNAPSHOT_TOTALS_INIT;
  CUMEM_ASSERT_OK(cumem_snapshot_get_totals(s, &t));
  EXPECT_EQ(t.event_count, 65536u);
  EXPECT_EQ(t.events_dropped, 80000u - 65536u);
  cumem_memory_event_t e = CUMEM_MEMORY_EVENT_INIT;
  CUMEM_ASSERT_OK(cumem_snapshot_get_event(s, 0, &e));
  EXPECT_EQ(e.stack_id, 0u) << "no stacks by default";
  cumem_snapshot_release(s);
  cumem_resource_release(host);
  CUMEM_ASSERT_OK(cumem_memory_history_stop());
}
