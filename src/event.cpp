#include "event.hpp"

#include <cstring>

#include "capture.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "stream.hpp"
#include "log.hpp"

namespace cumem::core {

Ref<Event> Event::create(Ref<Device> device, bool enable_timing, bool blocking_sync,
                         bool interprocess) {
  if (interprocess && enable_timing)
    fail(Status::invalid_argument, "an interprocess event cannot record timing: set "
                                   "enable_timing to false");
  unsigned flags = 0;
  if (!enable_timing) flags |= CU_EVENT_DISABLE_TIMING;
  if (blocking_sync) flags |= CU_EVENT_BLOCKING_SYNC;
  if (interprocess) flags |= CU_EVENT_INTERPROCESS;
  ScopedContext scope(*device);
  CUevent handle = nullptr;
  CUMEM_CU(cuEventCreate, (&handle, flags), "creating an event on " + device->describe());
  return Ref<Event>::adopt(new Event(std::move(device), handle, enable_timing, interprocess));
}

Ref<Event> Event::from_ipc_handle(Ref<Device> device, const uint8_t (&bytes)[64]) {
  CUipcEventHandle handle{};
  static_assert(sizeof handle.reserved == 64, "CUipcEventHandle is 64 bytes");
  std::memcpy(handle.reserved, bytes, sizeof handle.reserved);
  ScopedContext scope(*device);
  CUevent event = nullptr;
  const CUresult r = CUMEM_CU_RESULT(cuIpcOpenEventHandle, (&event, handle));
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_HANDLE)
    fail(Status::invalid_argument, "the bytes are not an interprocess event handle the driver "
                                   "can open on " + device->describe() + " (" +
                                       driver::describe(r) + ")");
  driver::check(r, "cuIpcOpenEventHandle", "opening an interprocess event");
  return Ref<Event>::adopt(new Event(std::move(device), event, false, true));
}

void Event::get_ipc_handle(uint8_t (&out)[64]) const {
  if (!interprocess_)
    fail(Status::invalid_state, "the event was not created with interprocess set");
  ScopedContext scope(*device_);
  CUipcEventHandle handle{};
  CUMEM_CU(cuIpcGetEventHandle, (&handle, handle_), "exporting an interprocess event");
  std::memcpy(out, handle.reserved, sizeof out);
}

Event::~Event() {
  try {
    ScopedContext scope(*device_);
    CUMEM_CU_CLEANUP(cuEventDestroy, (handle_), "destroying an event");
  } catch (...) {
    log::swallowed("destroying an event");
  }
}

void Event::record(const Stream* stream) const {
  if (stream && &stream->device() != device_.get())
    fail(Status::wrong_device, "cannot record an event of " + device_->describe() + " on " +
                                   stream->describe());
  ScopedContext scope(*device_);
  CUMEM_CU(cuEventRecord, (handle_, native_or_legacy(stream)),
           "recording an event of " + device_->describe());
  recorded_.store(true, std::memory_order_release);
}

void Event::synchronize() const {
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  CUMEM_CU(cuEventSynchronize, (handle_), "synchronizing an event of " + device_->describe());
}

bool Event::query() const {
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;
  const CUresult r = CUMEM_CU_RESULT(cuEventQuery, (handle_));
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (r != CUDA_SUCCESS) driver::check(r, "cuEventQuery", "querying an event of " + device_->describe());
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  for (const Event* e : {&start, &end}) {
    const char* which = e == &start ? "start" : "end";
    if (!e->timing_)
      fail(Status::invalid_state, std::string("the ") + which +
                                      " event was created without timing (set enable_timing)");
    if (!e->recorded())
      fail(Status::invalid_state, std::string("the ") + which + " event was never recorded");
  }
  ScopedContext scope(*start.device_);
  float ms = 0.0f;
  const CUresult r = CUMEM_CU_RESULT(cuEventElapsedTime, (&ms, start.handle_, end.handle_));
  if (r == CUDA_ERROR_NOT_READY)
    fail(Status::invalid_state, "the events have not completed yet; synchronize the end event first");
  driver::check(r, "cuEventElapsedTime", "measuring the time between two events");
  return ms;
}

}  // namespace cumem::core
