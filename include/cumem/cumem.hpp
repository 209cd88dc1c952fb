// libcumem C++ facade: inline, header-only, over <cumem/cumem.h> alone.
//
// Every handle type of the C API has a move-only owner one pointer wide
// (Device, Stream, Event, Resource, Buffer, AllocationHandle, Program,
// Library, Kernel): get(), release(), explicit operator bool, share() for an
// explicit extra reference, adopt(raw) to take ownership of a raw handle and
// retain(raw) to add one.
// Failing C calls throw cumem::Error (a std::system_error) carrying the status
// and the library's message.
//
// Methods are const: an owner's constness is about which handle it holds, not
// about the object behind it (as for const std::shared_ptr<T>). Optional
// stream arguments are a StreamRef: a Stream, a const Stream*, or nothing
// (nullptr, {}) for the legacy default stream of the device concerned.
#ifndef CUMEM_CUMEM_HPP
#define CUMEM_CUMEM_HPP

#include <cumem/cumem.h>
#include <cumem/dlpack.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

namespace cumem {

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

// The std::error_category of cumem_status_t values; messages are the names.
class ErrorCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "cumem"; }
  std::string message(int value) const override {
    return cumem_status_string(static_cast<cumem_status_t>(value));
  }
};

inline const std::error_category& error_category() noexcept {
  static const ErrorCategory category;
  return category;
}

inline std::error_code make_error_code(cumem_status_t status) noexcept {
  return std::error_code(static_cast<int>(status), error_category());
}

// A failed libcumem call: what() holds the library's message for it.
class Error : public std::system_error {
 public:
  Error(cumem_status_t status, const std::string& message)
      : std::system_error(make_error_code(status), message), status_(status) {}
  cumem_status_t status() const noexcept { return status_; }

 private:
  cumem_status_t status_;
};

// The Error for `status`, with this thread's last message (read at once:
// any later libcumem call may overwrite it).
inline Error last_error(cumem_status_t status) {
  return Error(status, cumem_last_error_message());
}

// Throws cumem::Error unless `status` is CUMEM_SUCCESS.
inline void check(cumem_status_t status) {
  if (status != CUMEM_SUCCESS) throw last_error(status);
}

inline uint32_t version() noexcept { return cumem_version(); }
inline const char* status_string(cumem_status_t status) noexcept {
  return cumem_status_string(status);
}
inline std::string last_error_message() { return cumem_last_error_message(); }
// The CUDA driver version, e.g. 13000 for 13.0.
// The log (cumem.h, "Logging"): the callback follows the C contract (it
// must not throw; see cumem_log_callback_t).
inline void set_log_callback(cumem_log_callback_t callback, void* user_data = nullptr) {
  check(cumem_set_log_callback(callback, user_data));
}
inline void set_log_level(cumem_log_level_t level) { check(cumem_set_log_level(level)); }
inline cumem_log_level_t log_level() {
  cumem_log_level_t level = CUMEM_LOG_LEVEL_WARNING;
  check(cumem_get_log_level(&level));
  return level;
}

inline int32_t driver_version() {
  int32_t v = 0;
  check(cumem_driver_version(&v));
  return v;
}

// Defaults of the C option structs, for editing in C++ code. The _INIT
// macros are used only here, where their C casts are kept from
// -Wold-style-cast in users' builds.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#endif
inline cumem_stream_options_t stream_options() noexcept { return CUMEM_STREAM_OPTIONS_INIT; }
inline cumem_event_options_t event_options() noexcept { return CUMEM_EVENT_OPTIONS_INIT; }
inline cumem_host_resource_options_t host_resource_options() noexcept {
  return CUMEM_HOST_RESOURCE_OPTIONS_INIT;
}
inline cumem_pool_options_t pool_options() noexcept { return CUMEM_POOL_OPTIONS_INIT; }
inline cumem_managed_resource_options_t managed_resource_options() noexcept {
  return CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
}
inline cumem_program_options_t program_options() noexcept { return CUMEM_PROGRAM_OPTIONS_INIT; }
inline cumem_resource_callbacks_t resource_callbacks() noexcept { return CUMEM_RESOURCE_CALLBACKS_INIT; }
inline cumem_launch_config_t launch_config() noexcept { return CUMEM_LAUNCH_CONFIG_INIT; }
inline cumem_dlpack_options_t dlpack_options() noexcept { return CUMEM_DLPACK_OPTIONS_INIT; }
inline cumem_virtual_resource_options_t virtual_resource_options() noexcept {
  return CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
}
inline cumem_caching_resource_options_t caching_resource_options() noexcept {
  return CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
}

namespace detail {
// The out structs, as their _INIT macros fill them.
template <class T>
T init() noexcept;
template <>
inline cumem_device_properties_t init() noexcept { return CUMEM_DEVICE_PROPERTIES_INIT; }
template <>
inline cumem_resource_properties_t init() noexcept { return CUMEM_RESOURCE_PROPERTIES_INIT; }
template <>
inline cumem_resource_statistics_t init() noexcept { return CUMEM_RESOURCE_STATISTICS_INIT; }
template <>
inline cumem_caching_statistics_t init() noexcept { return CUMEM_CACHING_STATISTICS_INIT; }
template <>
inline cumem_pool_attributes_t init() noexcept { return CUMEM_POOL_ATTRIBUTES_INIT; }
template <>
inline cumem_buffer_info_t init() noexcept { return CUMEM_BUFFER_INFO_INIT; }
template <>
inline cumem_kernel_attributes_t init() noexcept { return CUMEM_KERNEL_ATTRIBUTES_INIT; }
template <>
inline cumem_virtual_statistics_t init() noexcept { return CUMEM_VIRTUAL_STATISTICS_INIT; }
}  // namespace detail
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

// Memory locations (for managed resources, prefetch and advise).
namespace location {
inline cumem_location_t none() noexcept { return {CUMEM_LOCATION_NONE, 0}; }
inline cumem_location_t device(int32_t ordinal) noexcept { return {CUMEM_LOCATION_DEVICE, ordinal}; }
inline cumem_location_t host() noexcept { return {CUMEM_LOCATION_HOST, 0}; }
inline cumem_location_t host_numa(int32_t node) noexcept { return {CUMEM_LOCATION_HOST_NUMA, node}; }
inline cumem_location_t host_numa_current() noexcept {
  return {CUMEM_LOCATION_HOST_NUMA_CURRENT, 0};
}
}  // namespace location

// IPC descriptors (of a pool or a buffer) and interprocess event handles:
// plain bytes, safe to copy and to send over any channel.
using IpcDescriptor = cumem_ipc_descriptor_t;
using IpcEventHandle = cumem_ipc_event_handle_t;

// ---------------------------------------------------------------------------
// The owner template
// ---------------------------------------------------------------------------

namespace detail {

// Move-only owner of one reference to a C handle. Derived is the facade type.
template <class Derived, class T, cumem_status_t (*Retain)(T*), cumem_status_t (*Release)(T*)>
class Handle {
 public:
  using native_handle_type = T*;

  Handle() noexcept = default;
  // Takes ownership of one reference to `raw` (which may be NULL).
  explicit Handle(T* raw) noexcept : handle_(raw) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) reset(std::exchange(other.handle_, nullptr));
    return *this;
  }
  ~Handle() { (void)Release(handle_); }

  // Takes ownership of one reference to `raw`.
  static Derived adopt(T* raw) noexcept { return Derived(raw); }
  // Adds a reference to `raw` (owned by someone else) and owns that one.
  static Derived retain(T* raw) {
    if (raw) check(Retain(raw));
    return Derived(raw);
  }

  T* get() const noexcept { return handle_; }
  // Gives up ownership: the caller must cumem_X_release the result.
  T* release() noexcept { return std::exchange(handle_, nullptr); }
  // Releases the handle held and owns `raw` instead.
  void reset(T* raw = nullptr) noexcept { (void)Release(std::exchange(handle_, raw)); }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  // A second owner of the same object (an empty owner for an empty one).
  Derived share() const { return retain(handle_); }

 private:
  T* handle_ = nullptr;
};

// Keeps a template parameter out of deduction.
template <class T>
struct identity {
  using type = T;
};

// Calls a C function with one out-parameter and returns the result.
template <class Out, class Fn, class... In>
Out out(Fn fn, In... in) {
  Out result{};
  check(fn(in..., &result));
  return result;
}

}  // namespace detail

class Buffer;
class VirtualIpcHandle;
class Resource;
class StreamRef;

// ---------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------

struct MemoryInfo {
  uint64_t free = 0;   // bytes
  uint64_t total = 0;  // bytes
};

struct PriorityRange {
  int32_t least = 0;     // lowest priority, numerically greatest
  int32_t greatest = 0;  // highest priority, numerically lowest
};

class Device : public detail::Handle<Device, cumem_device_t, cumem_device_retain,
                                     cumem_device_release> {
 public:
  using Handle::Handle;
  using Handle::get;  // not hidden by the static get(ordinal)

  // Number of CUDA devices (0 when the driver sees none).
  static int32_t count() { return detail::out<int32_t>(cumem_device_count); }
  // The device of `ordinal` (the same object on every call).
  static Device get(int32_t ordinal) {
    return Device(detail::out<cumem_device_t*>(cumem_device_get, ordinal));
  }

  int32_t ordinal() const {
    return detail::out<int32_t>(cumem_device_ordinal, get());
  }
  cumem_device_properties_t properties() const {
    cumem_device_properties_t p = detail::init<cumem_device_properties_t>();
    check(cumem_device_get_properties(get(), &p));
    return p;
  }
  std::string name() const { return properties().name; }
  // Any CUdevice_attribute by its numeric value.
  int32_t attribute(int32_t attribute) const {
    return detail::out<int32_t>(cumem_device_get_attribute, get(), attribute);
  }
  void set_current() const { check(cumem_device_set_current(get())); }
  void synchronize() const { check(cumem_device_synchronize(get())); }
  MemoryInfo memory_info() const {
    MemoryInfo m;
    check(cumem_device_memory_info(get(), &m.free, &m.total));
    return m;
  }
  bool can_access_peer(const Device& peer) const {
    cumem_bool_t b = CUMEM_FALSE;
    check(cumem_device_can_access_peer(get(), peer.get(), &b));
    return b != CUMEM_FALSE;
  }
  void enable_peer_access(const Device& peer) const {
    check(cumem_device_enable_peer_access(get(), peer.get()));
  }
  PriorityRange stream_priority_range() const {
    PriorityRange r;
    check(cumem_device_stream_priority_range(get(), &r.least, &r.greatest));
    return r;
  }

  // The device's memory resource (cuda.core's Device.memory_resource): what
  // libcumem uses for the device unless told otherwise; the default pool's
  // device resource until set. Defined after Resource and Buffer.
  Resource memory_resource() const;
  void set_memory_resource(const Resource& resource) const;
  // Back to the default resource (the same object as before).
  void reset_memory_resource() const;
  // `size` bytes from the device's memory resource (cuda.core's Device.allocate).
  Buffer allocate(size_t size) const;
  Buffer allocate(size_t size, StreamRef stream) const;
};

