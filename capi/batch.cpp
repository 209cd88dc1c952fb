// Batches: cumem_copy_batch(_raw), cumem_prefetch_batch, cumem_discard_batch,
// cumem_discard_prefetch_batch, cumem_batch_get_statistics.
#include <vector>

#include "capi.hpp"

#include "../src/batch.hpp"
#include "../src/buffer.hpp"
#include "../src/nvtx.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {

const cumem_copy_options_t default_copy_options = CUMEM_COPY_OPTIONS_INIT;

Location to_location(cumem_location_t l) {
  return Location{static_cast<LocationType>(l.type), l.id};
}

// An array of `count` entries must be there when count > 0.
template <class T>
void require_array(const T* array, size_t count, const char* name) {
  if (count > 0 && !array)
    fail(Status::invalid_argument, std::string("argument '") + name +
                                       "' must not be NULL with a count of " +
                                       std::to_string(count));
}

// The buffer behind array[i], checked as every handle is; the message names
// the element ('dsts[3]'), built only when the check fails.
template <class Handle>
auto* buffer_at(Handle* const* array, size_t i, const char* name) {
  Handle* h = array[i];
  if (!h || Object::tag_at(h) != Tag::buffer ||
      !reinterpret_cast<const Buffer*>(h)->user_live()) {
    const std::string element = std::string(name) + "[" + std::to_string(i) + "]";
    return &object(h, element.c_str());  // throws the usual message
  }
  using T = std::conditional_t<std::is_const_v<Handle>, const Buffer, Buffer>;
  return reinterpret_cast<T*>(h);
}

template <class Handle>
auto buffers_of(Handle* const* array, size_t count, const char* name) {
  using T = std::conditional_t<std::is_const_v<Handle>, const Buffer*, Buffer*>;
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = buffer_at(array, i, name);
  return out;
}

// The caller's options array: num_options structs of one struct_size,
// which is also the array's stride (a caller built with an older cumem.h
// has smaller structs), each read under the struct_size rules.
std::vector<CopyOptions> read_copy_options(const cumem_copy_options_t* options,
                                           size_t num_options) {
  std::vector<CopyOptions> out;
  if (!options) {
    if (num_options != 0)
      fail(Status::invalid_argument, "options is NULL but num_options is " +
                                         std::to_string(num_options) +
                                         "; give num_options 0 for the defaults");
    return out;
  }
  if (num_options == 0)
    fail(Status::invalid_argument,
         "options is given but num_options is 0; give 1 (one set for every copy) or the copy "
         "count (one per copy)");
  const auto* bytes = reinterpret_cast<const unsigned char*>(options);
  const uint32_t stride = options->struct_size;
  if (stride % alignof(cumem_copy_options_t) != 0)
    fail(Status::invalid_argument,
         "options[0].struct_size " + std::to_string(stride) + " is not a multiple of " +
             std::to_string(alignof(cumem_copy_options_t)) +
             ", so it cannot be the stride of an array of cumem_copy_options_t");
  out.reserve(num_options);
  for (size_t i = 0; i < num_options; ++i) {
    const auto* element = reinterpret_cast<const cumem_copy_options_t*>(bytes + i * stride);
    if (element->struct_size != stride)
      fail(Status::invalid_argument,
           "options[" + std::to_string(i) + "].struct_size is " +
               std::to_string(element->struct_size) + " but options[0]'s is " +
               std::to_string(stride) +
               "; every struct of the array has the same struct_size, the array's stride");
    const std::string name = "options[" + std::to_string(i) + "]";
    const cumem_copy_options_t o = read_options(element, default_copy_options, name.c_str());
    CopyOptions c;
    c.src_access_order = static_cast<SrcAccessOrder>(o.src_access_order);
    c.src_location_hint = to_location(o.src_location_hint);
    c.dst_location_hint = to_location(o.dst_location_hint);
    c.overlap_mode = static_cast<OverlapMode>(o.overlap_mode);
    out.push_back(c);
  }
  return out;
}

std::vector<Location> read_locations(const cumem_location_t* locations, size_t num_locations) {
  std::vector<Location> out(num_locations);
  for (size_t i = 0; i < num_locations; ++i) out[i] = to_location(locations[i]);
  return out;
}

}  // namespace

