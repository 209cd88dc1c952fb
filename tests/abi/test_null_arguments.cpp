// Every entry point given a NULL handle or a NULL out-pointer answers
// CUMEM_ERROR_INVALID_ARGUMENT naming the argument, before it needs a driver.
#include <functional>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

struct Case {
  const char* call;
  const char* argument;
  std::function<cumem_status_t()> run;
};

void expect_all(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.call);
    const cumem_status_t s = c.run();
    EXPECT_EQ(s, CUMEM_ERROR_INVALID_ARGUMENT) << cumem_status_string(s);
    const std::string message = cumem_last_error_message();
    EXPECT_NE(message.find(std::string("'") + c.argument + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.call), std::string::npos) << message;
  }
}

TEST(NullArguments, NullHandles) {
  void* p = nullptr;
  size_t n = 0;
  int32_t i = 0, j = 0;
  uint64_t u = 0, v = 0;
  float f = 0;
  cumem_bool_t b = 0;
  const char* text = nullptr;
  const void* code = nullptr;
  cumem_device_t* dev = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_event_t* event = nullptr;
  cumem_resource_t* res = nullptr;
  cumem_buffer_t* buf = nullptr;
  cumem_program_t* prog = nullptr;
  cumem_library_t* lib = nullptr;
  cumem_kernel_t* kern = nullptr;
  cumem_device_properties_t dp = CUMEM_DEVICE_PROPERTIES_INIT;
  cumem_resource_properties_t rp = CUMEM_RESOURCE_PROPERTIES_INIT;
  cumem_resource_statistics_t rs = CUMEM_RESOURCE_STATISTICS_INIT;
  cumem_pool_attributes_t pa = CUMEM_POOL_ATTRIBUTES_INIT;
  cumem_buffer_info_t bi = CUMEM_BUFFER_INFO_INIT;
  cumem_kernel_attributes_t ka = CUMEM_KERNEL_ATTRIBUTES_INIT;
  cumem_launch_config_t lc = CUMEM_LAUNCH_CONFIG_INIT;
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  const char* src = "__global__ void k() {}";
  const unsigned char image[4] = {1, 2, 3, 4};

  expect_all({
      {"cumem_driver_version", "out_version", [&] { return cumem_driver_version(nullptr); }},
      {"cumem_device_count", "out_count", [&] { return cumem_device_count(nullptr); }},
      {"cumem_device_get", "out_device", [&] { return cumem_device_get(0, nullptr); }},
      {"cumem_device_retain", "device", [&] { return cumem_device_retain(nullptr); }},
      {"cumem_device_ordinal", "device", [&] { return cumem_device_ordinal(nullptr, &i); }},
      {"cumem_device_get_properties", "device", [&] { return cumem_device_get_properties(nullptr, &dp); }},
      {"cumem_device_get_attribute", "device", [&] { return cumem_device_get_attribute(nullptr, 1, &i); }},
      {"cumem_device_set_current", "device", [&] { return cumem_device_set_current(nullptr); }},
      {"cumem_device_synchronize", "device", [&] { return cumem_device_synchronize(nullptr); }},
      {"cumem_device_memory_info", "device", [&] { return cumem_device_memory_info(nullptr, &u, &v); }},
      {"cumem_device_can_access_peer", "device", [&] { return cumem_device_can_access_peer(nullptr, nullptr, &b); }},
      {"cumem_device_enable_peer_access", "device", [&] { return cumem_device_enable_peer_access(nullptr, nullptr); }},
      {"cumem_device_stream_priority_range", "device", [&] { return cumem_device_stream_priority_range(nullptr, &i, &j); }},
      {"cumem_stream_create", "device", [&] { return cumem_stream_create(nullptr, nullptr, &stream); }},
      {"cumem_stream_wrap", "device", [&] { return cumem_stream_wrap(nullptr, &p, &stream); }},
      {"cumem_stream_legacy_default", "device", [&] { return cumem_stream_legacy_default(nullptr, &stream); }},
      {"cumem_stream_per_thread_default", "device", [&] { return cumem_stream_per_thread_default(nullptr, &stream); }},
      {"cumem_stream_retain", "stream", [&] { return cumem_stream_retain(nullptr); }},
      {"cumem_stream_native", "stream", [&] { return cumem_stream_native(nullptr, &p); }},
      {"cumem_stream_device", "stream", [&] { return cumem_stream_device(nullptr, &dev); }},
      {"cumem_stream_priority", "stream", [&] { return cumem_stream_priority(nullptr, &i); }},
      {"cumem_stream_synchronize", "stream", [&] { return cumem_stream_synchronize(nullptr); }},
      {"cumem_stream_query", "stream", [&] { return cumem_stream_query(nullptr, &b); }},
      {"cumem_stream_begin_capture", "stream", [&] { return cumem_stream_begin_capture(nullptr, CUMEM_CAPTURE_MODE_RELAXED); }},
      {"cumem_stream_end_capture", "stream", [&] { return cumem_stream_end_capture(nullptr, &p); }},
      {"cumem_stream_wait_event", "stream", [&] { return cumem_stream_wait_event(nullptr, nullptr); }},
      {"cumem_stream_wait_stream", "stream", [&] { return cumem_stream_wait_stream(nullptr, nullptr); }},
      {"cumem_event_create", "device", [&] { return cumem_event_create(nullptr, nullptr, &event); }},
      {"cumem_event_retain", "event", [&] { return cumem_event_retain(nullptr); }},
      {"cumem_event_record", "event", [&] { return cumem_event_record(nullptr, nullptr); }},
      {"cumem_event_synchronize", "event", [&] { return cumem_event_synchronize(nullptr); }},
      {"cumem_event_query", "event", [&] { return cumem_event_query(nullptr, &b); }},
      {"cumem_event_elapsed_ms", "start", [&] { return cumem_event_elapsed_ms(nullptr, nullptr, &f); }},
      {"cumem_event_native", "event", [&] { return cumem_event_native(nullptr, &p); }},
      {"cumem_host_resource_create", "out_resource", [&] { return cumem_host_resource_create(nullptr, nullptr); }},
      {"cumem_device_resource_create", "device", [&] { return cumem_device_resource_create(nullptr, nullptr, &res); }},
      {"cumem_pinned_resource_create", "device", [&] { return cumem_pinned_resource_create(nullptr, nullptr, &res); }},
      {"cumem_legacy_pinned_resource_create", "device", [&] { return cumem_legacy_pinned_resource_create(nullptr, &res); }},
      {"cumem_managed_resource_create", "device", [&] { return cumem_managed_resource_create(nullptr, nullptr, &res); }},
      {"cumem_resource_retain", "resource", [&] { return cumem_resource_retain(nullptr); }},
      {"cumem_resource_allocate", "resource", [&] { return cumem_resource_allocate(nullptr, 1, nullptr, &buf); }},
      {"cumem_resource_allocate_raw", "resource", [&] { return cumem_resource_allocate_raw(nullptr, 1, nullptr, &p); }},
      {"cumem_resource_deallocate_raw", "resource", [&] { return cumem_resource_deallocate_raw(nullptr, p, 1, nullptr); }},
      {"cumem_resource_get_properties", "resource", [&] { return cumem_resource_get_properties(nullptr, &rp); }},
      {"cumem_resource_get_statistics", "resource", [&] { return cumem_resource_get_statistics(nullptr, &rs); }},
      {"cumem_resource_reset_peak", "resource", [&] { return cumem_resource_reset_peak(nullptr); }},
      {"cumem_resource_pool_get_attributes", "resource", [&] { return cumem_resource_pool_get_attributes(nullptr, &pa); }},
      {"cumem_resource_pool_set_attributes", "resource", [&] { return cumem_resource_pool_set_attributes(nullptr, &pa); }},
      {"cumem_resource_pool_reset_highs", "resource", [&] { return cumem_resource_pool_reset_highs(nullptr); }},
      {"cumem_resource_pool_trim", "resource", [&] { return cumem_resource_pool_trim(nullptr, 0); }},
      {"cumem_resource_pool_set_access", "resource", [&] { return cumem_resource_pool_set_access(nullptr, nullptr, 1); }},
      {"cumem_resource_pool_get_access", "resource", [&] { return cumem_resource_pool_get_access(nullptr, nullptr, &b); }},
      {"cumem_resource_pool_native", "resource", [&] { return cumem_resource_pool_native(nullptr, &p); }},
      {"cumem_buffer_retain", "buffer", [&] { return cumem_buffer_retain(nullptr); }},
      {"cumem_buffer_ptr", "buffer", [&] { return cumem_buffer_ptr(nullptr, &p); }},
      {"cumem_buffer_size", "buffer", [&] { return cumem_buffer_size(nullptr, &n); }},
      {"cumem_buffer_resource", "buffer", [&] { return cumem_buffer_resource(nullptr, &res); }},
      {"cumem_buffer_device_id", "buffer", [&] { return cumem_buffer_device_id(nullptr, &i); }},
      {"cumem_buffer_get_info", "buffer", [&] { return cumem_buffer_get_info(nullptr, &bi); }},
      {"cumem_buffer_is_closed", "buffer", [&] { return cumem_buffer_is_closed(nullptr, &b); }},
      {"cumem_buffer_set_deallocation_stream", "buffer", [&] { return cumem_buffer_set_deallocation_stream(nullptr, nullptr); }},
      {"cumem_buffer_close", "buffer", [&] { return cumem_buffer_close(nullptr, nullptr); }},
      {"cumem_buffer_copy_to", "src", [&] { return cumem_buffer_copy_to(nullptr, nullptr, nullptr); }},
      {"cumem_buffer_copy_from", "dst", [&] { return cumem_buffer_copy_from(nullptr, nullptr, nullptr); }},
      {"cumem_buffer_copy_region", "dst", [&] { return cumem_buffer_copy_region(nullptr, 0, nullptr, 0, 0, nullptr); }},
      {"cumem_buffer_fill", "buffer", [&] { return cumem_buffer_fill(nullptr, 0, 1, nullptr); }},
      {"cumem_buffer_slice", "buffer", [&] { return cumem_buffer_slice(nullptr, 0, 0, &buf); }},
      {"cumem_buffer_wrap_owned", "resource", [&] { return cumem_buffer_wrap_owned(nullptr, p, 0, &buf); }},
      {"cumem_buffer_wrap", "out_buffer", [&] { return cumem_buffer_wrap(p, 0, nullptr, nullptr, nullptr); }},
      {"cumem_buffer_register_host", "device", [&] { return cumem_buffer_register_host(nullptr, &i, 4, &buf); }},
      {"cumem_buffer_prefetch", "buffer", [&] { return cumem_buffer_prefetch(nullptr, host, nullptr); }},
      {"cumem_buffer_advise", "buffer", [&] { return cumem_buffer_advise(nullptr, CUMEM_ADVICE_SET_READ_MOSTLY, host); }},
      {"cumem_buffer_discard", "buffer", [&] { return cumem_buffer_discard(nullptr, nullptr); }},
      {"cumem_nvrtc_version", "out_major", [&] { return cumem_nvrtc_version(nullptr, &j); }},
      {"cumem_program_compile", "device", [&] { return cumem_program_compile(nullptr, src, nullptr, &prog); }},
      {"cumem_program_retain", "program", [&] { return cumem_program_retain(nullptr); }},
      {"cumem_program_log", "program", [&] { return cumem_program_log(nullptr, &text); }},
      {"cumem_program_code", "program", [&] { return cumem_program_code(nullptr, &code, &n); }},
      {"cumem_program_lowered_name", "program", [&] { return cumem_program_lowered_name(nullptr, "k", &text); }},
      {"cumem_program_load", "program", [&] { return cumem_program_load(nullptr, &lib); }},
      {"cumem_library_load_data", "device", [&] { return cumem_library_load_data(nullptr, image, sizeof image, &lib); }},
      {"cumem_library_retain", "library", [&] { return cumem_library_retain(nullptr); }},
      {"cumem_library_get_kernel", "library", [&] { return cumem_library_get_kernel(nullptr, "k", &kern); }},
      {"cumem_kernel_retain", "kernel", [&] { return cumem_kernel_retain(nullptr); }},
      {"cumem_kernel_get_attributes", "kernel", [&] { return cumem_kernel_get_attributes(nullptr, &ka); }},
      {"cumem_kernel_native", "kernel", [&] { return cumem_kernel_native(nullptr, &p); }},
      {"cumem_launch", "kernel", [&] { return cumem_launch(nullptr, nullptr, &lc, nullptr, 0); }},
  });
}