// ---------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------

class Event;
class Graph;

class Stream : public detail::Handle<Stream, cumem_stream_t, cumem_stream_retain,
                                     cumem_stream_release> {
 public:
  using Handle::Handle;

  // A new stream owned by the handle; defaults: non-blocking, priority 0.
  static Stream create(const Device& device) { return create_impl(device, nullptr); }
  static Stream create(const Device& device, const cumem_stream_options_t& options) {
    return create_impl(device, &options);
  }
  // Wraps a CUstream made elsewhere; it stays the caller's to destroy.
  static Stream wrap(const Device& device, void* native_stream) {
    cumem_stream_t* s = nullptr;
    check(cumem_stream_wrap(device.get(), native_stream, &s));
    return Stream(s);
  }
  static Stream legacy_default(const Device& device) {
    return Stream(detail::out<cumem_stream_t*>(cumem_stream_legacy_default, device.get()));
  }
  static Stream per_thread_default(const Device& device) {
    return Stream(detail::out<cumem_stream_t*>(cumem_stream_per_thread_default, device.get()));
  }

  // The CUstream, valid while this stream lives.
  void* native() const { return detail::out<void*>(cumem_stream_native, get()); }
  Device device() const { return Device(detail::out<cumem_device_t*>(cumem_stream_device, get())); }
  int32_t priority() const { return detail::out<int32_t>(cumem_stream_priority, get()); }
  void synchronize() const { check(cumem_stream_synchronize(get())); }
  // Whether all queued work has finished (never blocks).
  bool query() const { return detail::out<cumem_bool_t>(cumem_stream_query, get()) != CUMEM_FALSE; }
  // Captures the work queued from now into a CUDA graph (seen by caching
  // adaptors); end_capture returns the CUgraph, which the caller destroys.
  void begin_capture(cumem_capture_mode_t mode = CUMEM_CAPTURE_MODE_THREAD_LOCAL) const {
    check(cumem_stream_begin_capture(get(), mode));
  }
  void* end_capture() const { return detail::out<void*>(cumem_stream_end_capture, get()); }
  // CUDA graphs (defined below with Graph): whether the stream captures now,
  // whoever began it, and the capture's id; ending a capture into a Graph.
  cumem_capture_info_t capture_info() const;
  Graph end_capture_graph() const;
  Graph end_capture_graph(const cumem_graph_options_t& options) const;
  // Later work on this stream waits for the last record of `event`.
  void wait(const Event& event) const;
  // Later work on this stream waits for the work queued on `other` so far.
  void wait(const Stream& other) const { check(cumem_stream_wait_stream(get(), other.get())); }

 private:
  static Stream create_impl(const Device& device, const cumem_stream_options_t* options) {
    cumem_stream_t* s = nullptr;
    check(cumem_stream_create(device.get(), options, &s));
    return Stream(s);
  }
};

// A non-owning, optional stream argument: NULL means the legacy default
// stream of the device concerned.
class StreamRef {
 public:
  constexpr StreamRef() noexcept = default;
  constexpr StreamRef(std::nullptr_t) noexcept {}
  StreamRef(const Stream& stream) noexcept : stream_(stream.get()) {}
  StreamRef(const Stream* stream) noexcept : stream_(stream ? stream->get() : nullptr) {}
  explicit StreamRef(const cumem_stream_t* raw) noexcept : stream_(raw) {}
  const cumem_stream_t* get() const noexcept { return stream_; }

 private:
  const cumem_stream_t* stream_ = nullptr;
};

class Event : public detail::Handle<Event, cumem_event_t, cumem_event_retain,
                                    cumem_event_release> {
 public:
  using Handle::Handle;

  // Default options: no timing, spinning synchronisation.
  static Event create(const Device& device) { return create_impl(device, nullptr); }
  static Event create(const Device& device, const cumem_event_options_t& options) {
    return create_impl(device, &options);
  }
  // An event with timing enabled, for elapsed_ms.
  static Event create_timed(const Device& device) {
    cumem_event_options_t o = event_options();
    o.enable_timing = CUMEM_TRUE;
    return create_impl(device, &o);
  }
  // An event other processes can open (options.interprocess; no timing).
  static Event create_interprocess(const Device& device) {
    cumem_event_options_t o = event_options();
    o.interprocess = CUMEM_TRUE;
    return create_impl(device, &o);
  }
  // Opens another process's interprocess event on `device`.
  static Event from_ipc_handle(const Device& device, const IpcEventHandle& handle) {
    cumem_event_t* e = nullptr;
    check(cumem_event_from_ipc_handle(device.get(), &handle, &e));
    return Event(e);
  }

  void record(StreamRef stream = {}) const { check(cumem_event_record(get(), stream.get())); }
  void synchronize() const { check(cumem_event_synchronize(get())); }
  bool query() const {
    return detail::out<cumem_bool_t>(cumem_event_query, get()) !=
           CUMEM_FALSE;
  }
  // Milliseconds between two recorded, completed timing events.
  static float elapsed_ms(const Event& start, const Event& end) {
    float ms = 0.0f;
    check(cumem_event_elapsed_ms(start.get(), end.get(), &ms));
    return ms;
  }
  void* native() const {
    return detail::out<void*>(cumem_event_native, get());
  }
  // The handle to send to another process; throws CUMEM_ERROR_INVALID_STATE
  // unless the event was created interprocess.
  IpcEventHandle get_ipc_handle() const {
    return detail::out<IpcEventHandle>(cumem_event_get_ipc_handle, get());
  }

 private:
  static Event create_impl(const Device& device, const cumem_event_options_t* options) {
    cumem_event_t* e = nullptr;
    check(cumem_event_create(device.get(), options, &e));
    return Event(e);
  }
};

inline void Stream::wait(const Event& event) const {
  check(cumem_stream_wait_event(get(), event.get()));
}

// ---------------------------------------------------------------------------
// Allocation handles (IPC)
// ---------------------------------------------------------------------------

// An exported pool: a file descriptor (owned by the handle) and the pool's
// descriptor. Made by Resource::get_allocation_handle(), received by
// ipc_receive(), or rebuilt with from_fd() / from_pid().
class AllocationHandle
    : public detail::Handle<AllocationHandle, cumem_allocation_handle_t,
                            cumem_allocation_handle_retain, cumem_allocation_handle_release> {
 public:
  using Handle::Handle;

  // Rebuilds a handle from a pool descriptor and a file descriptor received
  // with it. On success the handle owns `fd`; when this throws, the caller
  // still does.
  static AllocationHandle from_fd(const IpcDescriptor& pool_descriptor, int32_t fd) {
    cumem_allocation_handle_t* h = nullptr;
    check(cumem_allocation_handle_from_fd(&pool_descriptor, fd, &h));
    return AllocationHandle(h);
  }
  // Rebuilds a handle from a pool descriptor and the number `remote_fd` of
  // the file descriptor in process `pid` (pidfd_getfd: Linux 5.6+, needs
  // permission to ptrace `pid`).
  static AllocationHandle from_pid(const IpcDescriptor& pool_descriptor, int32_t pid,
                                   int32_t remote_fd) {
    cumem_allocation_handle_t* h = nullptr;
    check(cumem_allocation_handle_from_pid(&pool_descriptor, pid, remote_fd, &h));
    return AllocationHandle(h);
  }

  // The file descriptor, borrowed: valid while this handle lives; do not close it.
  int32_t fd() const { return detail::out<int32_t>(cumem_allocation_handle_fd, get()); }
  // A duplicate of the file descriptor (close-on-exec), which the caller closes.
  int32_t dup_fd() const { return detail::out<int32_t>(cumem_allocation_handle_dup_fd, get()); }
  // The pool's descriptor, to send along with the file descriptor.
  IpcDescriptor descriptor() const {
    return detail::out<IpcDescriptor>(cumem_allocation_handle_descriptor, get());
  }
};

// ---------------------------------------------------------------------------
// Memory resources
// ---------------------------------------------------------------------------

