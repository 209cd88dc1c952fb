// cumem_*_resource_create and cumem_resource_* entry points.
#include "capi.hpp"

#include "../src/nvtx.hpp"
#include "../src/buffer.hpp"
#include "../src/resources/caching_resource.hpp"
#include "../src/resources/callback_resource.hpp"
#include "../src/resources/failure_callback_resource.hpp"
#include "../src/resources/tracking_resource.hpp"
#include "../src/resources/peer_access.hpp"
#include "../src/resources/pool_resource.hpp"
#include "../src/resources/resource.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {
const cumem_host_resource_options_t default_host_options = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
const cumem_pool_options_t default_pool_options = CUMEM_POOL_OPTIONS_INIT;
const cumem_managed_resource_options_t default_managed_options =
    CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
const cumem_resource_callbacks_t default_callbacks = CUMEM_RESOURCE_CALLBACKS_INIT;

// The C options, where 0 is every default, as the core's pool options.
// `numa_node_allowed`: the pinned kind takes a host NUMA node, the device
// kind does not.
PoolOptions pool_options(const cumem_pool_options_t* options, bool numa_node_allowed) {
  const auto o = read_options(options, default_pool_options, "options");
  PoolOptions p;
  p.use_default_pool = o.new_pool == 0;
  if (o.release_all_unused != 0 && o.release_threshold != 0)
    fail(Status::invalid_argument,
         "options->release_all_unused is set and options->release_threshold is " +
             std::to_string(o.release_threshold) +
             ": choose one (release_all_unused keeps nothing reserved)");
  if (o.release_all_unused != 0)
    p.release_threshold = 0;  // the driver returns every unused byte at each synchronisation
  else
    p.release_threshold = o.release_threshold == 0 ? UINT64_MAX : o.release_threshold;
  p.max_size = o.max_size;
  p.ipc_enabled = o.ipc_enabled != 0;
  if (o.use_host_numa_id != 0) {
    if (!numa_node_allowed)
      fail(Status::invalid_argument,
           "options->use_host_numa_id is set, but device memory has no host NUMA node (it "
           "applies to cumem_pinned_resource_create)");
    if (o.host_numa_id < 0)
      fail(Status::invalid_argument, "options->host_numa_id " + std::to_string(o.host_numa_id) +
                                         " is negative; a host NUMA node is >= 0");
    p.host_numa_id = o.host_numa_id;
  } else {
    if (o.host_numa_id != 0)
      fail(Status::invalid_argument,
           "options->host_numa_id is " + std::to_string(o.host_numa_id) +
               " but options->use_host_numa_id is false; set use_host_numa_id to pick that "
               "node, or leave host_numa_id 0 for any node");
    p.host_numa_id = -1;  // any node
  }
  return p;
}
// The pool behind a resource, or not_supported naming what needed one.
PoolResource& pool_of(const cumem_resource_t* resource, const char* operation) {
  auto* pool = dynamic_cast<PoolResource*>(const_cast<Resource*>(&object(resource, "resource")));
  if (!pool)
    fail(Status::not_supported,
         std::string(operation) + " needs a pool-backed resource (properties.is_pool); " +
             object(resource, "resource").describe() + " is not one");
  return *pool;
}
}  // namespace

CUMEM_EXPORT void cumem_host_resource_options_init(cumem_host_resource_options_t* o) {
  if (o) *o = default_host_options;
}
CUMEM_EXPORT void cumem_pool_options_init(cumem_pool_options_t* options) {
  if (options) *options = default_pool_options;
}
CUMEM_EXPORT void cumem_managed_resource_options_init(cumem_managed_resource_options_t* options) {
  if (options) *options = default_managed_options;
}