// Batches, the device's memory resource, copy_to with no destination, the
// last prefetch location and the failure-callback adaptor.
TEST(NullArguments, NullHandlesAndArraysOfCopiesAtScale) {
  void* p = nullptr;
  cumem_resource_t* res = nullptr;
  cumem_buffer_t* buf = nullptr;
  cumem_buffer_t* const no_buffers[1] = {nullptr};
  const cumem_buffer_t* const no_srcs[1] = {nullptr};
  const size_t sizes[1] = {1};
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  cumem_location_t where = {};
  cumem_failure_callback_t fc = CUMEM_FAILURE_CALLBACK_INIT;
  expect_all({
      {"cumem_device_get_memory_resource", "device", [&] { return cumem_device_get_memory_resource(nullptr, &res); }},
      {"cumem_device_set_memory_resource", "device", [&] { return cumem_device_set_memory_resource(nullptr, nullptr); }},
      {"cumem_device_allocate", "device", [&] { return cumem_device_allocate(nullptr, 1, nullptr, &buf); }},
      {"cumem_failure_callback_resource_create", "upstream", [&] { return cumem_failure_callback_resource_create(nullptr, &fc, &res); }},
      {"cumem_buffer_discard_prefetch", "buffer", [&] { return cumem_buffer_discard_prefetch(nullptr, host, nullptr); }},
      {"cumem_buffer_get_last_prefetch_location", "buffer", [&] { return cumem_buffer_get_last_prefetch_location(nullptr, &where); }},
      {"cumem_buffer_copy_to_new", "src", [&] { return cumem_buffer_copy_to_new(nullptr, nullptr, &buf); }},
      {"cumem_copy_batch", "dsts", [&] { return cumem_copy_batch(nullptr, 1, nullptr, nullptr, no_srcs, nullptr, nullptr, nullptr, 0); }},
      {"cumem_copy_batch", "srcs", [&] { return cumem_copy_batch(nullptr, 1, no_buffers, nullptr, nullptr, nullptr, nullptr, nullptr, 0); }},
      {"cumem_copy_batch", "dsts[0]", [&] { return cumem_copy_batch(nullptr, 1, no_buffers, nullptr, no_srcs, nullptr, nullptr, nullptr, 0); }},
      {"cumem_copy_batch_raw", "dsts", [&] { return cumem_copy_batch_raw(nullptr, 1, nullptr, nullptr, nullptr, nullptr, sizes, nullptr, 0); }},
      {"cumem_copy_batch_raw", "sizes", [&] { return cumem_copy_batch_raw(nullptr, 1, &p, nullptr, const_cast<const void* const*>(&p), nullptr, nullptr, nullptr, 0); }},
      {"cumem_prefetch_batch", "buffers", [&] { return cumem_prefetch_batch(nullptr, 1, nullptr, &host, 1); }},
      {"cumem_prefetch_batch", "buffers[0]", [&] { return cumem_prefetch_batch(nullptr, 1, no_buffers, &host, 1); }},
      {"cumem_discard_batch", "buffers", [&] { return cumem_discard_batch(nullptr, 1, nullptr); }},
      {"cumem_discard_prefetch_batch", "buffers", [&] { return cumem_discard_prefetch_batch(nullptr, 1, nullptr, &host, 1); }},
      {"cumem_batch_get_statistics", "stats", [&] { return cumem_batch_get_statistics(nullptr); }},
  });
  // Out pointers, with live host objects.
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &res));
  CUMEM_ASSERT_OK(cumem_resource_allocate(res, 16, nullptr, &buf));
  cumem_buffer_t* list[1] = {buf};
  expect_all({
      {"cumem_buffer_copy_to_new", "out_buffer", [&] { return cumem_buffer_copy_to_new(buf, nullptr, nullptr); }},
      {"cumem_buffer_get_last_prefetch_location", "out_location", [&] { return cumem_buffer_get_last_prefetch_location(buf, nullptr); }},
      {"cumem_failure_callback_resource_create", "callback", [&] { return cumem_failure_callback_resource_create(res, nullptr, &res); }},
      {"cumem_failure_callback_resource_create", "out_resource", [&] { return cumem_failure_callback_resource_create(res, &fc, nullptr); }},
      {"cumem_prefetch_batch", "locations", [&] { return cumem_prefetch_batch(nullptr, 1, list, nullptr, 1); }},
      {"cumem_discard_prefetch_batch", "locations", [&] { return cumem_discard_prefetch_batch(nullptr, 1, list, nullptr, 1); }},
  });
  cumem_buffer_release(buf);
  cumem_resource_release(res);
}