class Resource : public detail::Handle<Resource, cumem_resource_t, cumem_resource_retain,
                                       cumem_resource_release> {
 public:
  using Handle::Handle;

  // Pageable host memory; works without a driver. Default alignment 64.
  static Resource host() { return host_impl(nullptr); }
  static Resource host(const cumem_host_resource_options_t& options) { return host_impl(&options); }
  // Stream-ordered device memory; default: the device's default pool.
  static Resource device(const Device& device) {
    return make(cumem_device_resource_create, device, nullptr);
  }
  static Resource device(const Device& device, const cumem_pool_options_t& options) {
    return make(cumem_device_resource_create, device, &options);
  }
  // Stream-ordered pinned host memory from a host-located pool.
  static Resource pinned(const Device& device) {
    return make(cumem_pinned_resource_create, device, nullptr);
  }
  static Resource pinned(const Device& device, const cumem_pool_options_t& options) {
    return make(cumem_pinned_resource_create, device, &options);
  }
  // The limit adaptor: at most limit_bytes in use at once through it.
  static Resource limit(const Resource& upstream, uint64_t limit_bytes) {
    cumem_resource_t* r = nullptr;
    check(cumem_limit_resource_create(upstream.get(), limit_bytes, &r));
    return Resource(r);
  }
  // The aligned adaptor: every allocation starts at a multiple of
  // `alignment` (a power of two up to 1 GiB).
  static Resource aligned(const Resource& upstream, uint64_t alignment) {
    cumem_resource_t* r = nullptr;
    check(cumem_aligned_resource_create(upstream.get(), alignment, &r));
    return Resource(r);
  }
  // The caching adaptor: freed blocks are handed out again without asking
  // `upstream` (see cumem_caching_resource_create).
  static Resource caching(const Resource& upstream) {
    cumem_resource_t* r = nullptr;
    check(cumem_caching_resource_create(upstream.get(), &r));
    return Resource(r);
  }
  // The caching adaptor with options, e.g. expandable segments
  // (cumem_caching_resource_create_with_options):
  //   auto o = cumem::caching_resource_options();
  //   o.expandable = CUMEM_TRUE;
  //   auto cache = cumem::Resource::caching(pool, o);
  static Resource caching(const Resource& upstream, const cumem_caching_resource_options_t& options) {
    cumem_resource_t* r = nullptr;
    check(cumem_caching_resource_create_with_options(upstream.get(), &options, &r));
    return Resource(r);
  }
  // The tracking adaptor (outstanding allocations; call stacks if asked).
  static Resource tracking(const Resource& upstream, bool backtraces = false) {
    cumem_resource_t* r = nullptr;
    check(cumem_tracking_resource_create(upstream.get(), backtraces ? CUMEM_TRUE : CUMEM_FALSE, &r));
    return Resource(r);
  }
  // The logging adaptor: a CSV line per operation to `path` (empty:
  // $CUMEM_LOG_FILE).
  static Resource logging(const Resource& upstream, const std::string& path = {}) {
    cumem_resource_t* r = nullptr;
    check(cumem_logging_resource_create(upstream.get(), path.c_str(), &r));
    return Resource(r);
  }
  // A resource made of user callbacks (cumem_callback_resource_create);
  // the device, if given, is the memory's.
  static Resource callback(const cumem_resource_callbacks_t& callbacks) {
    cumem_resource_t* r = nullptr;
    check(cumem_callback_resource_create(nullptr, &callbacks, &r));
    return Resource(r);
  }
  static Resource callback(const Device& device, const cumem_resource_callbacks_t& callbacks) {
    cumem_resource_t* r = nullptr;
    check(cumem_callback_resource_create(device.get(), &callbacks, &r));
    return Resource(r);
  }
  // Pinned host memory from cuMemHostAlloc (synchronous).
  static Resource legacy_pinned(const Device& device) {
    cumem_resource_t* r = nullptr;
    check(cumem_legacy_pinned_resource_create(device.get(), &r));
    return Resource(r);
  }
  // Unified memory for `device`.
  static Resource managed(const Device& device) {
    return make(cumem_managed_resource_create, device, nullptr);
  }
  static Resource managed(const Device& device, const cumem_managed_resource_options_t& options) {
    return make(cumem_managed_resource_create, device, &options);
  }
  // Device memory from cuMemAlloc (synchronous); its buffers share with
  // other processes by descriptor alone (legacy IPC).
  static Resource legacy_device(const Device& device) {
    cumem_resource_t* r = nullptr;
    check(cumem_legacy_device_resource_create(device.get(), &r));
    return Resource(r);
  }
  // Host memory other processes can map: one shared memory file of
  // `capacity` bytes, from which buffers are carved. Needs no driver.
  static Resource host_shared(uint64_t capacity) {
    cumem_resource_t* r = nullptr;
    check(cumem_host_shared_resource_create(capacity, &r));
    return Resource(r);
  }
  // Imports the pool behind `handle` on `device` (for device memory the
  // pool's device; for pinned memory the device whose context maps it). The
  // result opens buffer descriptors but cannot allocate. Importing one pool
  // twice in a process gives the same resource.
  static Resource from_allocation_handle(const Device& device, const AllocationHandle& handle) {
    return import_impl(device.get(), handle);
  }
  // Imports a host shared resource, which needs no device.
  static Resource from_allocation_handle(const AllocationHandle& handle) {
    return import_impl(nullptr, handle);
  }

  // `size` bytes ordered on `stream` (size 0: an empty buffer).
  Buffer allocate(size_t size, StreamRef stream = {}) const;
  // The raw pair: no buffer object; give the pointer back with its size.
  void* allocate_raw(size_t size, StreamRef stream = {}) const {
    void* p = nullptr;
    check(cumem_resource_allocate_raw(get(), size, stream.get(), &p));
    return p;
  }
  void deallocate_raw(void* ptr, size_t size, StreamRef stream = {}) const {
    check(cumem_resource_deallocate_raw(get(), ptr, size, stream.get()));
  }
  // The raw pair on a native CUstream (as void*; nullptr: the legacy
  // default stream), with no stream object per call.
  void* allocate_native(size_t size, void* native_stream = nullptr) const {
    void* p = nullptr;
    check(cumem_resource_allocate_native(get(), size, native_stream, &p));
    return p;
  }
  void deallocate_native(void* ptr, size_t size, void* native_stream = nullptr) const {
    check(cumem_resource_deallocate_native(get(), ptr, size, native_stream));
  }

  cumem_resource_properties_t properties() const {
    cumem_resource_properties_t p = detail::init<cumem_resource_properties_t>();
    check(cumem_resource_get_properties(get(), &p));
    return p;
  }
  cumem_resource_kind_t kind() const { return properties().kind; }
  cumem_resource_statistics_t statistics() const {
    cumem_resource_statistics_t s = detail::init<cumem_resource_statistics_t>();
    check(cumem_resource_get_statistics(get(), &s));
    return s;
  }
  // Sets peak_bytes_in_use to the current bytes_in_use.
  void reset_peak() const { check(cumem_resource_reset_peak(get())); }
  // Caching adaptors only (else CUMEM_ERROR_NOT_SUPPORTED).
  cumem_caching_statistics_t caching_statistics() const {
    cumem_caching_statistics_t c = detail::init<cumem_caching_statistics_t>();
    check(cumem_caching_resource_get_statistics(get(), &c));
    return c;
  }
  void release_cached() const { check(cumem_caching_resource_release_cached(get())); }
  // Gives cached blocks back until at most keep_bytes stay (an expandable
  // cache unmaps their pages), then asks the upstream to trim what it holds
  // unused (caching adaptors only).
  void trim_cache(uint64_t keep_bytes = 0) const {
    check(cumem_caching_resource_trim(get(), keep_bytes));
  }
  // The graph(s) of capture `capture_id` are gone: its private pool gives
  // its memory back (caching adaptors only).
  void release_capture_pool(uint64_t capture_id) const {
    check(cumem_caching_resource_release_capture_pool(get(), capture_id));
  }
  // Tracking adaptors only: how many allocations are outstanding, and their
  // bytes.
  struct Outstanding {
    uint64_t count = 0;
    uint64_t bytes = 0;
  };
  Outstanding tracking_outstanding() const {
    Outstanding o;
    check(cumem_tracking_resource_outstanding(get(), &o.count, &o.bytes));
    return o;
  }
  // Tracking adaptors only: the report of outstanding allocations.
  // This resource's statistics and its upstreams', as JSON (cumem.h's
  // cumem_resource_statistics_json; defined with Snapshot).
  std::string statistics_json() const;

  std::string tracking_report() const {
    size_t n = 0;
    check(cumem_tracking_resource_report(get(), nullptr, 0, &n));
    std::string text(n + 1, '\0');
    check(cumem_tracking_resource_report(get(), &text[0], text.size(), &n));
    text.resize(n);
    return text;
  }

  // The pool_* calls throw CUMEM_ERROR_NOT_SUPPORTED unless properties().is_pool.
  cumem_pool_attributes_t pool_get_attributes() const {
    cumem_pool_attributes_t a = detail::init<cumem_pool_attributes_t>();
    check(cumem_resource_pool_get_attributes(get(), &a));
    return a;
  }
  // Sets the reuse flags and the release threshold.
  void pool_set_attributes(const cumem_pool_attributes_t& attributes) const {
    check(cumem_resource_pool_set_attributes(get(), &attributes));
  }
  void pool_reset_highs() const { check(cumem_resource_pool_reset_highs(get())); }
  void pool_trim(uint64_t min_bytes_to_keep) const {
    check(cumem_resource_pool_trim(get(), min_bytes_to_keep));
  }
  void pool_set_access(const Device& peer, bool read_write) const {
    check(cumem_resource_pool_set_access(get(), peer.get(), read_write ? CUMEM_TRUE : CUMEM_FALSE));
  }
  bool pool_get_access(const Device& peer) const {
    cumem_bool_t b = CUMEM_FALSE;
    check(cumem_resource_pool_get_access(get(), peer.get(), &b));
    return b != CUMEM_FALSE;
  }
  // `peer`'s access to the memory this resource hands out, whatever the
  // resource (cumem_resource_set_peer_access).
  void set_peer_access(const Device& peer, bool read_write) const {
    check(cumem_resource_set_peer_access(get(), peer.get(), read_write ? CUMEM_TRUE : CUMEM_FALSE));
  }
  bool peer_access(const Device& peer) const {
    cumem_bool_t b = CUMEM_FALSE;
    check(cumem_resource_get_peer_access(get(), peer.get(), &b));
    return b != CUMEM_FALSE;
  }
  // The CUmemoryPool, valid while this resource lives.
  void* pool_native() const {
    return detail::out<void*>(cumem_resource_pool_native, get());
  }

  // The graph memory resource of `device` (cuda.core's GraphMemoryResource):
  // allocations on capturing streams only, owned by the graph.
  static Resource graph_memory(const Device& device) {
    cumem_resource_t* r = nullptr;
    check(cumem_graph_memory_resource_create(device.get(), &r));
    return Resource(r);
  }
  // Graph memory resources only (else CUMEM_ERROR_NOT_SUPPORTED): the
  // device's graph memory, its trim and the reset of its highs.
  cumem_graph_memory_attributes_t graph_memory_attributes() const {
    cumem_graph_memory_attributes_t a = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
    check(cumem_graph_memory_resource_get_attributes(get(), &a));
    return a;
  }
  void graph_memory_trim() const { check(cumem_graph_memory_resource_trim(get())); }
  void graph_memory_reset_highs() const { check(cumem_graph_memory_resource_reset_highs(get())); }

  // Exports an IPC-enabled resource (properties().ipc_enabled) to send to
  // other processes; throws CUMEM_ERROR_NOT_SUPPORTED for other resources.
  AllocationHandle get_allocation_handle() const {
    return AllocationHandle(
        detail::out<cumem_allocation_handle_t*>(cumem_resource_get_allocation_handle, get()));
  }
  // The descriptor of a native allocation at `ptr` (an IPC-enabled pool's,
  // or a small block of a caching adaptor over one), shared as `size`
  // bytes (0: all of it where the resource knows the size).
  IpcDescriptor ipc_descriptor_native(const void* ptr, size_t size = 0) const {
    IpcDescriptor d{};
    check(cumem_resource_get_ipc_descriptor_native(get(), ptr, size, &d));
    return d;
  }

  // Virtual memory (cuda.core's VirtualMemoryResource): buffers that grow
  // and shrink with Buffer::resize; see cumem.h's "Virtual memory".
  static Resource virtual_memory(const Device& device) {
    return make(cumem_virtual_resource_create, device, nullptr);
  }
  static Resource virtual_memory(const Device& device,
                                 const cumem_virtual_resource_options_t& options) {
    return make(cumem_virtual_resource_create, device, &options);
  }
  // The virtual_* calls throw CUMEM_ERROR_NOT_SUPPORTED unless kind() is
  // CUMEM_RESOURCE_VIRTUAL. `peer`'s access to every buffer, present and
  // future (CUMEM_ACCESS_NONE revokes it).
  void virtual_set_access(const Device& peer, cumem_access_t access) const {
    check(cumem_virtual_resource_set_access(get(), peer.get(), access));
  }
  cumem_access_t virtual_get_access(const Device& peer) const {
    cumem_access_t a = CUMEM_ACCESS_NONE;
    check(cumem_virtual_resource_get_access(get(), peer.get(), &a));
    return a;
  }
  cumem_virtual_statistics_t virtual_statistics() const {
    cumem_virtual_statistics_t s = detail::init<cumem_virtual_statistics_t>();
    check(cumem_virtual_resource_get_statistics(get(), &s));
    return s;
  }
  // Waits for the work pending frees and resizes wait for, then releases them.
  void release_pending() const { check(cumem_virtual_resource_release_pending(get())); }

  // The failure-callback adaptor over `upstream`, with a C callback.
  static Resource failure_callback(const Resource& upstream, const cumem_failure_callback_t& callback) {
    cumem_resource_t* r = nullptr;
    check(cumem_failure_callback_resource_create(upstream.get(), &callback, &r));
    return Resource(r);
  }
  // The same with a C++ callable: `retry(info)` returns true to try the
  // upstream again (at most max_retries times per allocation; 0: the
  // default, CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES). An exception from it
  // counts as giving up (it cannot cross the C ABI). The callable lives as
  // long as the adaptor.
  template <class F, class Fn = std::decay_t<F>,
            class = std::enable_if_t<std::is_invocable_r_v<bool, Fn&, const cumem_failure_info_t&>>>
  static Resource failure_callback(const Resource& upstream, F&& retry, uint32_t max_retries = 0) {
    auto fn = std::make_unique<Fn>(std::forward<F>(retry));
    cumem_failure_callback_t c = CUMEM_FAILURE_CALLBACK_INIT;
    c.max_retries = max_retries;
    c.callback = [](const cumem_failure_info_t* info, void* user_data) noexcept {
      try {
        return (*static_cast<Fn*>(user_data))(*info) ? CUMEM_FAILURE_RETRY : CUMEM_FAILURE_FAIL;
      } catch (...) {
        return CUMEM_FAILURE_FAIL;
      }
    };
    c.destroy = [](void* user_data) noexcept { delete static_cast<Fn*>(user_data); };
    c.user_data = fn.get();
    cumem_resource_t* r = nullptr;
    const cumem_status_t s = cumem_failure_callback_resource_create(upstream.get(), &c, &r);
    if (s != CUMEM_SUCCESS) throw last_error(s);  // `fn` is deleted here: destroy never ran
    fn.release();  // the adaptor's destroy deletes it
    return Resource(r);
  }

 private:
  static Resource import_impl(const cumem_device_t* device, const AllocationHandle& handle) {
    cumem_resource_t* r = nullptr;
    check(cumem_resource_from_allocation_handle(device, handle.get(), &r));
    return Resource(r);
  }
  static Resource host_impl(const cumem_host_resource_options_t* options) {
    cumem_resource_t* r = nullptr;
    check(cumem_host_resource_create(options, &r));
    return Resource(r);
  }
  template <class Options>
  static Resource make(cumem_status_t (*create)(const cumem_device_t*, const Options*,
                                                cumem_resource_t**),
                       const Device& device,
                       typename detail::identity<const Options*>::type options) {
    cumem_resource_t* r = nullptr;
    check(create(device.get(), options, &r));
    return Resource(r);
  }
};

