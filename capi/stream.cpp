// cumem_stream_* entry points.
#include "capi.hpp"

#include "../src/capture.hpp"
#include "../src/event.hpp"
#include "../src/stream.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {
const cumem_stream_options_t default_stream_options = CUMEM_STREAM_OPTIONS_INIT;
}  // namespace

CUMEM_EXPORT void cumem_stream_options_init(cumem_stream_options_t* options) {
  if (options) *options = default_stream_options;
}

CUMEM_EXPORT cumem_status_t cumem_stream_create(const cumem_device_t* device,
                                                const cumem_stream_options_t* options,
                                                cumem_stream_t** out_stream) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_stream, "out_stream");
  const auto o = read_options(options, default_stream_options, "options");
  if (o.priority_mode != CUMEM_PRIORITY_CLAMP && o.priority_mode != CUMEM_PRIORITY_REJECT)
    fail(Status::invalid_argument, "options->priority_mode " +
                                       std::to_string(static_cast<int>(o.priority_mode)) +
                                       " is neither CUMEM_PRIORITY_CLAMP nor CUMEM_PRIORITY_REJECT");
  *out_stream = to_handle<cumem_stream_t>(
      Stream::create(std::move(d), /*nonblocking=*/o.blocking == 0, o.priority,
                     o.priority_mode == CUMEM_PRIORITY_REJECT ? PriorityMode::reject
                                                              : PriorityMode::clamp));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_wrap(const cumem_device_t* device, void* native_stream,
                                              cumem_stream_t** out_stream) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_stream, "out_stream");
  if (!native_stream) null_argument("native_stream");
  *out_stream = to_handle<cumem_stream_t>(
      Stream::wrap(std::move(d), static_cast<CUstream>(native_stream)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_legacy_default(const cumem_device_t* device,
                                                        cumem_stream_t** out_stream) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_stream, "out_stream");
  *out_stream = to_handle<cumem_stream_t>(Stream::legacy_default(std::move(d)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_per_thread_default(const cumem_device_t* device,
                                                            cumem_stream_t** out_stream) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_stream, "out_stream");
  *out_stream = to_handle<cumem_stream_t>(Stream::per_thread_default(std::move(d)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_retain(cumem_stream_t* stream) {
  CUMEM_TRY
  retain_handle(stream, "stream");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_release(cumem_stream_t* stream) {
  CUMEM_TRY
  release_handle(stream, "stream");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_native(const cumem_stream_t* stream, void** out_native) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  out(out_native, "out_native");
  *out_native = static_cast<void*>(s.native());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_device(const cumem_stream_t* stream,
                                                cumem_device_t** out_device) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  out(out_device, "out_device");
  *out_device = share_handle<cumem_device_t>(s.device());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_priority(const cumem_stream_t* stream,
                                                  int32_t* out_priority) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  out(out_priority, "out_priority");
  *out_priority = s.priority();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_synchronize(const cumem_stream_t* stream) {
  CUMEM_TRY
  object(stream, "stream").synchronize();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_begin_capture(const cumem_stream_t* stream,
                                                       cumem_capture_mode_t mode) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  if (mode != CUMEM_CAPTURE_MODE_GLOBAL && mode != CUMEM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CUMEM_CAPTURE_MODE_RELAXED)
    fail(Status::invalid_argument, "argument 'mode' is " + std::to_string(static_cast<int>(mode)) +
                                       ", not a cumem_capture_mode_t (0, 1 or 2)");
  begin_capture(s, static_cast<CUstreamCaptureMode>(mode));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_end_capture(const cumem_stream_t* stream,
                                                     void** out_graph) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  out(out_graph, "out_graph");
  *out_graph = nullptr;
  *out_graph = end_capture(s);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_get_capture_info(const cumem_stream_t* stream,
                                                          cumem_capture_info_t* info) {
  CUMEM_TRY
  const Stream* s = optional(stream, "stream");
  check_out_struct(info, "info");
  const CaptureInfo c = capture_info(s);
  cumem_capture_info_t v = CUMEM_CAPTURE_INFO_INIT;
  copy_fields(v, c);
  write_out_struct(info, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_query(const cumem_stream_t* stream,
                                               cumem_bool_t* out_done) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  out(out_done, "out_done");
  *out_done = to_bool(s.query());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_wait_event(const cumem_stream_t* stream,
                                                    const cumem_event_t* event) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  s.wait(object(event, "event").native());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_stream_wait_stream(const cumem_stream_t* stream,
                                                     const cumem_stream_t* other) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  s.wait(object(other, "other"));
  CUMEM_CATCH
}