TEST(NullArguments, NullOutPointersWithLiveHostObjects) {
  cumem_resource_t* res = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &res));
  cumem_buffer_t* buf = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(res, 16, nullptr, &buf));
  expect_all({
      {"cumem_resource_allocate", "out_buffer", [&] { return cumem_resource_allocate(res, 1, nullptr, nullptr); }},
      {"cumem_resource_allocate_raw", "out_ptr", [&] { return cumem_resource_allocate_raw(res, 1, nullptr, nullptr); }},
      {"cumem_resource_get_properties", "props", [&] { return cumem_resource_get_properties(res, nullptr); }},
      {"cumem_resource_get_statistics", "stats", [&] { return cumem_resource_get_statistics(res, nullptr); }},
      {"cumem_resource_pool_set_attributes", "attributes", [&] { return cumem_resource_pool_set_attributes(res, nullptr); }},
      {"cumem_resource_pool_set_access", "peer", [&] { return cumem_resource_pool_set_access(res, nullptr, 1); }},
      {"cumem_resource_pool_get_access", "peer", [&] { return cumem_resource_pool_get_access(res, nullptr, nullptr); }},
      {"cumem_resource_pool_native", "out_pool", [&] { return cumem_resource_pool_native(res, nullptr); }},
      {"cumem_buffer_ptr", "out_ptr", [&] { return cumem_buffer_ptr(buf, nullptr); }},
      {"cumem_buffer_size", "out_size", [&] { return cumem_buffer_size(buf, nullptr); }},
      {"cumem_buffer_resource", "out_resource", [&] { return cumem_buffer_resource(buf, nullptr); }},
      {"cumem_buffer_device_id", "out_device_id", [&] { return cumem_buffer_device_id(buf, nullptr); }},
      {"cumem_buffer_get_info", "info", [&] { return cumem_buffer_get_info(buf, nullptr); }},
      {"cumem_buffer_is_closed", "out_closed", [&] { return cumem_buffer_is_closed(buf, nullptr); }},
      {"cumem_buffer_copy_to", "dst", [&] { return cumem_buffer_copy_to(buf, nullptr, nullptr); }},
      {"cumem_buffer_copy_from", "src", [&] { return cumem_buffer_copy_from(buf, nullptr, nullptr); }},
      {"cumem_buffer_copy_region", "src", [&] { return cumem_buffer_copy_region(buf, 0, nullptr, 0, 0, nullptr); }},
      {"cumem_buffer_slice", "out_slice", [&] { return cumem_buffer_slice(buf, 0, 0, nullptr); }},
      {"cumem_buffer_wrap_owned", "out_buffer", [&] { return cumem_buffer_wrap_owned(res, nullptr, 0, nullptr); }},
  });
  // A handle of the wrong type is refused too.
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(reinterpret_cast<cumem_buffer_t*>(res), 0, 1, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "is a cumem_resource_t, not a cumem_buffer_t");
  cumem_buffer_release(buf);
  cumem_resource_release(res);
}