// ---------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------

namespace detail {

// Runs and then deletes the C++ callable of Buffer::wrap, exactly once.
template <class Fn>
void release_trampoline(void* ptr, size_t size, void* user_data) noexcept {
  std::unique_ptr<Fn> fn(static_cast<Fn*>(user_data));
  if constexpr (std::is_invocable_v<Fn&, void*, size_t>) {
    (*fn)(ptr, size);
  } else {
    (*fn)();
  }
}

// The bits cumem_buffer_fill takes for a value of T (1, 2 or 4 bytes).
template <class T>
uint32_t fill_bits(const T& value) noexcept {
  static_assert(std::is_trivially_copyable_v<T>, "fill values must be trivially copyable");
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4,
                "cumem_buffer_fill takes 1-, 2- or 4-byte values");
  using Bits = std::conditional_t<sizeof(T) == 1, uint8_t,
                                  std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>>;
  Bits bits;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

}  // namespace detail

// A buffer's memory as a dma-buf (Buffer::get_dmabuf, cumem_dmabuf_t):
// owns the file descriptor, closed with the object unless release_fd()
// handed it over. Move-only; register fd() with offset() and length() (or
// the buffer's own size from offset()) with the NIC.
class DmaBuf {
 public:
  DmaBuf() noexcept { d_.fd = -1; }
  explicit DmaBuf(const cumem_dmabuf_t& d) noexcept : d_(d) {}
  DmaBuf(DmaBuf&& other) noexcept : d_(other.d_) { other.d_.fd = -1; }
  DmaBuf& operator=(DmaBuf&& other) noexcept {
    if (this != &other) {
      reset();
      d_ = other.d_;
      other.d_.fd = -1;
    }
    return *this;
  }
  DmaBuf(const DmaBuf&) = delete;
  DmaBuf& operator=(const DmaBuf&) = delete;
  ~DmaBuf() { reset(); }

  int32_t fd() const noexcept { return d_.fd; }
  uint64_t offset() const noexcept { return d_.offset; }
  uint64_t length() const noexcept { return d_.length; }
  uint64_t address() const noexcept { return d_.address; }
  int32_t device_id() const noexcept { return d_.device_id; }
  bool whole_allocation() const noexcept { return d_.whole_allocation != CUMEM_FALSE; }
  const cumem_dmabuf_t& get() const noexcept { return d_; }
  explicit operator bool() const noexcept { return d_.fd >= 0; }
  // Hands the fd to the caller, who closes it; this object no longer does.
  int32_t release_fd() noexcept {
    const int32_t fd = d_.fd;
    d_.fd = -1;
    return fd;
  }
  void reset() noexcept {
    if (d_.fd >= 0) ::close(d_.fd);
    d_.fd = -1;
  }

 private:
  cumem_dmabuf_t d_{};
};

