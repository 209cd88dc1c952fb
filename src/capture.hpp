// Stream capture into CUDA graphs, whoever began it: the primitives every
// resource uses to behave correctly on a capturing stream.
//
// - capture_info / capture_status ask the driver about one stream. The
//   driver sees every capture (begun here, by the runtime, PyTorch, CuPy,
//   in any mode, and streams joined to a capture through events). Cost:
//   nothing for the legacy default stream (null), which cannot capture; one
//   driver call otherwise (cuStreamGetCaptureInfo / cuStreamIsCapturing;
//   bench/bench_capture.cpp times both); the per-thread default stream adds
//   making its device's context current.
// - RelaxedCaptureMode switches the calling thread to relaxed capture mode
//   for a scope (cuThreadExchangeStreamCaptureMode), as PyTorch's
//   CUDAStreamCaptureModeGuard does: the driver's "potentially unsafe" calls
//   (synchronous allocations and frees, pool attributes, trims,
//   synchronisation) made inside it neither fail because this thread
//   captures nor invalidate another thread's global capture.
// - begin_capture / end_capture: captures begun through libcumem, counted
//   so that is_capturing (the caching adaptor's test) stays one relaxed load
//   while none is underway.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "stream.hpp"

namespace cumem::core {

// CUstreamCaptureStatus, and the C ABI's cumem_capture_status_t.
enum class CaptureStatus { none = 0, active = 1, invalidated = 2 };

struct CaptureInfo {
  CaptureStatus status = CaptureStatus::none;
  // Unique over the process's life for each capture sequence; 0 when the
  // stream does not capture. Streams joined to a capture report its id.
  uint64_t id = 0;
  bool capturing() const noexcept { return status != CaptureStatus::none; }
};

// Whether `stream` captures (an invalidated capture counts: it still
// captures until it is ended). Null: the legacy default stream, no call.
CaptureStatus capture_status(const Stream* stream);
// The status and the capture's id. A driver without cuStreamGetCaptureInfo
// (before CUDA 12.3) gives the status alone; an id is then not_supported
// for a stream that captures.
CaptureInfo capture_info(const Stream* stream);

// What one entry point already asked the driver about one stream, for the
// resource it calls next: within the scope, capture_status and capture_info
// of `stream` answer from it without a driver call (the framework entry
// points ask first, to know whether the free may run now, and the caching
// adaptor would ask the same question again a few instructions later).
// A nested scope replaces the answer until it ends (a question about the
// outer scope's stream meanwhile goes to the driver again). The answer
// can only go stale by another thread beginning or ending a capture on the
// same stream during the call, which is a race in the caller's own code.
class KnownCapture {
 public:
  KnownCapture(const Stream* stream, CaptureInfo info, bool has_id) noexcept;
  ~KnownCapture();
  KnownCapture(const KnownCapture&) = delete;
  KnownCapture& operator=(const KnownCapture&) = delete;

  struct Answer {
    const Stream* stream = nullptr;
    CaptureInfo info;
    bool has_id = false;
  };

 private:
  bool remembers_;  // false for the legacy default stream: nothing to remember
  Answer previous_;
};

// The question the framework entry points ask: capture_info where the
// driver gives the capture's id (CUDA 12.3+), else capture_status alone
// (`has_id` false), so that a driver without the id is refused only by a
// resource that needs it.
CaptureInfo capture_question(const Stream* stream, bool& has_id);

// Throws invalid_state when `stream` captures, naming `operation` (a call
// that would wait for work that has not run, or that the driver refuses
// under capture): before the driver is asked to do it, so the capture
// stays valid. A Stream of the legacy default stream is checked as
// refuse_if_legacy_unusable checks it; null is not checked (no device).
void refuse_if_capturing(const Stream* stream, const char* operation);

// Throws invalid_state when the legacy default stream of `device` cannot be
// used now (a blocking stream of its context captures, so any use of the
// legacy stream would join that capture): for calls given no stream that
// wait for or enqueue on the legacy stream. Asks without invalidating.
void refuse_if_legacy_unusable(const Device& device, const char* operation);

// For error messages only (asks the driver; never throws): "" when
// `stream` does not capture, else "; <stream> is capturing a CUDA graph"
// (with "(invalidated)" when its capture was).
std::string capture_note(const Stream* stream) noexcept;

// The calling thread in relaxed capture mode for a scope. Nested scopes
// cost nothing after the first; without a driver, or with one that has no
// capture modes, it does nothing.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() noexcept;
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  bool swapped_ = false;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
};

void begin_capture(const Stream& stream, CUstreamCaptureMode mode);
// Ends the capture and returns its graph (the caller destroys it). The
// capture counts as ended even when the driver reports it invalidated.
CUgraph end_capture(const Stream& stream);

// Whether `stream` captures now; false without asking the driver while no
// capture begun with begin_capture is underway. Null: the legacy default
// stream, which cannot capture. Sees only captures begun through libcumem
// (the caching adaptor's test, until it asks capture_status).
bool is_capturing(const Stream* stream);

}  // namespace cumem::core
