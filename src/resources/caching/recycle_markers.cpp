#include "recycle_markers.hpp"

#include "../../capture.hpp"
#include "../../driver/driver.hpp"
#include "../../log.hpp"
#include "stream_order.hpp"

namespace cumem::core::caching {
namespace {

bool is_legacy_key(uintptr_t key) { return key == reinterpret_cast<uintptr_t>(CU_STREAM_LEGACY); }

// Stream keys with no stream: the per-thread default streams, and keys the
// cache no longer holds a stream for.
CUstream native_of(uintptr_t key, const Stream* stream) {
  if (is_legacy_key(key)) return CU_STREAM_LEGACY;
  if (!stream || stream->foreign() || is_per_thread_key(key)) return nullptr;
  return stream->native();
}

}  // namespace

RecycleMarkers::~RecycleMarkers() {
  for (Entry& e : entries_) destroy(e);
}

void RecycleMarkers::destroy(Entry& e) noexcept {
  if (!e.event || !device_) return;
  try {
    ScopedContext scope(*device_);
    CUMEM_CU_CLEANUP(cuEventDestroy, (e.event), "destroying a recycle marker");
  } catch (...) {
    log::swallowed("destroying a recycle marker");
  }
  e.event = nullptr;
}

bool RecycleMarkers::completed(Entry& e) noexcept {
  if (!e.pending) return false;
  CUresult r = CUDA_ERROR_NOT_READY;
  try {
    ScopedContext scope(*device_);
    r = CUMEM_CU_QUIET(cuEventQuery, (e.event));
  } catch (...) {
  }
  if (r != CUDA_SUCCESS) return false;
  e.pending = false;
  e.done_through = e.covers;
  return true;
}

RecycleMarkers::Entry* RecycleMarkers::find(uintptr_t key) {
  for (Entry& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

RecycleMarkers::Entry& RecycleMarkers::entry(uintptr_t key) {
  if (Entry* e = find(key)) return *e;
  if (entries_.size() >= kKept) {
    // Streams come and go (a stream per request): the oldest entry without
    // a pending marker (asked now) makes room.
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (!it->pending || completed(*it)) {
        destroy(*it);
        entries_.erase(it);
        break;
      }
  }
  entries_.push_back(Entry{});
  entries_.back().key = key;
  return entries_.back();
}

bool RecycleMarkers::done(uintptr_t key, const Stream* stream, uint64_t freed_at) {
  if (key == kAnyStream || freed_at == 0) return true;  // no pending work
  if (!device_) return false;
  if (stream && stream->foreign()) {
    Entry& e = entry(key);
    if (e.asked != generation_) {
      e.asked = generation_;
      e.foreign_done = stream->marker_done();
    }
    return e.foreign_done;
  }
  Entry* e = find(key);
  if (!e) return false;
  if (e->pending && e->asked != generation_) {
    e->asked = generation_;
    (void)completed(*e);
  }
  return freed_at <= e->done_through;
}

bool RecycleMarkers::mark(uintptr_t key, const Stream* stream, uint64_t covers) {
  if (!device_) return false;
  const CUstream native = native_of(key, stream);
  if (!native) return false;
  Entry& e = entry(key);
  if (e.pending) return true;  // covers less; the next recycle after it completes records again
  try {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;
    // Never into a capture: recorded there it would be a node of the graph.
    // (On the legacy stream the question fails while a blocking stream
    // captures: no record then either.)
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    if (CUMEM_CU_QUIET(cuStreamIsCapturing, (native, &capturing)) != CUDA_SUCCESS ||
        capturing != CU_STREAM_CAPTURE_STATUS_NONE)
      return false;
    if (!e.event && CUMEM_CU_QUIET(cuEventCreate, (&e.event, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
      e.event = nullptr;
      return false;
    }
    if (CUMEM_CU_QUIET(cuEventRecord, (e.event, native)) != CUDA_SUCCESS) return false;
  } catch (...) {
    return false;
  }
  e.pending = true;
  e.covers = covers;
  e.asked = 0;
  return true;
}

size_t RecycleMarkers::pending() const {
  size_t n = 0;
  for (const Entry& e : entries_) n += e.pending ? 1 : 0;
  return n;
}

}  // namespace cumem::core::caching