class Buffer : public detail::Handle<Buffer, cumem_buffer_t, cumem_buffer_retain,
                                     cumem_buffer_release> {
 public:
  using Handle::Handle;

  // Takes ownership of [ptr, ptr+size) allocated from `resource`.
  static Buffer wrap_owned(const Resource& resource, void* ptr, size_t size) {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_wrap_owned(resource.get(), ptr, size, &b));
    return Buffer(b);
  }
  // Wraps memory libcumem does not own; nothing runs when it is closed.
  static Buffer wrap(void* ptr, size_t size) { return wrap(ptr, size, nullptr, nullptr); }
  // Wraps foreign memory with the C callback `release_fn(ptr, size, user_data)`.
  static Buffer wrap(void* ptr, size_t size, cumem_release_fn release_fn, void* user_data) {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_wrap(ptr, size, release_fn, user_data, &b));
    return Buffer(b);
  }
  // Wraps foreign memory; `release(ptr, size)` or `release()` runs once when
  // the buffer is closed or last released. It must not throw.
  template <class F, class Fn = std::decay_t<F>,
            class = std::enable_if_t<std::is_invocable_v<Fn&, void*, size_t> ||
                                     std::is_invocable_v<Fn&>>>
  static Buffer wrap(void* ptr, size_t size, F&& release) {
    auto fn = std::make_unique<Fn>(std::forward<F>(release));
    cumem_buffer_t* b = nullptr;
    const cumem_status_t s =
        cumem_buffer_wrap(ptr, size, &detail::release_trampoline<Fn>, fn.get(), &b);
    if (s != CUMEM_SUCCESS) {
      Error error = last_error(s);  // before the callable's destructor can call libcumem
      fn.reset();
      throw error;
    }
    fn.release();  // the trampoline deletes it
    return Buffer(b);
  }
  // Page-locks existing host memory; closing unregisters it.
  static Buffer register_host(const Device& device, void* ptr, size_t size) {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_register_host(device.get(), ptr, size, &b));
    return Buffer(b);
  }
  // Opens another process's buffer descriptor with the resource imported
  // from its pool (or a legacy device resource, for legacy descriptors); the
  // mapping is ordered on `stream`. Closing unmaps it here and never frees
  // the exporter's memory.
  static Buffer from_ipc_descriptor(const Resource& resource, const IpcDescriptor& descriptor,
                                    StreamRef stream = {}) {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_from_ipc_descriptor(resource.get(), &descriptor, stream.get(), &b));
    return Buffer(b);
  }

  // DLPack. The tensor returned is the caller's: call its deleter once, or
  // hand it to a library that will; it keeps this buffer's memory alive,
  // and close() is refused while it lives. `options`: nullptr for 1-D bytes.
  DLManagedTensorVersioned* to_dlpack(const cumem_dlpack_options_t* options = nullptr) const {
    DLManagedTensorVersioned* t = nullptr;
    check(cumem_buffer_to_dlpack(get(), options, &t));
    return t;
  }
  DLManagedTensor* to_dlpack_legacy(const cumem_dlpack_options_t* options = nullptr) const {
    DLManagedTensor* t = nullptr;
    check(cumem_buffer_to_dlpack_legacy(get(), options, &t));
    return t;
  }
  // A buffer over a tensor's memory that calls the tensor's deleter when it
  // is freed. If this throws, the tensor is still the caller's.
  static Buffer from_dlpack(DLManagedTensorVersioned* tensor, bool allow_read_only = false) {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_from_dlpack(tensor, allow_read_only ? CUMEM_TRUE : CUMEM_FALSE, &b));
    return Buffer(b);
  }
  static Buffer from_dlpack_legacy(DLManagedTensor* tensor) {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_from_dlpack_legacy(tensor, &b));
    return Buffer(b);
  }

  // The start of the memory (nullptr for size 0).
  void* ptr() const { return detail::out<void*>(cumem_buffer_ptr, get()); }
  template <class T>
  T* data() const { return static_cast<T*>(ptr()); }
  size_t size() const { return detail::out<size_t>(cumem_buffer_size, get()); }
  // The resource the memory came from; empty for wrapped foreign memory.
  Resource resource() const {
    return Resource(detail::out<cumem_resource_t*>(cumem_buffer_resource, get()));
  }
  // Device ordinal of the memory, -1 when not tied to a device.
  int32_t device_id() const { return detail::out<int32_t>(cumem_buffer_device_id, get()); }
  cumem_buffer_info_t info() const {
    cumem_buffer_info_t i = detail::init<cumem_buffer_info_t>();
    check(cumem_buffer_get_info(get(), &i));
    return i;
  }
  bool is_closed() const {
    return detail::out<cumem_bool_t>(cumem_buffer_is_closed, get()) != CUMEM_FALSE;
  }

  // The stream that frees the buffer on close() without a stream or on the
  // last release; {} resets it to none (cumem_buffer_set_deallocation_stream).
  void set_deallocation_stream(StreamRef stream) const {
    check(cumem_buffer_set_deallocation_stream(get(), stream.get()));
  }
  // Frees the memory ordered on `stream` ({}: the deallocation stream). The
  // owner stays valid; calls other than is_closed then throw BUFFER_CLOSED.
  void close(StreamRef stream = {}) const { check(cumem_buffer_close(get(), stream.get())); }

  // Whole-buffer copies (sizes must match), ordered on `stream`.
  void copy_to(const Buffer& dst, StreamRef stream = {}) const {
    check(cumem_buffer_copy_to(get(), dst.get(), stream.get()));
  }
  void copy_from(const Buffer& src, StreamRef stream = {}) const {
    check(cumem_buffer_copy_from(get(), src.get(), stream.get()));
  }
  // Copies `length` bytes from src+src_offset to this+dst_offset.
  void copy_region(size_t dst_offset, const Buffer& src, size_t src_offset, size_t length,
                   StreamRef stream = {}) const {
    check(cumem_buffer_copy_region(get(), dst_offset, src.get(), src_offset, length, stream.get()));
  }
  // Fills with `value` repeated every `width` bytes (1, 2 or 4).
  void fill(uint32_t value, uint32_t width, StreamRef stream = {}) const {
    check(cumem_buffer_fill(get(), value, width, stream.get()));
  }
  // Fills with copies of a 1-, 2- or 4-byte value: fill_value(1.0f), fill_value(uint16_t{7}).
  template <class T>
  void fill_value(const T& value, StreamRef stream = {}) const {
    fill(detail::fill_bits(value), static_cast<uint32_t>(sizeof(T)), stream);
  }
  void fill_bytes(uint8_t value, StreamRef stream = {}) const { fill(value, 1, stream); }
  void zero(StreamRef stream = {}) const { fill(0, 1, stream); }
  // A view of [offset, offset+length) that keeps this buffer alive.
  Buffer slice(size_t offset, size_t length) const {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_slice(get(), offset, length, &b));
    return Buffer(b);
  }

  // Managed memory only: migrate pages, advise the driver, drop contents.
  void prefetch(cumem_location_t to, StreamRef stream = {}) const {
    check(cumem_buffer_prefetch(get(), to, stream.get()));
  }
  void advise(cumem_advice_t advice, cumem_location_t where = location::none()) const {
    check(cumem_buffer_advise(get(), advice, where));
  }
  void discard(StreamRef stream = {}) const { check(cumem_buffer_discard(get(), stream.get())); }
  // Discards the contents and prefetches the pages to `to` in one step (CUDA 13+).
  void discard_prefetch(cumem_location_t to, StreamRef stream = {}) const {
    check(cumem_buffer_discard_prefetch(get(), to, stream.get()));
  }
  // Where the pages were last asked to go (location::none() when some never
  // were, or went to different places); what was asked, not where they are.
  cumem_location_t last_prefetch_location() const {
    return detail::out<cumem_location_t>(cumem_buffer_get_last_prefetch_location, get());
  }

  // cuda.core's copy_to with no destination: a new buffer from this
  // buffer's resource, holding a copy (ordered on `stream`).
  Buffer copy_to(StreamRef stream = {}) const {
    cumem_buffer_t* b = nullptr;
    check(cumem_buffer_copy_to_new(get(), stream.get(), &b));
    return Buffer(b);
  }

  // The descriptor another process opens with Buffer::from_ipc_descriptor.
  IpcDescriptor get_ipc_descriptor() const {
    return detail::out<IpcDescriptor>(cumem_buffer_get_ipc_descriptor, get());
  }

  // The buffer's device memory as a dma-buf (cumem_buffer_get_dmabuf: the
  // backing allocation rounded out to host pages, the buffer at offset());
  // flags 0 or CUMEM_DMABUF_MAPPING_PCIE.
  DmaBuf get_dmabuf(uint32_t flags = 0) const {
    cumem_dmabuf_t d{};
    d.struct_size = static_cast<uint32_t>(sizeof d);
    check(cumem_buffer_get_dmabuf(get(), flags, &d));
    return DmaBuf(d);
  }

  // Virtual memory: resizes a buffer of a virtual resource (cuda.core's
  // modify_allocation), ordered on `stream` ({}: the deallocation stream);
  // ptr() may change. Shares it with another process as its chunks' fds,
  // and maps another process's (definitions below VirtualIpcHandle).
  void resize(size_t new_size, StreamRef stream = {}) const {
    check(cumem_buffer_resize(get(), new_size, stream.get()));
  }
  VirtualIpcHandle get_virtual_ipc_handle() const;
  static Buffer from_virtual_ipc_handle(const Device& device, const VirtualIpcHandle& handle,
                                        StreamRef stream = {});
};

inline Buffer Resource::allocate(size_t size, StreamRef stream) const {
  cumem_buffer_t* b = nullptr;
  check(cumem_resource_allocate(get(), size, stream.get(), &b));
  return Buffer(b);
}

// ---------------------------------------------------------------------------
// IPC messages over a connected Unix domain socket
// ---------------------------------------------------------------------------

// Sends one message: the handle's file descriptor and pool descriptor (none
// when `handle` is empty), then `descriptors` (at most 1024). Blocks until
// all is sent; throws CUMEM_ERROR_INVALID_STATE when the peer has closed.
// The resource the framework allocator entry points (cumem_torch_alloc,
// cumem_cupy_malloc, ...) use for `device`; reset_framework_resource goes
// back to the default.
inline void framework_set_resource(int32_t device, const Resource& resource) {
  check(cumem_framework_set_resource(device, resource.get()));
}
inline void framework_reset_resource(int32_t device) {
  check(cumem_framework_set_resource(device, nullptr));
}
inline Resource framework_resource(int32_t device) {
  cumem_resource_t* r = nullptr;
  check(cumem_framework_get_resource(device, &r));
  return Resource::adopt(r);
}
// Replaces the configuration of the framework entry points' default
// resource (CUMEM_ALLOC_CONF's text: "kind:caching,limit:40GiB"; "" is the
// defaults). Throws cumem::Error naming the key of a text refused.
inline void framework_configure(const std::string& configuration) {
  check(cumem_framework_configure(configuration.c_str()));
}

inline void ipc_send(int32_t socket, const AllocationHandle& handle,
                     const std::vector<IpcDescriptor>& descriptors) {
  // A count past uint32_t (impossible in practice) is refused by the C call.
  const uint32_t count = descriptors.size() > UINT32_MAX
                             ? UINT32_MAX
                             : static_cast<uint32_t>(descriptors.size());
  check(cumem_ipc_send(socket, handle.get(), descriptors.empty() ? nullptr : descriptors.data(),
                       count));
}
// Sends descriptors alone (buffers of a pool the peer imported already, or
// legacy descriptors).
inline void ipc_send(int32_t socket, const std::vector<IpcDescriptor>& descriptors) {
  ipc_send(socket, AllocationHandle(), descriptors);
}

// One message received by ipc_receive.
struct IpcMessage {
  AllocationHandle handle;  // empty when the sender sent none
  std::vector<IpcDescriptor> descriptors;
};

