// cumem_event_* entry points.
#include "capi.hpp"

#include <cstring>

#include "../src/event.hpp"
#include "../src/stream.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {
const cumem_event_options_t default_event_options = CUMEM_EVENT_OPTIONS_INIT;
}

CUMEM_EXPORT void cumem_event_options_init(cumem_event_options_t* options) {
  if (options) *options = default_event_options;
}

CUMEM_EXPORT cumem_status_t cumem_event_create(const cumem_device_t* device,
                                               const cumem_event_options_t* options,
                                               cumem_event_t** out_event) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_event, "out_event");
  const auto o = read_options(options, default_event_options, "options");
  *out_event = to_handle<cumem_event_t>(
      Event::create(std::move(d), o.enable_timing != 0, o.blocking_sync != 0,
                    o.interprocess != 0));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_retain(cumem_event_t* event) {
  CUMEM_TRY
  retain_handle(event, "event");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_release(cumem_event_t* event) {
  CUMEM_TRY
  release_handle(event, "event");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_record(const cumem_event_t* event,
                                               const cumem_stream_t* stream) {
  CUMEM_TRY
  const Event& e = object(event, "event");
  e.record(optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_synchronize(const cumem_event_t* event) {
  CUMEM_TRY
  object(event, "event").synchronize();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_query(const cumem_event_t* event, cumem_bool_t* out_done) {
  CUMEM_TRY
  const Event& e = object(event, "event");
  out(out_done, "out_done");
  *out_done = to_bool(e.query());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_elapsed_ms(const cumem_event_t* start,
                                                   const cumem_event_t* end, float* out_ms) {
  CUMEM_TRY
  const Event& s = object(start, "start");
  const Event& e = object(end, "end");
  out(out_ms, "out_ms");
  *out_ms = Event::elapsed_ms(s, e);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_native(const cumem_event_t* event, void** out_native) {
  CUMEM_TRY
  const Event& e = object(event, "event");
  out(out_native, "out_native");
  *out_native = static_cast<void*>(e.native());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_get_ipc_handle(const cumem_event_t* event,
                                                       cumem_ipc_event_handle_t* out_handle) {
  CUMEM_TRY
  const Event& e = object(event, "event");
  out(out_handle, "out_handle");
  uint8_t bytes[64];
  e.get_ipc_handle(bytes);
  std::memcpy(out_handle->bytes, bytes, sizeof bytes);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_event_from_ipc_handle(const cumem_device_t* device,
                                                        const cumem_ipc_event_handle_t* handle,
                                                        cumem_event_t** out_event) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  if (!handle) null_argument("handle");
  out(out_event, "out_event");
  *out_event = to_handle<cumem_event_t>(Event::from_ipc_handle(std::move(d), handle->bytes));
  CUMEM_CATCH
}
