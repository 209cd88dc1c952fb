#include "release_queue.hpp"

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../log.hpp"

namespace cumem::core::vmm {

ReleaseQueue::~ReleaseQueue() { wait_all(); }

CUevent ReleaseQueue::order_after(const Stream* stream) {
  const CUstream native = native_or_legacy(stream);
  const CUresult idle = CUMEM_CU_RESULT(cuStreamQuery, (native));
  if (idle == CUDA_SUCCESS) return nullptr;
  if (idle == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || idle == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
    fail(Status::invalid_argument,
         "virtual memory cannot be released ordered on a stream that is capturing a graph "
         "(the captured work runs at launch); release it on a stream that is not capturing");
  if (idle != CUDA_ERROR_NOT_READY)
    driver::check(idle, "cuStreamQuery", "asking whether the stream's work is done before "
                                         "unmapping virtual memory");
  CUevent event = nullptr;
  CUMEM_CU(cuEventCreate, (&event, CU_EVENT_DISABLE_TIMING),
           "creating the event that orders an unmap after the stream's work");
  const CUresult r = CUMEM_CU_RESULT(cuEventRecord, (event, native));
  if (r != CUDA_SUCCESS) {
    CUMEM_CU_CLEANUP(cuEventDestroy, (event), "destroying an event that could not be recorded");
    driver::check(r, "cuEventRecord", "recording the event that orders an unmap after the stream's work");
  }
  return event;
}

void ReleaseQueue::retire(std::unique_ptr<Range>& range, const Stream* stream, size_t releases) {
  if (!range) return;
  ScopedContext scope(stream ? stream->device() : *device_);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  Item& item = items_.emplace_back();  // before any ordering: nothing left to throw after it
  try {
    item.event = order_after(stream);
  } catch (...) {
    items_.pop_back();
    throw;
  }
  item.range = std::move(range);
  item.bytes = releases;
  bytes_ += releases;
  if (!item.event) {
    release(item);
    items_.pop_back();
  }
}

void ReleaseQueue::retire(Mappings& mappings, const Range* origin, const Stream* stream) {
  if (mappings.empty()) return;
  ScopedContext scope(stream ? stream->device() : *device_);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  Item& item = items_.emplace_back();
  try {
    item.event = order_after(stream);
  } catch (...) {
    items_.pop_back();
    throw;
  }
  item.bytes = mappings.bytes();
  item.mappings = std::move(mappings);
  item.origin = origin;
  bytes_ += item.bytes;
  if (!item.event) {
    release(item);
    items_.pop_back();
  }
}

void ReleaseQueue::release(Item& item) noexcept {
  // The mappings first: they may lie in the range's address space.
  item.mappings.clear();
  item.range.reset();
  if (item.event) CUMEM_CU_CLEANUP(cuEventDestroy, (item.event), "destroying an unmap's event");
  item.event = nullptr;
  bytes_ -= item.bytes;
  item.bytes = 0;
}

void ReleaseQueue::reclaim() noexcept {
  if (items_.empty()) return;
  try {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
    for (auto it = items_.begin(); it != items_.end();) {
      const CUresult r = CUMEM_CU_QUIET(cuEventQuery, (it->event));
      if (r == CUDA_ERROR_NOT_READY) {
        ++it;
        continue;
      }
      release(*it);
      it = items_.erase(it);
    }
  } catch (...) {
    log::swallowed("releasing virtual memory whose stream work is done");
  }
}

void ReleaseQueue::wait_all() noexcept {
  if (items_.empty()) return;
  try {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
    for (Item& item : items_) {
      if (item.event)
        CUMEM_CU_CLEANUP(cuEventSynchronize, (item.event),
                         "waiting for the stream's work before unmapping virtual memory");
      release(item);
    }
    items_.clear();
  } catch (...) {
    log::swallowed("waiting for the stream's work before unmapping virtual memory");
  }
}

void ReleaseQueue::wait_for(const Range* origin) noexcept {
  try {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
    for (auto it = items_.begin(); it != items_.end();) {
      if (it->origin != origin || it->range) {
        ++it;
        continue;
      }
      if (it->event)
        CUMEM_CU_CLEANUP(cuEventSynchronize, (it->event),
                         "waiting for the stream's work before mapping the span again");
      release(*it);
      it = items_.erase(it);
    }
  } catch (...) {
    log::swallowed("waiting for the stream's work before mapping the span again");
  }
}

}  // namespace cumem::core::vmm