// Receives one message sent by ipc_send, of at most `capacity` descriptors
// (room for that many is allocated first; a message holds at most 1024).
// Throws CUMEM_ERROR_INVALID_ARGUMENT for a malformed message or one of more
// than `capacity` descriptors (that message is read whole and dropped, so
// the connection stays in step), and CUMEM_ERROR_INVALID_STATE when the
// peer has closed.
inline IpcMessage ipc_receive(int32_t socket, uint32_t capacity) {
  IpcMessage m;
  m.descriptors.resize(capacity);
  cumem_allocation_handle_t* h = nullptr;
  uint32_t count = 0;
  check(cumem_ipc_receive(socket, &h, m.descriptors.empty() ? nullptr : m.descriptors.data(),
                          capacity, &count));
  m.handle = AllocationHandle(h);
  m.descriptors.resize(count);
  return m;
}

// ---------------------------------------------------------------------------
// Virtual memory across processes
// ---------------------------------------------------------------------------

// A virtual buffer's chunks as file descriptors (owned by the handle) and
// the descriptor that lists them. Made by Buffer::get_virtual_ipc_handle(),
// received by ipc_receive_virtual(), or rebuilt with from_fds().
class VirtualIpcHandle
    : public detail::Handle<VirtualIpcHandle, cumem_virtual_ipc_handle_t,
                            cumem_virtual_ipc_handle_retain, cumem_virtual_ipc_handle_release> {
 public:
  using Handle::Handle;

  // Rebuilds a handle from a descriptor's bytes and its chunks' file
  // descriptors, in order. On success the handle owns the fds; when this
  // throws, the caller still does.
  static VirtualIpcHandle from_fds(const std::vector<uint8_t>& descriptor,
                                   const std::vector<int32_t>& fds) {
    cumem_virtual_ipc_handle_t* h = nullptr;
    const uint32_t count = fds.size() > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(fds.size());
    check(cumem_virtual_ipc_handle_from_fds(descriptor.data(), descriptor.size(),
                                            fds.empty() ? nullptr : fds.data(), count, &h));
    return VirtualIpcHandle(h);
  }
  // The same with the fds taken from the exporting process `pid`
  // (pidfd_getfd of its fds `remote_fds`).
  static VirtualIpcHandle from_pid(const std::vector<uint8_t>& descriptor, int32_t pid,
                                   const std::vector<int32_t>& remote_fds) {
    cumem_virtual_ipc_handle_t* h = nullptr;
    const uint32_t count =
        remote_fds.size() > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(remote_fds.size());
    check(cumem_virtual_ipc_handle_from_pid(descriptor.data(), descriptor.size(), pid,
                                            remote_fds.empty() ? nullptr : remote_fds.data(),
                                            count, &h));
    return VirtualIpcHandle(h);
  }
  // The pages of a native allocation at `ptr` of `resource` (a virtual
  // resource's, or a block of an expandable cache made with the
  // POSIX fd handle type), shared as `size` bytes (0: the whole block).
  static VirtualIpcHandle of_native(const Resource& resource, const void* ptr, size_t size = 0);
  uint32_t fd_count() const {
    return detail::out<uint32_t>(cumem_virtual_ipc_handle_fd_count, get());
  }
  // Chunk `index`'s file descriptor, borrowed: valid while this handle lives.
  int32_t fd(uint32_t index) const {
    return detail::out<int32_t>(cumem_virtual_ipc_handle_fd, get(), index);
  }
  // The descriptor's bytes, to send with the fds over another channel.
  std::vector<uint8_t> descriptor() const {
    size_t n = 0;
    check(cumem_virtual_ipc_handle_descriptor(get(), nullptr, 0, &n));
    std::vector<uint8_t> bytes(n);
    check(cumem_virtual_ipc_handle_descriptor(get(), bytes.data(), bytes.size(), &n));
    return bytes;
  }
};

inline VirtualIpcHandle VirtualIpcHandle::of_native(const Resource& resource, const void* ptr,
                                                    size_t size) {
  cumem_virtual_ipc_handle_t* h = nullptr;
  check(cumem_resource_get_virtual_ipc_handle_native(resource.get(), ptr, size, &h));
  return VirtualIpcHandle(h);
}
inline VirtualIpcHandle Buffer::get_virtual_ipc_handle() const {
  return VirtualIpcHandle(
      detail::out<cumem_virtual_ipc_handle_t*>(cumem_buffer_get_virtual_ipc_handle, get()));
}
inline Buffer Buffer::from_virtual_ipc_handle(const Device& device, const VirtualIpcHandle& handle,
                                              StreamRef stream) {
  cumem_buffer_t* b = nullptr;
  check(cumem_buffer_from_virtual_ipc_handle(device.get(), handle.get(), stream.get(), &b));
  return Buffer(b);
}

// Sends a virtual IPC handle over a connected Unix domain socket (one
// sender per socket at a time); receives one sent so.
// Unmap notifications (cumem_unmap_subscribe): `callback` is called before
// device memory is given back, on the thread that gives it back, under the
// rules of cumem_unmap_callback_t (no libcumem call inside but
// unsubscribing; an exception it throws is dropped). The subscription ends
// with the object (unsubscribe waits for calls running on other threads).
class UnmapSubscription {
 public:
  using Callback = std::function<void(const cumem_unmap_event_t&)>;
  UnmapSubscription() noexcept = default;
  explicit UnmapSubscription(Callback callback) : callback_(new Callback(std::move(callback))) {
    check(cumem_unmap_subscribe(&call, callback_.get(), &id_));
  }
  UnmapSubscription(UnmapSubscription&& other) noexcept
      : callback_(std::move(other.callback_)), id_(other.id_) {
    other.id_ = 0;
  }
  UnmapSubscription& operator=(UnmapSubscription&& other) noexcept {
    if (this != &other) {
      reset();
      callback_ = std::move(other.callback_);
      id_ = other.id_;
      other.id_ = 0;
    }
    return *this;
  }
  ~UnmapSubscription() { reset(); }
  // The subscription's number (0: none).
  uint64_t id() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ != 0; }
  void reset() noexcept {
    if (id_) cumem_unmap_unsubscribe(id_);
    id_ = 0;
    callback_.reset();
  }

 private:
  static void call(const cumem_unmap_event_t* event, void* user_data) noexcept {
    try {
      (*static_cast<Callback*>(user_data))(*event);
    } catch (...) {
    }
  }
  std::unique_ptr<Callback> callback_;  // stays put when the object moves
  uint64_t id_ = 0;
};

// The C calls themselves, for a plain function and user data.
inline uint64_t unmap_subscribe(cumem_unmap_callback_t callback, void* user_data = nullptr) {
  uint64_t id = 0;
  check(cumem_unmap_subscribe(callback, user_data, &id));
  return id;
}
inline void unmap_unsubscribe(uint64_t subscription) {
  check(cumem_unmap_unsubscribe(subscription));
}

inline void ipc_send_virtual(int32_t socket, const VirtualIpcHandle& handle) {
  check(cumem_ipc_send_virtual(socket, handle.get()));
}
inline VirtualIpcHandle ipc_receive_virtual(int32_t socket) {
  return VirtualIpcHandle(
      detail::out<cumem_virtual_ipc_handle_t*>(cumem_ipc_receive_virtual, socket));
}

// ---------------------------------------------------------------------------
// Programs, libraries, kernels
// ---------------------------------------------------------------------------

class Library;

// C++ form of cumem_program_options_t; empty strings mean the defaults.
struct ProgramOptions {
  cumem_code_type_t code_type = CUMEM_CODE_CUBIN;
  std::string arch;                           // "sm_90"; empty: the device's
  std::vector<std::string> options;           // "-std=c++17", "-DN=4", ...
  std::vector<std::string> name_expressions;  // "my_kernel<float>", ...
  std::string name;                           // empty: "cumem_program.cu"
};

class Program : public detail::Handle<Program, cumem_program_t, cumem_program_retain,
                                      cumem_program_release> {
 public:
  using Handle::Handle;

  // Compiles CUDA C++ `source` with NVRTC for `device`.
  static Program compile(const Device& device, const std::string& source) {
    return compile_impl(device, source, nullptr);
  }
  static Program compile(const Device& device, const std::string& source,
                         const cumem_program_options_t& options) {
    return compile_impl(device, source, &options);
  }
  static Program compile(const Device& device, const std::string& source,
                         const ProgramOptions& options) {
    std::vector<const char*> opts, names;
    for (const std::string& o : options.options) opts.push_back(o.c_str());
    for (const std::string& n : options.name_expressions) names.push_back(n.c_str());
    cumem_program_options_t c = program_options();
    c.code_type = options.code_type;
    c.arch = options.arch.empty() ? nullptr : options.arch.c_str();
    c.options = opts.empty() ? nullptr : opts.data();
    c.num_options = static_cast<uint32_t>(opts.size());
    c.name_expressions = names.empty() ? nullptr : names.data();
    c.num_name_expressions = static_cast<uint32_t>(names.size());
    c.name = options.name.empty() ? nullptr : options.name.c_str();
    return compile_impl(device, source, &c);
  }

  // The compiler's log (warnings), possibly empty.
  std::string log() const { return detail::out<const char*>(cumem_program_log, get()); }
  // A copy of the compiled code; a std::string so that PTX stays NUL-terminated.
  std::string code() const {
    const void* data = nullptr;
    size_t size = 0;
    check(cumem_program_code(get(), &data, &size));
    return std::string(static_cast<const char*>(data), size);
  }
  // The mangled name of a name expression given at compile time.
  std::string lowered_name(const std::string& name_expression) const {
    return detail::out<const char*>(cumem_program_lowered_name, get(), name_expression.c_str());
  }
  // Loads the code for the program's device.
  Library load() const;

 private:
  static Program compile_impl(const Device& device, const std::string& source,
                              const cumem_program_options_t* options) {
    cumem_program_t* p = nullptr;
    check(cumem_program_compile(device.get(), source.c_str(), options, &p));
    return Program(p);
  }
};

class Kernel : public detail::Handle<Kernel, cumem_kernel_t, cumem_kernel_retain,
                                     cumem_kernel_release> {
 public:
  using Handle::Handle;

  cumem_kernel_attributes_t attributes() const {
    cumem_kernel_attributes_t a = detail::init<cumem_kernel_attributes_t>();
    check(cumem_kernel_get_attributes(get(), &a));
    return a;
  }
  // The CUkernel, valid while this kernel lives.
  void* native() const {
    return detail::out<void*>(cumem_kernel_native, get());
  }
};

