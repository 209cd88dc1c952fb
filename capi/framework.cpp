// Native-stream raw allocation, and the framework allocator entry points
// (PyTorch's CUDAPluggableAllocator, CuPy's CFunctionAllocator).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "capi.hpp"

#include "../src/nvtx.hpp"
#include "../src/framework.hpp"
#include "../src/log.hpp"
#include "../src/native_stream.hpp"
#include "../src/resources/resource.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {

CUstream as_stream(void* native) { return static_cast<CUstream>(native); }

// The entry points frameworks call cannot return a status: the message goes
// to cumem_last_error_message() and, unless CUMEM_FRAMEWORK_QUIET is set to
// something other than 0, to the log at error (stderr by default), where a
// framework user will see it.
void report(cumem_status_t status) noexcept {
  if (status == CUMEM_SUCCESS || !log::enabled(log::Level::error)) return;
  const char* quiet = std::getenv("CUMEM_FRAMEWORK_QUIET");
  if (quiet && *quiet && std::strcmp(quiet, "0") != 0) return;
  char message[16384 + 64];
  std::snprintf(message, sizeof message, "%s [%s]", cumem_last_error_message(),
                cumem_status_string(status));
  log::write(log::Level::error, message);
}

}  // namespace

// The work of the four entry points, named as they are so that messages
// read "cumem_torch_alloc: ...".
namespace impl {

cumem_status_t cumem_torch_alloc(size_t size, int device, void* stream, void** out_ptr) {
  CUMEM_TRY
  *out_ptr = framework::allocate(device, size, as_stream(stream), nullptr);
  CUMEM_CATCH
}

cumem_status_t cumem_torch_free(void* ptr, size_t size, void* stream) {
  CUMEM_TRY
  framework::deallocate(ptr, size, as_stream(stream), true);
  CUMEM_CATCH
}

cumem_status_t cumem_cupy_malloc(void* param, size_t size, int device, void** out_ptr) {
  CUMEM_TRY
  Resource* r = param ? &object(static_cast<cumem_resource_t*>(param), "param") : nullptr;
  *out_ptr = framework::allocate(device, size, nullptr, r);
  CUMEM_CATCH
}

cumem_status_t cumem_cupy_free(void* ptr) {
  CUMEM_TRY
  framework::deallocate(ptr, SIZE_MAX, nullptr, false);
  CUMEM_CATCH
}

}  // namespace impl

CUMEM_EXPORT cumem_status_t cumem_resource_allocate_native(cumem_resource_t* resource,
                                                           size_t size, void* native_stream,
                                                           void** out_ptr) {
  const nvtx::Range range(nvtx::Op::resource_allocate_native);
  CUMEM_TRY
  Resource& r = object(resource, "resource");
  out(out_ptr, "out_ptr");
  const BorrowedStream s(r.device(), as_stream(native_stream));  // for this call only
  *out_ptr = r.allocate_raw(size, s.get());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_deallocate_native(cumem_resource_t* resource,
                                                             void* ptr, size_t size,
                                                             void* native_stream) {
  const nvtx::Range range(nvtx::Op::resource_deallocate_native);
  CUMEM_TRY
  Resource& r = object(resource, "resource");
  const BorrowedStream s(r.device(), as_stream(native_stream));  // for this call only
  r.deallocate_raw(ptr, size, s.get());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_framework_set_resource(int32_t device,
                                                         cumem_resource_t* resource) {
  CUMEM_TRY
  Resource* r = optional(resource, "resource");
  framework::set_resource(device, Ref<Resource>::share(r));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_framework_get_resource(int32_t device,
                                                         cumem_resource_t** out_resource) {
  CUMEM_TRY
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(framework::get_resource(device));
  CUMEM_CATCH
}

CUMEM_EXPORT void* cumem_torch_alloc(size_t size, int device, void* stream) {
  const nvtx::Range range(nvtx::Op::torch_alloc);
  void* ptr = nullptr;
  const cumem_status_t s = impl::cumem_torch_alloc(size, device, stream, &ptr);
  report(s);
  return s == CUMEM_SUCCESS ? ptr : nullptr;
}

CUMEM_EXPORT void cumem_torch_free(void* ptr, size_t size, int device, void* stream) {
  const nvtx::Range range(nvtx::Op::torch_free);
  (void)device;  // the record knows the resource, whatever the device
  report(impl::cumem_torch_free(ptr, size, stream));
}

CUMEM_EXPORT void* cumem_cupy_malloc(void* param, size_t size, int device_id) {
  const nvtx::Range range(nvtx::Op::cupy_malloc);
  void* ptr = nullptr;
  const cumem_status_t s = impl::cumem_cupy_malloc(param, size, device_id, &ptr);
  report(s);
  return s == CUMEM_SUCCESS ? ptr : nullptr;
}

CUMEM_EXPORT void cumem_cupy_free(void* param, void* ptr, int device_id) {
  const nvtx::Range range(nvtx::Op::cupy_free);
  (void)param;
  (void)device_id;
  report(impl::cumem_cupy_free(ptr));
}

CUMEM_EXPORT cumem_status_t cumem_framework_configure(const char* configuration) {
  CUMEM_TRY
  if (!configuration) null_argument("configuration");
  framework::configure(configuration);
  CUMEM_CATCH
}
