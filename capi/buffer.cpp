// cumem_buffer_* entry points.
#include "capi.hpp"

#include "../src/nvtx.hpp"
#include "../src/buffer.hpp"
#include "../src/resources/resource.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {
Location to_location(cumem_location_t l) {
  return Location{static_cast<LocationType>(l.type), l.id};
}
}  // namespace

CUMEM_EXPORT cumem_status_t cumem_buffer_retain(cumem_buffer_t* buffer) {
  CUMEM_TRY
  retain_handle(buffer, "buffer");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_release(cumem_buffer_t* buffer) {
  CUMEM_TRY
  release_handle(buffer, "buffer");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_ptr(const cumem_buffer_t* buffer, void** out_ptr) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_ptr, "out_ptr");
  *out_ptr = b.ptr();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_size(const cumem_buffer_t* buffer, size_t* out_size) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_size, "out_size");
  *out_size = b.size();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_resource(const cumem_buffer_t* buffer,
                                                  cumem_resource_t** out_resource) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_resource, "out_resource");
  const Ref<Resource>& r = b.resource();
  *out_resource = r ? share_handle<cumem_resource_t>(*r) : nullptr;
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_device_id(const cumem_buffer_t* buffer,
                                                   int32_t* out_device_id) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_device_id, "out_device_id");
  *out_device_id = b.info().device_id;
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_get_info(const cumem_buffer_t* buffer,
                                                  cumem_buffer_info_t* info) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  check_out_struct(info, "info");
  const BufferInfo i = b.info();
  cumem_buffer_info_t v = CUMEM_BUFFER_INFO_INIT;
  copy_fields(v, i);
  write_out_struct(info, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_is_closed(const cumem_buffer_t* buffer,
                                                   cumem_bool_t* out_closed) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_closed, "out_closed");
  *out_closed = to_bool(b.is_closed());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_set_deallocation_stream(cumem_buffer_t* buffer,
                                                                 const cumem_stream_t* stream) {
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  const Stream* s = optional(stream, "stream");
  b.set_deallocation_stream(Ref<Stream>::share(const_cast<Stream*>(s)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_close(cumem_buffer_t* buffer, const cumem_stream_t* stream) {
  const nvtx::Range range(nvtx::Op::buffer_close);
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  b.close(optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_copy_to(const cumem_buffer_t* src, cumem_buffer_t* dst,
                                                 const cumem_stream_t* stream) {
  const nvtx::Range range(nvtx::Op::buffer_copy_to);
  CUMEM_TRY
  const Buffer& s = object(src, "src");
  Buffer& d = object(dst, "dst");
  const Stream* st = optional(stream, "stream");
  if (s.size() != d.size())
    fail(Status::size_mismatch, "the source has " + std::to_string(s.size()) +
                                    " bytes but the destination " + std::to_string(d.size()) +
                                    "; use cumem_buffer_copy_region for part of a buffer");
  Buffer::copy(d, 0, s, 0, s.size(), st);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_copy_from(cumem_buffer_t* dst, const cumem_buffer_t* src,
                                                   const cumem_stream_t* stream) {
  const nvtx::Range range(nvtx::Op::buffer_copy_from);
  CUMEM_TRY
  Buffer& d = object(dst, "dst");
  const Buffer& s = object(src, "src");
  const Stream* st = optional(stream, "stream");
  if (s.size() != d.size())
    fail(Status::size_mismatch, "the destination has " + std::to_string(d.size()) +
                                    " bytes but the source " + std::to_string(s.size()) +
                                    "; use cumem_buffer_copy_region for part of a buffer");
  Buffer::copy(d, 0, s, 0, s.size(), st);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_copy_region(cumem_buffer_t* dst, size_t dst_offset,
                                                     const cumem_buffer_t* src, size_t src_offset,
                                                     size_t length, const cumem_stream_t* stream) {
  const nvtx::Range range(nvtx::Op::buffer_copy_region);
  CUMEM_TRY
  Buffer& d = object(dst, "dst");
  const Buffer& s = object(src, "src");
  Buffer::copy(d, dst_offset, s, src_offset, length, optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_fill(cumem_buffer_t* buffer, uint32_t value,
                                              uint32_t width, const cumem_stream_t* stream) {
  const nvtx::Range range(nvtx::Op::buffer_fill);
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  b.fill(value, width, optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_slice(cumem_buffer_t* buffer, size_t offset,
                                               size_t length, cumem_buffer_t** out_slice) {
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  out(out_slice, "out_slice");
  *out_slice = to_handle<cumem_buffer_t>(b.slice(offset, length));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_wrap_owned(cumem_resource_t* resource, void* ptr,
                                                    size_t size, cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  Resource& r = object(resource, "resource");
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(Buffer::wrap_owned(Ref<Resource>::share(&r), ptr, size));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_wrap(void* ptr, size_t size, cumem_release_fn release_fn,
                                              void* user_data, cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(Buffer::wrap(ptr, size, release_fn, user_data));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_register_host(const cumem_device_t* device, void* ptr,
                                                       size_t size, cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(Buffer::register_host(std::move(d), ptr, size));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_prefetch(cumem_buffer_t* buffer, cumem_location_t location,
                                                  const cumem_stream_t* stream) {
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  b.prefetch(to_location(location), optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_advise(cumem_buffer_t* buffer, cumem_advice_t advice,
                                                cumem_location_t location) {
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  b.advise(static_cast<Advice>(advice), to_location(location));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_discard(cumem_buffer_t* buffer,
                                                 const cumem_stream_t* stream) {
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  b.discard(optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_discard_prefetch(cumem_buffer_t* buffer,
                                                          cumem_location_t location,
                                                          const cumem_stream_t* stream) {
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  b.discard_prefetch(to_location(location), optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_get_last_prefetch_location(
    const cumem_buffer_t* buffer, cumem_location_t* out_location) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_location, "out_location");
  const Location l = b.last_prefetch_location();
  *out_location = cumem_location_t{static_cast<cumem_location_type_t>(l.type), l.id};
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_copy_to_new(const cumem_buffer_t* src,
                                                     const cumem_stream_t* stream,
                                                     cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  const Buffer& s = object(src, "src");
  const Stream* st = optional(stream, "stream");
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(s.copy_to_new(st));
  CUMEM_CATCH
}