class Library : public detail::Handle<Library, cumem_library_t, cumem_library_retain,
                                      cumem_library_release> {
 public:
  using Handle::Handle;

  // Loads cubin, NUL-terminated PTX or fatbin bytes for `device`.
  static Library load_data(const Device& device, const void* image, size_t size) {
    cumem_library_t* l = nullptr;
    check(cumem_library_load_data(device.get(), image, size, &l));
    return Library(l);
  }
  // `image.c_str()` is NUL-terminated, as PTX must be.
  static Library load_data(const Device& device, const std::string& image) {
    return load_data(device, image.c_str(), image.size());
  }
  // A kernel by its (lowered) name.
  Kernel get_kernel(const std::string& name) const {
    return Kernel(detail::out<cumem_kernel_t*>(
        cumem_library_get_kernel, get(), name.c_str()));
  }
};

inline Library Program::load() const {
  return Library(detail::out<cumem_library_t*>(cumem_program_load, get()));
}

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------

// Grid, block or cluster extents; a single number is {n, 1, 1}.
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  constexpr Dim3() noexcept = default;
  constexpr Dim3(uint32_t x_, uint32_t y_ = 1, uint32_t z_ = 1) noexcept : x(x_), y(y_), z(z_) {}
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_memory_bytes = 0;  // dynamic shared memory per block
  Dim3 cluster{0, 0, 0};             // {0, 0, 0}: no thread-block clusters

  constexpr LaunchConfig() noexcept = default;
  constexpr LaunchConfig(Dim3 grid_, Dim3 block_, uint32_t shared_memory_bytes_ = 0,
                         Dim3 cluster_ = Dim3(0, 0, 0)) noexcept
      : grid(grid_), block(block_), shared_memory_bytes(shared_memory_bytes_), cluster(cluster_) {}
  LaunchConfig(const cumem_launch_config_t& c) noexcept
      : grid(c.grid[0], c.grid[1], c.grid[2]),
        block(c.block[0], c.block[1], c.block[2]),
        shared_memory_bytes(c.shared_memory_bytes),
        cluster(c.cluster[0], c.cluster[1], c.cluster[2]) {}

  operator cumem_launch_config_t() const noexcept {
    cumem_launch_config_t c = launch_config();
    c.grid[0] = grid.x, c.grid[1] = grid.y, c.grid[2] = grid.z;
    c.block[0] = block.x, c.block[1] = block.y, c.block[2] = block.z;
    c.shared_memory_bytes = shared_memory_bytes;
    c.cluster[0] = cluster.x, c.cluster[1] = cluster.y, c.cluster[2] = cluster.z;
    return c;
  }
};

namespace detail {

// What a kernel receives for an argument of type A: a Buffer's device
// pointer, or a copy of the value.
template <class A>
using kernel_arg_t =
    std::conditional_t<std::is_same_v<std::decay_t<A>, Buffer>, void*, std::decay_t<A>>;

inline void* kernel_arg(const Buffer& buffer) { return buffer.ptr(); }
template <class A>
const A& kernel_arg(const A& value) noexcept { return value; }

// The void* array cumem_launch takes: one pointer to each argument's value.
// Holds pointers into itself, hence neither copyable nor movable.
template <class... Args>
class KernelArgs {
 public:
  explicit KernelArgs(const Args&... args) : values_(kernel_arg(args)...) {
    std::apply([this](auto&... v) { pointers_ = {{static_cast<void*>(&v)...}}; }, values_);
  }
  KernelArgs(const KernelArgs&) = delete;
  KernelArgs& operator=(const KernelArgs&) = delete;

  void** data() noexcept { return sizeof...(Args) ? pointers_.data() : nullptr; }
  static constexpr uint32_t size() noexcept { return static_cast<uint32_t>(sizeof...(Args)); }

 private:
  std::tuple<kernel_arg_t<Args>...> values_;
  std::array<void*, sizeof...(Args)> pointers_{};
};

}  // namespace detail

// Launches with a prepared argument array, as cumem_launch takes it.
inline void launch_raw(const Kernel& kernel, StreamRef stream, const LaunchConfig& config,
                       void** args, uint32_t num_args) {
  const cumem_launch_config_t c = config;
  check(cumem_launch(kernel.get(), stream.get(), &c, args, num_args));
}

// Launches `kernel` with typed arguments in its parameter order. Each must
// have the parameter's exact type (size_t{n}, not an int n); a Buffer passes
// its device pointer.
template <class... Args>
void launch(const Kernel& kernel, StreamRef stream, const LaunchConfig& config,
            const Args&... args) {
  static_assert((std::is_trivially_copyable_v<detail::kernel_arg_t<Args>> && ...),
                "kernel arguments must be trivially copyable (or cumem::Buffer)");
  static_assert((!std::is_array_v<Args> && ...), "pass a pointer, not an array");
  detail::KernelArgs<Args...> packed(args...);
  launch_raw(kernel, stream, config, packed.data(), packed.size());
}

// ---------------------------------------------------------------------------
// CUDA graphs
// ---------------------------------------------------------------------------

inline cumem_graph_options_t graph_options() noexcept { return CUMEM_GRAPH_OPTIONS_INIT; }

// An executable CUDA graph (CUgraphExec) of one device.
class Graph : public detail::Handle<Graph, cumem_graph_t, cumem_graph_retain,
                                    cumem_graph_release> {
 public:
  using Handle::Handle;

  // Instantiates a CUgraph (void*) for `device`; the CUgraph stays the
  // caller's (Stream::end_capture_graph gives a Graph that owns its own).
  static Graph instantiate(const Device& device, void* native_graph,
                           const cumem_graph_options_t& options = graph_options()) {
    cumem_graph_t* g = nullptr;
    check(cumem_graph_instantiate(device.get(), native_graph, &options, &g));
    return Graph(g);
  }
  void launch(StreamRef stream = nullptr) const { check(cumem_graph_launch(get(), stream.get())); }
  void upload(StreamRef stream = nullptr) const { check(cumem_graph_upload(get(), stream.get())); }
  // The CUgraphExec, valid while this graph lives.
  void* native() const { return detail::out<void*>(cumem_graph_native, get()); }
  // The id of the capture it came from (0: instantiated from a CUgraph).
  uint64_t capture_id() const { return detail::out<uint64_t>(cumem_graph_capture_id, get()); }
};

inline cumem_capture_info_t Stream::capture_info() const {
  cumem_capture_info_t c = CUMEM_CAPTURE_INFO_INIT;
  check(cumem_stream_get_capture_info(get(), &c));
  return c;
}
inline Graph Stream::end_capture_graph() const { return end_capture_graph(graph_options()); }
inline Graph Stream::end_capture_graph(const cumem_graph_options_t& options) const {
  cumem_graph_t* g = nullptr;
  check(cumem_stream_end_capture_graph(get(), &options, &g));
  return Graph(g);
}

static_assert(sizeof(Graph) == sizeof(void*), "owners are one pointer wide");
// ---------------------------------------------------------------------------
// The device's memory resource, and batches
// ---------------------------------------------------------------------------

inline Resource Device::memory_resource() const {
  return Resource(detail::out<cumem_resource_t*>(cumem_device_get_memory_resource, get()));
}
inline void Device::set_memory_resource(const Resource& resource) const {
  check(cumem_device_set_memory_resource(get(), resource.get()));
}
inline void Device::reset_memory_resource() const {
  check(cumem_device_set_memory_resource(get(), nullptr));
}
inline Buffer Device::allocate(size_t size) const { return allocate(size, StreamRef()); }
inline Buffer Device::allocate(size_t size, StreamRef stream) const {
  cumem_buffer_t* b = nullptr;
  check(cumem_device_allocate(get(), size, stream.get(), &b));
  return Buffer(b);
}

// Options of one batch copy (zero: stream order, no hints): cuda.core's CopyOptions.
inline cumem_copy_options_t copy_options() noexcept { return CUMEM_COPY_OPTIONS_INIT; }
inline cumem_failure_callback_t failure_callback() noexcept { return CUMEM_FAILURE_CALLBACK_INIT; }

// One copy of a batch over buffers: `size` bytes from *src at src_offset to
// *dst at dst_offset.
struct BatchCopy {
  const Buffer* dst = nullptr;
  size_t dst_offset = 0;
  const Buffer* src = nullptr;
  size_t src_offset = 0;
  size_t size = 0;
};

// One copy of a batch over raw pointers (device, pinned, managed or host).
struct PointerCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t size = 0;
};

namespace detail {
inline const cumem_copy_options_t* options_or_null(const std::vector<cumem_copy_options_t>& o) {
  return o.empty() ? nullptr : o.data();
}
template <class Buffers>
std::vector<cumem_buffer_t*> handles(const Buffers& buffers) {
  std::vector<cumem_buffer_t*> h;
  h.reserve(buffers.size());
  for (const Buffer* b : buffers) h.push_back(b ? b->get() : nullptr);
  return h;
}
}  // namespace detail