// Virtual memory (cumem_virtual_resource_*, cumem_buffer_resize, virtual
// IPC handles). NULL out-pointers next to live virtual objects need a
// driver: tests/vmm/test_virtual_resource.cpp checks them on the fake one.
TEST(NullArguments, VirtualMemory) {
  cumem_resource_t* res = nullptr;
  cumem_buffer_t* buf = nullptr;
  cumem_virtual_ipc_handle_t* handle = nullptr;
  cumem_access_t access = CUMEM_ACCESS_NONE;
  cumem_virtual_statistics_t vs = CUMEM_VIRTUAL_STATISTICS_INIT;
  uint32_t count = 0;
  int32_t fd = 0;
  size_t length = 0;
  const uint8_t bytes[4] = {};
  const int32_t fds[1] = {0};
  expect_all({
      {"cumem_virtual_resource_create", "device", [&] { return cumem_virtual_resource_create(nullptr, nullptr, &res); }},
      {"cumem_buffer_resize", "buffer", [&] { return cumem_buffer_resize(nullptr, 1, nullptr); }},
      {"cumem_virtual_resource_set_access", "resource", [&] { return cumem_virtual_resource_set_access(nullptr, nullptr, CUMEM_ACCESS_READ); }},
      {"cumem_virtual_resource_get_access", "resource", [&] { return cumem_virtual_resource_get_access(nullptr, nullptr, &access); }},
      {"cumem_virtual_resource_get_statistics", "resource", [&] { return cumem_virtual_resource_get_statistics(nullptr, &vs); }},
      {"cumem_virtual_resource_release_pending", "resource", [&] { return cumem_virtual_resource_release_pending(nullptr); }},
      {"cumem_buffer_get_virtual_ipc_handle", "buffer", [&] { return cumem_buffer_get_virtual_ipc_handle(nullptr, &handle); }},
      {"cumem_virtual_ipc_handle_retain", "handle", [&] { return cumem_virtual_ipc_handle_retain(nullptr); }},
      {"cumem_virtual_ipc_handle_fd_count", "handle", [&] { return cumem_virtual_ipc_handle_fd_count(nullptr, &count); }},
      {"cumem_virtual_ipc_handle_fd", "handle", [&] { return cumem_virtual_ipc_handle_fd(nullptr, 0, &fd); }},
      {"cumem_virtual_ipc_handle_descriptor", "handle", [&] { return cumem_virtual_ipc_handle_descriptor(nullptr, nullptr, 0, &length); }},
      {"cumem_virtual_ipc_handle_from_fds", "descriptor", [&] { return cumem_virtual_ipc_handle_from_fds(nullptr, 0, fds, 1, &handle); }},
      {"cumem_virtual_ipc_handle_from_fds", "fds", [&] { return cumem_virtual_ipc_handle_from_fds(bytes, sizeof bytes, nullptr, 1, &handle); }},
      {"cumem_virtual_ipc_handle_from_fds", "out_handle", [&] { return cumem_virtual_ipc_handle_from_fds(bytes, sizeof bytes, fds, 1, nullptr); }},
      {"cumem_ipc_send_virtual", "handle", [&] { return cumem_ipc_send_virtual(0, nullptr); }},
      {"cumem_ipc_receive_virtual", "out_handle", [&] { return cumem_ipc_receive_virtual(0, nullptr); }},
      {"cumem_buffer_from_virtual_ipc_handle", "device", [&] { return cumem_buffer_from_virtual_ipc_handle(nullptr, nullptr, nullptr, &buf); }},
  });
  EXPECT_EQ(cumem_virtual_ipc_handle_release(nullptr), CUMEM_SUCCESS) << "release(NULL) is fine";
  cumem_virtual_resource_options_init(nullptr);  // does nothing

  // Out-pointers checked before the buffer's resource is (a host buffer).
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &res));
  CUMEM_ASSERT_OK(cumem_resource_allocate(res, 16, nullptr, &buf));
  expect_all({
      {"cumem_buffer_get_virtual_ipc_handle", "out_handle", [&] { return cumem_buffer_get_virtual_ipc_handle(buf, nullptr); }},
  });
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(buf, 32, nullptr), CUMEM_ERROR_NOT_SUPPORTED,
                     "only buffers allocated from a virtual memory resource can be resized");
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_get_statistics(res, &vs), CUMEM_ERROR_NOT_SUPPORTED,
                     "is not a virtual memory resource");
  cumem_buffer_release(buf);
  cumem_resource_release(res);
}