CUMEM_EXPORT void cumem_copy_options_init(cumem_copy_options_t* options) {
  if (options) *options = default_copy_options;
}

CUMEM_EXPORT cumem_status_t cumem_copy_batch(const cumem_stream_t* stream, size_t count,
                                             cumem_buffer_t* const* dsts,
                                             const size_t* dst_offsets,
                                             const cumem_buffer_t* const* srcs,
                                             const size_t* src_offsets, const size_t* sizes,
                                             const cumem_copy_options_t* options,
                                             size_t num_options) {
  const nvtx::Range range(nvtx::Op::copy_batch);
  CUMEM_TRY
  const Stream* s = optional(stream, "stream");
  require_array(dsts, count, "dsts");
  require_array(srcs, count, "srcs");
  const std::vector<Buffer*> d = buffers_of(dsts, count, "dsts");
  const std::vector<const Buffer*> sr = buffers_of(srcs, count, "srcs");
  const std::vector<CopyOptions> o = read_copy_options(options, num_options);
  BufferCopies copies;
  copies.dsts = d.data();
  copies.dst_offsets = dst_offsets;
  copies.srcs = sr.data();
  copies.src_offsets = src_offsets;
  copies.sizes = sizes;
  copy_batch(s, count, copies, o.empty() ? nullptr : o.data(), o.size());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_copy_batch_raw(const cumem_stream_t* stream, size_t count,
                                                 void* const* dsts, const size_t* dst_offsets,
                                                 const void* const* srcs,
                                                 const size_t* src_offsets, const size_t* sizes,
                                                 const cumem_copy_options_t* options,
                                                 size_t num_options) {
  const nvtx::Range range(nvtx::Op::copy_batch_raw);
  CUMEM_TRY
  const Stream* s = optional(stream, "stream");
  require_array(dsts, count, "dsts");
  require_array(srcs, count, "srcs");
  require_array(sizes, count, "sizes");
  const std::vector<CopyOptions> o = read_copy_options(options, num_options);
  PointerCopies copies;
  copies.dsts = dsts;
  copies.dst_offsets = dst_offsets;
  copies.srcs = srcs;
  copies.src_offsets = src_offsets;
  copies.sizes = sizes;
  copy_batch(s, count, copies, o.empty() ? nullptr : o.data(), o.size());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_prefetch_batch(const cumem_stream_t* stream, size_t count,
                                                 cumem_buffer_t* const* buffers,
                                                 const cumem_location_t* locations,
                                                 size_t num_locations) {
  CUMEM_TRY
  const Stream* s = optional(stream, "stream");
  require_array(buffers, count, "buffers");
  if (count > 0 && !locations) null_argument("locations");
  const std::vector<Buffer*> b = buffers_of(buffers, count, "buffers");
  const std::vector<Location> l = read_locations(locations, count > 0 ? num_locations : 0);
  prefetch_batch(s, count, b.data(), l.data(), l.size());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_discard_batch(const cumem_stream_t* stream, size_t count,
                                                cumem_buffer_t* const* buffers) {
  CUMEM_TRY
  const Stream* s = optional(stream, "stream");
  require_array(buffers, count, "buffers");
  const std::vector<Buffer*> b = buffers_of(buffers, count, "buffers");
  discard_batch(s, count, b.data());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_discard_prefetch_batch(const cumem_stream_t* stream,
                                                         size_t count,
                                                         cumem_buffer_t* const* buffers,
                                                         const cumem_location_t* locations,
                                                         size_t num_locations) {
  CUMEM_TRY
  const Stream* s = optional(stream, "stream");
  require_array(buffers, count, "buffers");
  if (count > 0 && !locations) null_argument("locations");
  const std::vector<Buffer*> b = buffers_of(buffers, count, "buffers");
  const std::vector<Location> l = read_locations(locations, count > 0 ? num_locations : 0);
  discard_prefetch_batch(s, count, b.data(), l.data(), l.size());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_batch_get_statistics(cumem_batch_statistics_t* stats) {
  CUMEM_TRY
  check_out_struct(stats, "stats");
  const BatchStatistics b = batch_statistics();
  cumem_batch_statistics_t v = CUMEM_BATCH_STATISTICS_INIT;
  copy_fields(v, b);
  write_out_struct(stats, v);
  CUMEM_CATCH
}