// cumem_copy_batch (cuda.core's copy_batch) over regions of buffers, in one
// call ordered on `stream`. `options`: empty for the defaults, one for every
// copy, or one per copy.
inline void copy_batch(StreamRef stream, const std::vector<BatchCopy>& copies,
                       const std::vector<cumem_copy_options_t>& options = {}) {
  const size_t n = copies.size();
  std::vector<cumem_buffer_t*> dsts(n);
  std::vector<const cumem_buffer_t*> srcs(n);
  std::vector<size_t> dst_offsets(n), src_offsets(n), sizes(n);
  for (size_t i = 0; i < n; ++i) {
    dsts[i] = copies[i].dst ? copies[i].dst->get() : nullptr;
    srcs[i] = copies[i].src ? copies[i].src->get() : nullptr;
    dst_offsets[i] = copies[i].dst_offset;
    src_offsets[i] = copies[i].src_offset;
    sizes[i] = copies[i].size;
  }
  check(cumem_copy_batch(stream.get(), n, dsts.data(), dst_offsets.data(), srcs.data(),
                         src_offsets.data(), sizes.data(), detail::options_or_null(options),
                         options.size()));
}
// Whole buffers, as cuda.core's copy_batch(stream, srcs, dsts): srcs[i]
// into dsts[i], whose sizes must be equal.
inline void copy_batch(StreamRef stream, const std::vector<const Buffer*>& srcs,
                       const std::vector<const Buffer*>& dsts,
                       const std::vector<cumem_copy_options_t>& options = {}) {
  if (srcs.size() != dsts.size())
    throw Error(CUMEM_ERROR_INVALID_ARGUMENT,
                "cumem::copy_batch: " + std::to_string(srcs.size()) + " sources but " +
                    std::to_string(dsts.size()) + " destinations");
  const std::vector<cumem_buffer_t*> d = detail::handles(dsts);
  const std::vector<cumem_buffer_t*> s = detail::handles(srcs);
  std::vector<const cumem_buffer_t*> sc(s.begin(), s.end());
  check(cumem_copy_batch(stream.get(), d.size(), d.data(), nullptr, sc.data(), nullptr, nullptr,
                         detail::options_or_null(options), options.size()));
}
// cumem_copy_batch_raw over raw pointers.
inline void copy_batch_raw(StreamRef stream, const std::vector<PointerCopy>& copies,
                           const std::vector<cumem_copy_options_t>& options = {}) {
  const size_t n = copies.size();
  std::vector<void*> dsts(n);
  std::vector<const void*> srcs(n);
  std::vector<size_t> sizes(n);
  for (size_t i = 0; i < n; ++i) {
    dsts[i] = copies[i].dst;
    srcs[i] = copies[i].src;
    sizes[i] = copies[i].size;
  }
  check(cumem_copy_batch_raw(stream.get(), n, dsts.data(), nullptr, srcs.data(), nullptr,
                             sizes.data(), detail::options_or_null(options), options.size()));
}

// Batched managed-memory operations (cuda.core's prefetch_batch,
// discard_batch, discard_prefetch_batch): `locations` one for every buffer
// or one each.
inline void prefetch_batch(StreamRef stream, const std::vector<const Buffer*>& buffers,
                           const std::vector<cumem_location_t>& locations) {
  const std::vector<cumem_buffer_t*> b = detail::handles(buffers);
  check(cumem_prefetch_batch(stream.get(), b.size(), b.data(), locations.data(),
                             locations.size()));
}
inline void prefetch_batch(StreamRef stream, const std::vector<const Buffer*>& buffers,
                           cumem_location_t location) {
  prefetch_batch(stream, buffers, std::vector<cumem_location_t>{location});
}
inline void discard_batch(StreamRef stream, const std::vector<const Buffer*>& buffers) {
  const std::vector<cumem_buffer_t*> b = detail::handles(buffers);
  check(cumem_discard_batch(stream.get(), b.size(), b.data()));
}
inline void discard_prefetch_batch(StreamRef stream, const std::vector<const Buffer*>& buffers,
                                   const std::vector<cumem_location_t>& locations) {
  const std::vector<cumem_buffer_t*> b = detail::handles(buffers);
  check(cumem_discard_prefetch_batch(stream.get(), b.size(), b.data(), locations.data(),
                                     locations.size()));
}
inline void discard_prefetch_batch(StreamRef stream, const std::vector<const Buffer*>& buffers,
                                   cumem_location_t location) {
  discard_prefetch_batch(stream, buffers, std::vector<cumem_location_t>{location});
}

// How batches went (the driver's batch calls, or the loop), process-wide.
inline cumem_batch_statistics_t batch_statistics() {
  cumem_batch_statistics_t s = CUMEM_BATCH_STATISTICS_INIT;
  check(cumem_batch_get_statistics(&s));
  return s;
}

// ---------------------------------------------------------------------------
// Seeing the memory (cumem.h): the history, snapshots, statistics as JSON,
// the process's summary
// ---------------------------------------------------------------------------

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#endif
inline cumem_memory_history_options_t memory_history_options() noexcept {
  return CUMEM_MEMORY_HISTORY_OPTIONS_INIT;
}
namespace detail {
template <>
inline cumem_snapshot_totals_t init() noexcept { return CUMEM_SNAPSHOT_TOTALS_INIT; }
template <>
inline cumem_snapshot_resource_t init() noexcept { return CUMEM_SNAPSHOT_RESOURCE_INIT; }
template <>
inline cumem_snapshot_segment_t init() noexcept { return CUMEM_SNAPSHOT_SEGMENT_INIT; }
template <>
inline cumem_snapshot_block_t init() noexcept { return CUMEM_SNAPSHOT_BLOCK_INIT; }
template <>
inline cumem_memory_event_t init() noexcept { return CUMEM_MEMORY_EVENT_INIT; }
template <>
inline cumem_stack_frame_t init() noexcept { return CUMEM_STACK_FRAME_INIT; }

// The text of a call that writes like snprintf, asked until it fits (the
// text may grow between two calls).
template <class Fn>
std::string snprintf_text(Fn&& fn) {
  size_t n = 0;
  check(fn(nullptr, 0, &n));
  std::string text;
  do {
    text.assign(n + 1, '\0');
    check(fn(&text[0], text.size(), &n));
  } while (n + 1 > text.size());
  text.resize(n);
  return text;
}
}  // namespace detail
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

// The memory history (PyTorch's _record_memory_history), process-wide.
inline void memory_history_start(const cumem_memory_history_options_t& options = memory_history_options()) {
  check(cumem_memory_history_start(&options));
}
inline void memory_history_stop() { check(cumem_memory_history_stop()); }

// A snapshot of memory: of a resource and its upstreams, or of the process.
class Snapshot : public detail::Handle<Snapshot, cumem_snapshot_t, cumem_snapshot_retain,
                                       cumem_snapshot_release> {
 public:
  using Handle::Handle;

  static Snapshot take(const Resource& resource) { return take_impl(resource.get()); }
  // Every live resource of the process.
  static Snapshot take() { return take_impl(nullptr); }

  cumem_snapshot_totals_t totals() const {
    cumem_snapshot_totals_t t = detail::init<cumem_snapshot_totals_t>();
    check(cumem_snapshot_get_totals(get(), &t));
    return t;
  }
  std::vector<cumem_snapshot_resource_t> resources() const {
    return list<cumem_snapshot_resource_t>(totals().resource_count, cumem_snapshot_get_resource);
  }
  std::vector<cumem_snapshot_segment_t> segments() const {
    return list<cumem_snapshot_segment_t>(totals().segment_count, cumem_snapshot_get_segment);
  }
  std::vector<cumem_snapshot_block_t> blocks() const {
    return list<cumem_snapshot_block_t>(totals().block_count, cumem_snapshot_get_block);
  }
  // The blocks of one segment, by address.
  std::vector<cumem_snapshot_block_t> blocks(const cumem_snapshot_segment_t& segment) const {
    std::vector<cumem_snapshot_block_t> out;
    out.reserve(static_cast<size_t>(segment.block_count));
    for (uint64_t i = 0; i < segment.block_count; ++i) {
      cumem_snapshot_block_t b = detail::init<cumem_snapshot_block_t>();
      check(cumem_snapshot_get_block(get(), segment.first_block + i, &b));
      out.push_back(b);
    }
    return out;
  }
  std::vector<cumem_memory_event_t> events() const {
    return list<cumem_memory_event_t>(totals().event_count, cumem_snapshot_get_event);
  }
  // The frames of a block's or an event's stack, innermost first; none for 0.
  std::vector<cumem_stack_frame_t> frames(uint32_t stack_id) const {
    std::vector<cumem_stack_frame_t> out;
    if (stack_id == 0) return out;
    cumem_stack_frame_t f = detail::init<cumem_stack_frame_t>();
    check(cumem_snapshot_get_frame(get(), stack_id, 0, &f));
    out.push_back(f);
    for (uint32_t i = 1; i < f.depth; ++i) {
      cumem_stack_frame_t next = detail::init<cumem_stack_frame_t>();
      check(cumem_snapshot_get_frame(get(), stack_id, i, &next));
      out.push_back(next);
    }
    return out;
  }
  // The JSON (schema "cumem.snapshot" version 1), valid while the snapshot lives.
  std::string_view json() const {
    const char* text = nullptr;
    size_t n = 0;
    check(cumem_snapshot_to_json(get(), &text, &n));
    return std::string_view(text, n);
  }
  void write_json(const std::string& path) const {
    check(cumem_snapshot_write_json(get(), path.c_str()));
  }

 private:
  static Snapshot take_impl(const cumem_resource_t* resource) {
    cumem_snapshot_t* s = nullptr;
    check(cumem_snapshot_take(resource, &s));
    return Snapshot(s);
  }
  template <class T>
  std::vector<T> list(uint64_t count,
                      cumem_status_t (*fn)(const cumem_snapshot_t*, uint64_t, T*)) const {
    std::vector<T> out;
    out.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      T item = detail::init<T>();
      check(fn(get(), i, &item));
      out.push_back(item);
    }
    return out;
  }
};

inline std::string Resource::statistics_json() const {
  return detail::snprintf_text([this](char* b, size_t c, size_t* n) {
    return cumem_resource_statistics_json(get(), b, c, n);
  });
}
// Every live resource's statistics as JSON.
inline std::string statistics_json() {
  return detail::snprintf_text(
      [](char* b, size_t c, size_t* n) { return cumem_resource_statistics_json(nullptr, b, c, n); });
}
// The process's memory in text, as torch.cuda.memory_summary().
inline std::string memory_summary() { return detail::snprintf_text(cumem_memory_summary); }

static_assert(sizeof(Buffer) == sizeof(void*), "owners are one pointer wide");
static_assert(sizeof(AllocationHandle) == sizeof(void*), "owners are one pointer wide");
static_assert(sizeof(VirtualIpcHandle) == sizeof(void*), "owners are one pointer wide");
static_assert(sizeof(StreamRef) == sizeof(void*), "views are one pointer wide");
static_assert(sizeof(Snapshot) == sizeof(void*), "owners are one pointer wide");

}  // namespace cumem

#endif  // CUMEM_CUMEM_HPP