// The caching adaptor's options (table version 2).
TEST(NullArguments, CachingResourceWithOptions) {
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_resource_t* out = nullptr;
  const cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  expect_all({
      {"cumem_caching_resource_create_with_options", "upstream",
       [&] { return cumem_caching_resource_create_with_options(nullptr, &o, &out); }},
      {"cumem_caching_resource_create_with_options", "out_resource",
       [&] { return cumem_caching_resource_create_with_options(host, &o, nullptr); }},
      {"cumem_caching_resource_release_capture_pool", "resource",
       [&] { return cumem_caching_resource_release_capture_pool(nullptr, 1); }},
  });
  EXPECT_EQ(out, nullptr);
  cumem_caching_resource_options_init(nullptr);  // a NULL struct is ignored
  // NULL options are the defaults.
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(host, nullptr, &out));
  // A capture pool that does not exist, and a resource that is no cache.
  CUMEM_EXPECT_ERROR(cumem_caching_resource_release_capture_pool(out, 42), CUMEM_ERROR_NOT_FOUND,
                     "no private pool of capture 42");
  CUMEM_EXPECT_ERROR(cumem_caching_resource_release_capture_pool(host, 42),
                     CUMEM_ERROR_NOT_SUPPORTED, "caching");
  // Handle types are for an expandable cache's pages, and only POSIX fds.
  cumem_caching_resource_options_t bad = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  bad.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
  cumem_resource_t* refused = nullptr;
  CUMEM_EXPECT_ERROR(cumem_caching_resource_create_with_options(host, &bad, &refused),
                     CUMEM_ERROR_INVALID_ARGUMENT, "handle types are for an expandable cache");
  EXPECT_EQ(refused, nullptr);
  // A cache that is not expandable shares nothing as virtual IPC handles.
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_native(out, 4096, nullptr, &p));
  cumem_virtual_ipc_handle_t* vh = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_get_virtual_ipc_handle_native(out, p, 0, &vh),
                     CUMEM_ERROR_NOT_SUPPORTED, "is not expandable");
  CUMEM_EXPECT_ERROR(cumem_resource_get_virtual_ipc_handle_native(out, nullptr, 0, &vh),
                     CUMEM_ERROR_INVALID_ARGUMENT, "ptr");
  CUMEM_EXPECT_ERROR(cumem_resource_get_virtual_ipc_handle_native(host, p, 0, &vh),
                     CUMEM_ERROR_NOT_SUPPORTED, "does not share as virtual IPC handles");
  EXPECT_EQ(vh, nullptr);
  // Its small blocks share as its upstream's buffers, which a host resource has none of.
  cumem_ipc_descriptor_t d;
  CUMEM_EXPECT_ERROR(cumem_resource_get_ipc_descriptor_native(out, p, 0, &d),
                     CUMEM_ERROR_NOT_SUPPORTED, "does not take part in IPC");
  CUMEM_EXPECT_ERROR(cumem_resource_get_ipc_descriptor_native(out, p, 8192, &d),
                     CUMEM_ERROR_INVALID_ARGUMENT, "the block there has");
  CUMEM_EXPECT_ERROR(cumem_resource_get_ipc_descriptor_native(out, &d, 0, &d),
                     CUMEM_ERROR_NOT_SUPPORTED, "only the small blocks");
  CUMEM_EXPECT_ERROR(cumem_resource_get_ipc_descriptor_native(out, nullptr, 0, &d),
                     CUMEM_ERROR_INVALID_ARGUMENT, "ptr");
  cumem_allocation_handle_t* ah = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_get_allocation_handle(out, &ah), CUMEM_ERROR_NOT_SUPPORTED,
                     "does not take part in IPC");
  CUMEM_ASSERT_OK(cumem_resource_deallocate_native(out, p, 4096, nullptr));
  const uint8_t junk[8] = {};
  const int32_t fd = 0;
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_from_pid(nullptr, 0, 1, &fd, 1, &vh),
                     CUMEM_ERROR_INVALID_ARGUMENT, "descriptor");
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_from_pid(junk, sizeof junk, 1, nullptr, 1, &vh),
                     CUMEM_ERROR_INVALID_ARGUMENT, "remote_fds");
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_from_pid(junk, sizeof junk, 1, &fd, 1, &vh),
                     CUMEM_ERROR_INVALID_ARGUMENT, "CUMEMVMM");
  EXPECT_EQ(vh, nullptr);
  cumem_resource_release(out);
  cumem_resource_release(host);
}

