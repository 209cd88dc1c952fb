// cumem_buffer_to_dlpack / _from_dlpack entry points.
#include <cumem/dlpack.h>

#include "capi.hpp"

#include "../src/buffer.hpp"
#include "../src/dlpack/dlpack.hpp"

using namespace cumem::core;
using namespace cumem::capi;

static_assert(CUMEM_DLPACK_MAX_NDIM == dlpack::kMaxNdim, "");

namespace {

constexpr cumem_dlpack_options_t default_dlpack_options = CUMEM_DLPACK_OPTIONS_INIT;

dlpack::ExportOptions export_options(const cumem_dlpack_options_t* user) {
  const cumem_dlpack_options_t o = read_options(user, default_dlpack_options, "options");
  if (o.reserved0 != 0)
    fail(Status::invalid_argument, "options.reserved0 is " + std::to_string(o.reserved0) +
                                       "; it must be 0");
  dlpack::ExportOptions e;
  if (o.dtype_bits != 0 || o.dtype_lanes != 0 || o.dtype_code != 0) {
    if (o.dtype_bits == 0)
      fail(Status::invalid_argument,
           "options.dtype_bits is 0 but dtype_code or dtype_lanes is set; set all three "
           "(or none, for bytes)");
    e.dtype = DLDataType{o.dtype_code, o.dtype_bits, o.dtype_lanes};
  }
  e.ndim = o.ndim;
  e.shape = o.shape;
  e.strides = o.strides;
  e.byte_offset = o.byte_offset;
  e.device_type = o.device_type;
  e.read_only = o.read_only != CUMEM_FALSE;
  return e;
}

}  // namespace

CUMEM_EXPORT void cumem_dlpack_options_init(cumem_dlpack_options_t* options) {
  if (options) *options = default_dlpack_options;
}

CUMEM_EXPORT cumem_status_t cumem_buffer_to_dlpack(cumem_buffer_t* buffer,
                                                   const cumem_dlpack_options_t* options,
                                                   DLManagedTensorVersioned** out_tensor) {
  CUMEM_TRY
  Ref<Buffer> b = ref(buffer, "buffer");
  out(out_tensor, "out_tensor");
  const dlpack::ExportOptions o = export_options(options);
  *out_tensor = dlpack::export_versioned(std::move(b), o);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_to_dlpack_legacy(cumem_buffer_t* buffer,
                                                          const cumem_dlpack_options_t* options,
                                                          DLManagedTensor** out_tensor) {
  CUMEM_TRY
  Ref<Buffer> b = ref(buffer, "buffer");
  out(out_tensor, "out_tensor");
  const dlpack::ExportOptions o = export_options(options);
  *out_tensor = dlpack::export_legacy(std::move(b), o);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_from_dlpack(DLManagedTensorVersioned* tensor,
                                                     cumem_bool_t allow_read_only,
                                                     cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  if (!tensor) null_argument("tensor");
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(
      dlpack::import_versioned(tensor, allow_read_only != CUMEM_FALSE));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_from_dlpack_legacy(DLManagedTensor* tensor,
                                                            cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  if (!tensor) null_argument("tensor");
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(dlpack::import_legacy(tensor));
  CUMEM_CATCH
}