CUMEM_EXPORT cumem_status_t cumem_host_resource_create(const cumem_host_resource_options_t* options,
                                                       cumem_resource_t** out_resource) {
  CUMEM_TRY
  out(out_resource, "out_resource");
  const auto o = read_options(options, default_host_options, "options");
  check_reserved(o.reserved0, "options->reserved0");
  constexpr uint64_t default_alignment = 64;
  const uint64_t alignment = o.alignment == 0 ? default_alignment : o.alignment;
  if (alignment > SIZE_MAX)
    fail(Status::invalid_argument,
         "options->alignment " + std::to_string(alignment) + " does not fit in size_t");
  *out_resource =
      to_handle<cumem_resource_t>(create_host_resource(static_cast<size_t>(alignment)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_resource_create(const cumem_device_t* device,
                                                         const cumem_pool_options_t* options,
                                                         cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_device_resource(std::move(d), pool_options(options, false)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_pinned_resource_create(const cumem_device_t* device,
                                                         const cumem_pool_options_t* options,
                                                         cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_pinned_resource(std::move(d), pool_options(options, true)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_legacy_pinned_resource_create(const cumem_device_t* device,
                                                                cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_legacy_pinned_resource(std::move(d)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_legacy_device_resource_create(const cumem_device_t* device,
                                                                cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_legacy_device_resource(std::move(d)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_host_shared_resource_create(uint64_t capacity,
                                                              cumem_resource_t** out_resource) {
  CUMEM_TRY
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_host_shared_resource(capacity));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_managed_resource_create(
    const cumem_device_t* device, const cumem_managed_resource_options_t* options,
    cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_resource, "out_resource");
  const auto o = read_options(options, default_managed_options, "options");
  Location preferred{static_cast<LocationType>(o.preferred_location.type), o.preferred_location.id};
  *out_resource =
      to_handle<cumem_resource_t>(create_managed_resource(std::move(d), preferred, o.disable_pool == 0));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_limit_resource_create(cumem_resource_t* upstream,
                                                        uint64_t limit_bytes,
                                                        cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Resource> u = ref(upstream, "upstream");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_limit_resource(std::move(u), limit_bytes));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_aligned_resource_create(cumem_resource_t* upstream,
                                                          uint64_t alignment,
                                                          cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Resource> u = ref(upstream, "upstream");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_aligned_resource(std::move(u), alignment));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_caching_resource_create(cumem_resource_t* upstream,
                                                          cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Resource> u = ref(upstream, "upstream");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_caching_resource(std::move(u)));
  CUMEM_CATCH
}

namespace {
const cumem_caching_resource_options_t default_caching_options =
    CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
}  // namespace

CUMEM_EXPORT void cumem_caching_resource_options_init(cumem_caching_resource_options_t* options) {
  if (options) *options = default_caching_options;
}

CUMEM_EXPORT cumem_status_t cumem_caching_resource_create_with_options(
    cumem_resource_t* upstream, const cumem_caching_resource_options_t* options,
    cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Resource> u = ref(upstream, "upstream");
  out(out_resource, "out_resource");
  const auto o = read_options(options, default_caching_options, "options");
  CachingOptions c;
  c.expandable = o.expandable != 0;
  c.page_size = o.page_size;
  c.libcumem_captures_only = o.libcumem_captures_only != 0;
  c.handle_types = o.handle_types;
  if (!c.expandable && c.page_size != 0)
    fail(Status::invalid_argument, "options->page_size is " + std::to_string(c.page_size) +
                                       " but options->expandable is false; a page size applies "
                                       "to expandable segments only (leave it 0)");
  *out_resource = to_handle<cumem_resource_t>(create_caching_resource(std::move(u), c));
  CUMEM_CATCH
}

namespace {
Caching& caching_of(const cumem_resource_t* resource) {
  const Resource& r = object(resource, "resource");
  auto* c = dynamic_cast<Caching*>(const_cast<Resource*>(&r));
  if (!c) fail(Status::not_supported, r.describe() + " is not a caching adaptor");
  return *c;
}
}  // namespace

CUMEM_EXPORT cumem_status_t cumem_caching_resource_get_statistics(
    const cumem_resource_t* resource, cumem_caching_statistics_t* stats) {
  CUMEM_TRY
  object(resource, "resource");
  check_out_struct(stats, "stats");
  const CachingStatistics c = caching_of(resource).caching_statistics();
  cumem_caching_statistics_t v = CUMEM_CACHING_STATISTICS_INIT;
  copy_fields(v, c);
  write_out_struct(stats, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_caching_resource_release_cached(cumem_resource_t* resource) {
  CUMEM_TRY
  caching_of(resource).release_cached();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_caching_resource_trim(cumem_resource_t* resource,
                                                        uint64_t keep_bytes) {
  CUMEM_TRY
  caching_of(resource).trim(keep_bytes);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_caching_resource_release_capture_pool(cumem_resource_t* resource,
                                                                        uint64_t capture_id) {
  CUMEM_TRY
  caching_of(resource).release_capture_pool(capture_id);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_tracking_resource_create(cumem_resource_t* upstream,
                                                           cumem_bool_t capture_backtraces,
                                                           cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Resource> u = ref(upstream, "upstream");
  out(out_resource, "out_resource");
  *out_resource =
      to_handle<cumem_resource_t>(create_tracking_resource(std::move(u), capture_backtraces != 0));
  CUMEM_CATCH
}

namespace {
const Tracking& tracking_of(const cumem_resource_t* resource) {
  const Resource& r = object(resource, "resource");
  auto* t = dynamic_cast<const Tracking*>(&r);
  if (!t) fail(Status::not_supported, r.describe() + " is not a tracking adaptor");
  return *t;
}
}  // namespace

CUMEM_EXPORT cumem_status_t cumem_tracking_resource_report(const cumem_resource_t* resource,
                                                           char* buffer, size_t capacity,
                                                           size_t* out_length) {
  CUMEM_TRY
  const Tracking& t = tracking_of(resource);
  if (!buffer && capacity > 0) null_argument("buffer");
  out(out_length, "out_length");
  const std::string report = t.report();
  if (capacity > 0) {
    const size_t n = report.size() < capacity - 1 ? report.size() : capacity - 1;
    std::memcpy(buffer, report.data(), n);
    buffer[n] = '\0';
  }
  *out_length = report.size();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_tracking_resource_outstanding(const cumem_resource_t* resource,
                                                                uint64_t* out_count,
                                                                uint64_t* out_bytes) {
  CUMEM_TRY
  const Tracking& t = tracking_of(resource);
  out(out_count, "out_count");
  out(out_bytes, "out_bytes");
  uint64_t count = 0, bytes = 0;
  t.outstanding(count, bytes);
  *out_count = count;
  *out_bytes = bytes;
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_logging_resource_create(cumem_resource_t* upstream,
                                                          const char* path,
                                                          cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Resource> u = ref(upstream, "upstream");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_logging_resource(std::move(u), path));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_callback_resource_create(const cumem_device_t* device,
                                                           const cumem_resource_callbacks_t* callbacks,
                                                           cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = device ? ref(device, "device") : nullptr;
  if (!callbacks) null_argument("callbacks");
  out(out_resource, "out_resource");
  const auto c = read_options(callbacks, default_callbacks, "callbacks");
  check_reserved(c.reserved0, "callbacks->reserved0");
  if (c.memory_kind < CUMEM_MEMORY_HOST || c.memory_kind > CUMEM_MEMORY_MANAGED)
    fail(Status::invalid_argument, "callbacks->memory_kind " +
                                       std::to_string(static_cast<int>(c.memory_kind)) +
                                       " is not a cumem_memory_kind_t");
  const MemoryKind kind = static_cast<MemoryKind>(c.memory_kind);  // capi/enums.cpp
  Callbacks cb;
  cb.allocate = c.allocate;
  cb.deallocate = c.deallocate;
  cb.destroy = c.destroy;
  cb.user_data = c.user_data;
  ResourceProperties p;
  p.memory_kind = kind;
  // The kind's own accessibility, and more where the caller says so.
  p.device_accessible = kind != MemoryKind::host || c.device_accessible != 0;
  p.host_accessible = kind != MemoryKind::device || c.host_accessible != 0;
  p.stream_ordered = c.stream_ordered != 0;
  *out_resource = to_handle<cumem_resource_t>(create_callback_resource(std::move(d), cb, p));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_retain(cumem_resource_t* resource) {
  CUMEM_TRY
  retain_handle(resource, "resource");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_release(cumem_resource_t* resource) {
  CUMEM_TRY
  release_handle(resource, "resource");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_allocate(cumem_resource_t* resource, size_t size,
                                                    const cumem_stream_t* stream,
                                                    cumem_buffer_t** out_buffer) {
  const nvtx::Range range(nvtx::Op::resource_allocate);
  CUMEM_TRY
  Resource& r = object(resource, "resource");
  const Stream* s = optional(stream, "stream");
  out(out_buffer, "out_buffer");
  *out_buffer = to_new_handle<cumem_buffer_t>(Buffer::allocate(r, size, s));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_allocate_raw(cumem_resource_t* resource, size_t size,
                                                        const cumem_stream_t* stream,
                                                        void** out_ptr) {
  const nvtx::Range range(nvtx::Op::resource_allocate_raw);
  CUMEM_TRY
  Resource& r = object(resource, "resource");
  const Stream* s = optional(stream, "stream");
  out(out_ptr, "out_ptr");
  *out_ptr = r.allocate_raw(size, s);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_deallocate_raw(cumem_resource_t* resource, void* ptr,
                                                          size_t size,
                                                          const cumem_stream_t* stream) {
  const nvtx::Range range(nvtx::Op::resource_deallocate_raw);
  CUMEM_TRY
  Resource& r = object(resource, "resource");
  r.deallocate_raw(ptr, size, optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_get_properties(const cumem_resource_t* resource,
                                                          cumem_resource_properties_t* props) {
  CUMEM_TRY
  const Resource& r = object(resource, "resource");
  check_out_struct(props, "props");
  const ResourceProperties& p = r.properties();
  cumem_resource_properties_t v = CUMEM_RESOURCE_PROPERTIES_INIT;
  copy_fields(v, p);
  v.is_stream_ordered = to_bool(p.stream_ordered);
  write_out_struct(props, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_get_statistics(const cumem_resource_t* resource,
                                                          cumem_resource_statistics_t* stats) {
  CUMEM_TRY
  const Resource& r = object(resource, "resource");
  check_out_struct(stats, "stats");
  const ResourceStatistics s = r.statistics();
  cumem_resource_statistics_t v = CUMEM_RESOURCE_STATISTICS_INIT;
  copy_fields(v, s);
  write_out_struct(stats, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_reset_peak(cumem_resource_t* resource) {
  CUMEM_TRY
  object(resource, "resource").reset_peak();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_pool_get_attributes(const cumem_resource_t* resource,
                                                               cumem_pool_attributes_t* attributes) {
  CUMEM_TRY
  object(resource, "resource");
  check_out_struct(attributes, "attributes");
  const PoolResource& r = pool_of(resource, "reading pool attributes");
  const PoolAttributes a = r.pool_get_attributes();
  cumem_pool_attributes_t v = CUMEM_POOL_ATTRIBUTES_INIT;
  copy_fields(v, a);
  write_out_struct(attributes, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_pool_set_attributes(
    cumem_resource_t* resource, const cumem_pool_attributes_t* attributes) {
  CUMEM_TRY
  object(resource, "resource");
  if (!attributes) null_argument("attributes");
  // Checks struct_size as for options (and copies the fields it covers).
  const auto v = read_options(attributes, cumem_pool_attributes_t CUMEM_POOL_ATTRIBUTES_INIT,
                              "attributes");
  // The settable fields all lie in the first part of the struct.
  if (attributes->struct_size < offsetof(cumem_pool_attributes_t, reserved_mem_current))
    fail(Status::invalid_argument, "argument 'attributes' has struct_size " +
                                       std::to_string(attributes->struct_size) +
                                       ", too small to hold the settable fields");
  PoolAttributes a;
  a.reuse_follow_event_dependencies = v.reuse_follow_event_dependencies != 0;
  a.reuse_allow_opportunistic = v.reuse_allow_opportunistic != 0;
  a.reuse_allow_internal_dependencies = v.reuse_allow_internal_dependencies != 0;
  a.release_threshold = v.release_threshold;
  pool_of(resource, "setting pool attributes").pool_set_attributes(a);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_pool_reset_highs(cumem_resource_t* resource) {
  CUMEM_TRY
  pool_of(resource, "resetting pool high-water marks").pool_reset_highs();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_pool_trim(cumem_resource_t* resource,
                                                     uint64_t min_bytes_to_keep) {
  CUMEM_TRY
  pool_of(resource, "trimming a pool").pool_trim(min_bytes_to_keep);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_pool_set_access(cumem_resource_t* resource,
                                                           const cumem_device_t* peer,
                                                           cumem_bool_t read_write) {
  CUMEM_TRY
  object(resource, "resource");
  const Device& p = object(peer, "peer");
  pool_of(resource, "setting pool access").pool_set_access(p, read_write != 0);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_pool_get_access(const cumem_resource_t* resource,
                                                           const cumem_device_t* peer,
                                                           cumem_bool_t* out_read_write) {
  CUMEM_TRY
  object(resource, "resource");
  const Device& p = object(peer, "peer");
  out(out_read_write, "out_read_write");
  const PoolResource& r = pool_of(resource, "reading pool access");
  *out_read_write = to_bool(r.pool_get_access(p));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_set_peer_access(cumem_resource_t* resource,
                                                           const cumem_device_t* peer,
                                                           cumem_bool_t read_write) {
  CUMEM_TRY
  Resource& r = object(resource, "resource");
  const Device& p = object(peer, "peer");
  peer_accessible(r).set_peer_access(p, read_write != 0);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_get_peer_access(const cumem_resource_t* resource,
                                                           const cumem_device_t* peer,
                                                           cumem_bool_t* out_read_write) {
  CUMEM_TRY
  const Resource& r = object(resource, "resource");
  const Device& p = object(peer, "peer");
  out(out_read_write, "out_read_write");
  *out_read_write = to_bool(peer_accessible(r).peer_access(p));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_pool_native(const cumem_resource_t* resource,
                                                       void** out_pool) {
  CUMEM_TRY
  object(resource, "resource");
  out(out_pool, "out_pool");
  const PoolResource& r = pool_of(resource, "reading the native pool handle");
  *out_pool = static_cast<void*>(r.pool_native());
  CUMEM_CATCH
}

// The failure-callback adaptor: the C callback and its user data, in the
// core's terms (the destroy function runs with the adaptor's end).
namespace {
const cumem_failure_callback_t default_failure_callback = CUMEM_FAILURE_CALLBACK_INIT;
}  // namespace

CUMEM_EXPORT void cumem_failure_callback_init(cumem_failure_callback_t* callback) {
  if (callback) *callback = default_failure_callback;
}

CUMEM_EXPORT cumem_status_t cumem_failure_callback_resource_create(
    cumem_resource_t* upstream, const cumem_failure_callback_t* callback,
    cumem_resource_t** out_resource) {
  CUMEM_TRY
  Resource& up = object(upstream, "upstream");
  if (!callback) null_argument("callback");
  out(out_resource, "out_resource");
  const cumem_failure_callback_t c =
      read_options(callback, default_failure_callback, "callback");
  if (!c.callback) null_argument("callback->callback");
  if (c.max_retries > CUMEM_FAILURE_CALLBACK_MAX_RETRIES)
    fail(Status::invalid_argument,
         "callback->max_retries " + std::to_string(c.max_retries) + " is above " +
             std::to_string(CUMEM_FAILURE_CALLBACK_MAX_RETRIES) +
             " (CUMEM_FAILURE_CALLBACK_MAX_RETRIES); 0 means the default, " +
             std::to_string(CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES));
  FailureCallback f;
  f.max_retries = c.max_retries == 0 ? CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES : c.max_retries;
  const cumem_failure_callback_fn fn = c.callback;
  void* const user_data = c.user_data;
  f.callback = [fn, user_data](const FailureInfo& info) {
    cumem_resource_statistics_t stats = CUMEM_RESOURCE_STATISTICS_INIT;
    stats.bytes_in_use = info.statistics.bytes_in_use;
    stats.peak_bytes_in_use = info.statistics.peak_bytes_in_use;
    stats.live_allocations = info.statistics.live_allocations;
    stats.total_allocations = info.statistics.total_allocations;
    cumem_failure_info_t i = CUMEM_FAILURE_INFO_INIT;
    i.attempt = info.attempt;
    i.size = info.size;
    i.stream = info.stream ? static_cast<void*>(info.stream->native()) : nullptr;
    i.statistics = &stats;
    i.message = info.message;
    return fn(&i, user_data) == CUMEM_FAILURE_RETRY ? FailureAction::retry : FailureAction::fail;
  };
  if (c.destroy) {
    const cumem_destroy_fn destroy = c.destroy;
    f.on_destroy = [destroy, user_data] { destroy(user_data); };
  }
  *out_resource = to_handle<cumem_resource_t>(
      create_failure_callback_resource(Ref<Resource>::share(&up), std::move(f)));
  CUMEM_CATCH
}