// CUDA graphs (capi/graph.cpp, cumem_stream_get_capture_info).
TEST(NullArguments, CudaGraphs) {
  void* p = nullptr;
  cumem_graph_t* graph = nullptr;
  cumem_resource_t* res = nullptr;
  cumem_capture_info_t ci = CUMEM_CAPTURE_INFO_INIT;
  cumem_graph_memory_attributes_t ga = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
  uint64_t id = 0;
  expect_all({
      {"cumem_stream_get_capture_info", "info",
       [&] { return cumem_stream_get_capture_info(nullptr, nullptr); }},
      {"cumem_stream_end_capture_graph", "stream",
       [&] { return cumem_stream_end_capture_graph(nullptr, nullptr, &graph); }},
      {"cumem_graph_instantiate", "device",
       [&] { return cumem_graph_instantiate(nullptr, &p, nullptr, &graph); }},
      {"cumem_graph_retain", "graph", [&] { return cumem_graph_retain(nullptr); }},
      {"cumem_graph_launch", "graph", [&] { return cumem_graph_launch(nullptr, nullptr); }},
      {"cumem_graph_upload", "graph", [&] { return cumem_graph_upload(nullptr, nullptr); }},
      {"cumem_graph_native", "graph", [&] { return cumem_graph_native(nullptr, &p); }},
      {"cumem_graph_capture_id", "graph", [&] { return cumem_graph_capture_id(nullptr, &id); }},
      {"cumem_graph_memory_resource_create", "device",
       [&] { return cumem_graph_memory_resource_create(nullptr, &res); }},
      {"cumem_graph_memory_resource_get_attributes", "resource",
       [&] { return cumem_graph_memory_resource_get_attributes(nullptr, &ga); }},
      {"cumem_graph_memory_resource_trim", "resource",
       [&] { return cumem_graph_memory_resource_trim(nullptr); }},
      {"cumem_graph_memory_resource_reset_highs", "resource",
       [&] { return cumem_graph_memory_resource_reset_highs(nullptr); }},
  });
  EXPECT_EQ(cumem_graph_release(nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(res, nullptr);

  // NULL out pointers with a live host object; then a host resource is not
  // a graph memory resource (CUMEM_ERROR_NOT_SUPPORTED, nothing written).
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  expect_all({
      {"cumem_graph_memory_resource_get_attributes", "attributes",
       [&] { return cumem_graph_memory_resource_get_attributes(host, nullptr); }},
  });
  ga.reserved_mem_current = 7;
  CUMEM_EXPECT_ERROR(cumem_graph_memory_resource_get_attributes(host, &ga),
                     CUMEM_ERROR_NOT_SUPPORTED, "is not a graph memory resource");
  EXPECT_EQ(ga.reserved_mem_current, 7u);
  CUMEM_EXPECT_ERROR(cumem_graph_memory_resource_trim(host), CUMEM_ERROR_NOT_SUPPORTED,
                     "is not a graph memory resource");
  CUMEM_EXPECT_ERROR(cumem_graph_memory_resource_reset_highs(host), CUMEM_ERROR_NOT_SUPPORTED,
                     "is not a graph memory resource");
  // A resource handle is not a graph handle.
  CUMEM_EXPECT_ERROR(cumem_graph_launch(reinterpret_cast<cumem_graph_t*>(host), nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "is a cumem_resource_t, not a cumem_graph_t");
  // NULL is the legacy default stream, which never captures: no driver call.
  ci.id = 9;
  CUMEM_ASSERT_OK(cumem_stream_get_capture_info(nullptr, &ci));
  EXPECT_EQ(ci.status, CUMEM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(ci.id, 0u);
  // The out struct's rules: an older caller's smaller struct gets only the
  // fields it covers; a cut inside a field is refused, writing nothing.
  ci.struct_size = 8;
  ci.id = 9;
  CUMEM_ASSERT_OK(cumem_stream_get_capture_info(nullptr, &ci));
  EXPECT_EQ(ci.struct_size, 8u);
  EXPECT_EQ(ci.id, 9u);
  ci.struct_size = 12;
  CUMEM_EXPECT_ERROR(cumem_stream_get_capture_info(nullptr, &ci), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'id'");
  cumem_resource_release(host);
}

}  // namespace

// Seeing the memory (cumem_memory_history_*, cumem_snapshot_*, statistics
// as JSON, the summary). A NULL resource is allowed where it means every
// live resource (cumem_snapshot_take, cumem_resource_statistics_json).
namespace {

TEST(NullArguments, SeeingTheMemory) {
  cumem_snapshot_t* snap = nullptr;
  cumem_snapshot_totals_t t = CUMEM_SNAPSHOT_TOTALS_INIT;
  cumem_snapshot_resource_t r = CUMEM_SNAPSHOT_RESOURCE_INIT;
  cumem_snapshot_segment_t seg = CUMEM_SNAPSHOT_SEGMENT_INIT;
  cumem_snapshot_block_t b = CUMEM_SNAPSHOT_BLOCK_INIT;
  cumem_memory_event_t e = CUMEM_MEMORY_EVENT_INIT;
  cumem_stack_frame_t f = CUMEM_STACK_FRAME_INIT;
  const char* json = nullptr;
  size_t n = 0;
  expect_all({
      {"cumem_snapshot_take", "out_snapshot", [&] { return cumem_snapshot_take(nullptr, nullptr); }},
      {"cumem_snapshot_retain", "snapshot", [&] { return cumem_snapshot_retain(nullptr); }},
      {"cumem_snapshot_get_totals", "snapshot", [&] { return cumem_snapshot_get_totals(nullptr, &t); }},
      {"cumem_snapshot_get_resource", "snapshot", [&] { return cumem_snapshot_get_resource(nullptr, 0, &r); }},
      {"cumem_snapshot_get_segment", "snapshot", [&] { return cumem_snapshot_get_segment(nullptr, 0, &seg); }},
      {"cumem_snapshot_get_block", "snapshot", [&] { return cumem_snapshot_get_block(nullptr, 0, &b); }},
      {"cumem_snapshot_get_event", "snapshot", [&] { return cumem_snapshot_get_event(nullptr, 0, &e); }},
      {"cumem_snapshot_get_frame", "snapshot", [&] { return cumem_snapshot_get_frame(nullptr, 1, 0, &f); }},
      {"cumem_snapshot_to_json", "snapshot", [&] { return cumem_snapshot_to_json(nullptr, &json, &n); }},
      {"cumem_snapshot_write_json", "snapshot", [&] { return cumem_snapshot_write_json(nullptr, "x"); }},
      {"cumem_resource_statistics_json", "out_length", [&] { return cumem_resource_statistics_json(nullptr, nullptr, 0, nullptr); }},
      {"cumem_memory_summary", "out_length", [&] { return cumem_memory_summary(nullptr, 0, nullptr); }},
      {"cumem_memory_summary", "buffer", [&] { return cumem_memory_summary(nullptr, 8, &n); }},
  });
  EXPECT_EQ(cumem_snapshot_release(nullptr), CUMEM_SUCCESS) << "release(NULL) is fine";
  cumem_memory_history_options_init(nullptr);  // does nothing

  // NULL out-pointers and out structs next to a live snapshot.
  CUMEM_ASSERT_OK(cumem_snapshot_take(nullptr, &snap));
  expect_all({
      {"cumem_snapshot_get_totals", "totals", [&] { return cumem_snapshot_get_totals(snap, nullptr); }},
      {"cumem_snapshot_get_resource", "resource", [&] { return cumem_snapshot_get_resource(snap, 0, nullptr); }},
      {"cumem_snapshot_get_segment", "segment", [&] { return cumem_snapshot_get_segment(snap, 0, nullptr); }},
      {"cumem_snapshot_get_block", "block", [&] { return cumem_snapshot_get_block(snap, 0, nullptr); }},
      {"cumem_snapshot_get_event", "event", [&] { return cumem_snapshot_get_event(snap, 0, nullptr); }},
      {"cumem_snapshot_get_frame", "frame", [&] { return cumem_snapshot_get_frame(snap, 1, 0, nullptr); }},
      {"cumem_snapshot_to_json", "out_json", [&] { return cumem_snapshot_to_json(snap, nullptr, &n); }},
      {"cumem_snapshot_to_json", "out_length", [&] { return cumem_snapshot_to_json(snap, &json, nullptr); }},
      {"cumem_snapshot_write_json", "path", [&] { return cumem_snapshot_write_json(snap, nullptr); }},
  });
  // An out struct's rules: a zero-filled one is refused, writing nothing.
  cumem_snapshot_totals_t zero{};
  CUMEM_EXPECT_ERROR(cumem_snapshot_get_totals(snap, &zero), CUMEM_ERROR_INVALID_ARGUMENT,
                     "zero-filled");
  EXPECT_EQ(zero.segment_count, 0u);
  // An older caller's smaller struct gets only the fields it covers.
  t.struct_size = 16;
  t.block_count = 12345;
  CUMEM_ASSERT_OK(cumem_snapshot_get_totals(snap, &t));
  EXPECT_EQ(t.struct_size, 16u);
  EXPECT_EQ(t.block_count, 12345u);
  CUMEM_ASSERT_OK(cumem_snapshot_release(snap));
  CUMEM_EXPECT_ERROR(cumem_snapshot_release(snap), CUMEM_ERROR_INVALID_ARGUMENT, "snapshot");
}

}  // namespace

// The framework configuration (cumem_framework_configure): NULL is refused
// by name, and a text that does not parse changes nothing; parsing needs
// no driver.
TEST(NullArguments, FrameworkConfigure) {
  expect_all({
      {"cumem_framework_configure", "configuration",
       [&] { return cumem_framework_configure(nullptr); }},
  });
  CUMEM_EXPECT_ERROR(cumem_framework_configure("kind:pool"), CUMEM_ERROR_INVALID_ARGUMENT,
                     "kind:pool is not a kind (device or caching)");
  CUMEM_EXPECT_ERROR(cumem_framework_configure("colour:blue"), CUMEM_ERROR_INVALID_ARGUMENT,
                     "unknown key 'colour'");
  EXPECT_EQ(cumem_framework_configure(""), CUMEM_SUCCESS) << cumem_last_error_message();
}

// Communication engines: the dma-buf export and the unmap subscriptions
// refuse NULL by name, before any driver is needed.
TEST(NullArguments, CommunicationEngines) {
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  uint64_t id = 0;
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 64, nullptr, &b));
  expect_all({
      {"cumem_buffer_get_dmabuf", "buffer", [&] { return cumem_buffer_get_dmabuf(nullptr, 0, &d); }},
      {"cumem_buffer_get_dmabuf", "dmabuf", [&] { return cumem_buffer_get_dmabuf(b, 0, nullptr); }},
      {"cumem_unmap_subscribe", "callback",
       [&] { return cumem_unmap_subscribe(nullptr, nullptr, &id); }},
      {"cumem_unmap_subscribe", "out_subscription",
       [&] {
         return cumem_unmap_subscribe([](const cumem_unmap_event_t*, void*) {}, nullptr, nullptr);
       }},
  });
  // Host memory needs no driver to be refused, by name.
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "pageable host memory");
  CUMEM_EXPECT_ERROR(cumem_unmap_unsubscribe(99), CUMEM_ERROR_NOT_FOUND, "no unmap subscription 99");
  cumem_buffer_release(b);
  cumem_resource_release(host);
}
