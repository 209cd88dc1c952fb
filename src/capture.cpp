#include "capture.hpp"

#include <atomic>
#include <mutex>
#include <set>

#include "driver/driver.hpp"
#include "error.hpp"
#include "snapshot/history.hpp"

namespace cumem::core {
namespace {

std::atomic<int> underway{0};
std::mutex streams_mutex;
std::set<CUstream>& capturing_streams() {
  static std::set<CUstream> streams;
  return streams;
}

// Streams that need no call: the legacy default stream cannot capture.
bool never_captures(const Stream* stream) noexcept {
  return !stream || stream->native() == CU_STREAM_LEGACY;
}

// The per-thread default stream is the current context's: make the
// stream's device current for it, and only for it (other handles carry
// their context).
template <class Fn>
CUresult ask(const Stream& stream, Fn&& fn) {
  if (stream.native() != CU_STREAM_PER_THREAD) return fn();
  ScopedContext scope(stream.device());
  return fn();
}

CaptureStatus to_status(CUstreamCaptureStatus s) {
  switch (s) {
    case CU_STREAM_CAPTURE_STATUS_NONE: return CaptureStatus::none;
    case CU_STREAM_CAPTURE_STATUS_ACTIVE: return CaptureStatus::active;
    default: return CaptureStatus::invalidated;
  }
}

// Mode swaps nested on this thread: only the outermost scope calls the
// driver.
thread_local int relaxed_depth = 0;

// KnownCapture's answer on this thread (stream null: none known).
using Known = KnownCapture::Answer;
thread_local Known known_answer;

// This thread's answer, its address asked of the TLS descriptor once where
// it is called (left to itself the compiler asks again at each use).
Known& known() noexcept {
  Known* k = &known_answer;
  asm("" : "+r"(k));
  return *k;
}

// Field by field: a copy of the whole struct (25 bytes) compiles to two
// overlapping 16-byte moves, whose load stalls on the store just made
// (store forwarding fails): about 20 ns of a framework pair on a stream
// (perf, on the development host).
void assign(Known& to, const Known& from) noexcept {
  to.stream = from.stream;
  to.info.status = from.info.status;
  to.info.id = from.info.id;
  to.has_id = from.has_id;
}

}  // namespace

CaptureStatus capture_status(const Stream* stream) {
  if (never_captures(stream)) return CaptureStatus::none;
  const Known& k = known();
  if (stream == k.stream) return k.info.status;
  const auto& drv = driver::get();
  // Capture came with cuStreamIsCapturing (CUDA 10.0): a driver without it
  // cannot capture.
  if (!drv.cuStreamIsCapturing_fn) return CaptureStatus::none;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = ask(*stream, [&] { return drv.cuStreamIsCapturing_fn(stream->native(), &status); });
  if (r != CUDA_SUCCESS)
    driver::check(r, "cuStreamIsCapturing", "asking whether " + stream->describe() + " captures");
  return to_status(status);
}

namespace {

// This thread's KnownCapture answer for `stream`, if it has one that
// capture_info may give.
bool known_info(const Stream* stream, CaptureInfo& info) noexcept {
  const Known& k = known();
  if (stream != k.stream || (!k.has_id && k.info.capturing())) return false;
  info = k.info;
  return true;
}

// Out of line, so that the question's usual path saves no registers for
// it. Throws for any result but CUDA_SUCCESS.
[[gnu::noinline, gnu::cold]] void fail_question(CUresult r, const Stream& stream) {
  driver::check(r, "cuStreamGetCaptureInfo", "asking whether " + stream.describe() + " captures");
}

[[noreturn, gnu::noinline, gnu::cold]] void fail_no_id(const driver::Table& drv,
                                                      const Stream& stream) {
  fail(Status::not_supported,
       stream.describe() + " captures, and the capture's id needs cuStreamGetCaptureInfo "
                           "(CUDA 12.3 or newer; the driver is CUDA " +
           std::to_string(drv.driver_version / 1000) + "." +
           std::to_string((drv.driver_version % 1000) / 10) + ")");
}

// capture_info past the legacy stream and the known answer, with the
// driver's table in hand.
CaptureInfo ask_capture_info(const driver::Table& drv, const Stream* stream) {
  CaptureInfo info;
  if (!drv.cuStreamGetCaptureInfo_fn) {
    info.status = capture_status(stream);
    if (info.capturing()) fail_no_id(drv, *stream);
    return info;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  const CUresult r = ask(*stream, [&] {
    return drv.cuStreamGetCaptureInfo_fn(stream->native(), &status, &id, nullptr, nullptr,
                                         nullptr, nullptr);
  });
  if (r != CUDA_SUCCESS) fail_question(r, *stream);
  info.status = to_status(status);
  // The id is valid only for an active capture (the driver's rule).
  info.id = info.status == CaptureStatus::active ? id : 0;
  return info;
}

}  // namespace

CaptureInfo capture_info(const Stream* stream) {
  CaptureInfo info;
  if (never_captures(stream) || known_info(stream, info)) return info;
  return ask_capture_info(driver::get(), stream);
}

KnownCapture::KnownCapture(const Stream* stream, CaptureInfo info, bool has_id) noexcept
    : remembers_(!never_captures(stream)) {
  if (!remembers_) return;  // answered without a call anyway
  Known& k = known();
  assign(previous_, k);
  assign(k, Known{stream, info, has_id});
}

KnownCapture::~KnownCapture() {
  if (remembers_) assign(known(), previous_);
}

CaptureInfo capture_question(const Stream* stream, bool& has_id) {
  has_id = true;
  if (never_captures(stream)) return {};
  const driver::Table& drv = driver::get();
  if (drv.cuStreamGetCaptureInfo_fn) {
    CaptureInfo info;
    if (known_info(stream, info)) return info;
    return ask_capture_info(drv, stream);
  }
  has_id = false;
  CaptureInfo info;
  info.status = capture_status(stream);
  return info;
}

void refuse_if_capturing(const Stream* stream, const char* operation) {
  if (stream && stream->native() == CU_STREAM_LEGACY) {
    refuse_if_legacy_unusable(stream->device(), operation);
    return;
  }
  const CaptureStatus s = capture_status(stream);
  if (s == CaptureStatus::none) return;
  fail(Status::invalid_state,
       std::string("cannot ") + operation + " on " + stream->describe() + ": it is capturing a " +
           "CUDA graph" + (s == CaptureStatus::invalidated ? " (its capture was invalidated)" : "") +
           ", so its work has not run and will run only when the graph is launched; do this on a "
           "stream that does not capture, or after the capture ends (nothing was done)");
}

void refuse_if_legacy_unusable(const Device& device, const char* operation) {
  const auto& drv = driver::get();
  if (!drv.cuStreamIsCapturing_fn) return;
  ScopedContext scope(device);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  // The one question about the legacy stream the driver answers without
  // touching the capture: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT when a
  // blocking stream of this context captures.
  const CUresult r = drv.cuStreamIsCapturing_fn(CU_STREAM_LEGACY, &status);
  if (r == CUDA_SUCCESS) return;
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
    fail(Status::invalid_state,
         std::string("cannot ") + operation + " on the legacy default stream of " +
             device.describe() + ": a blocking stream of that device is capturing a CUDA "
             "graph, and any use of the legacy default stream would join that capture; pass a "
             "stream that does not capture (nothing was done)");
  driver::check(r, "cuStreamIsCapturing",
                "asking whether the legacy default stream of " + device.describe() +
                    " can be used");
}

std::string capture_note(const Stream* stream) noexcept {
  try {
    const CaptureStatus s = capture_status(stream);
    if (s == CaptureStatus::none) return "";
    return "; " + stream->describe() + " is capturing a CUDA graph" +
           (s == CaptureStatus::invalidated ? " (its capture was invalidated)" : "");
  } catch (...) {
    return "";
  }
}

RelaxedCaptureMode::RelaxedCaptureMode() noexcept {
  if (relaxed_depth++ > 0) return;
  // Never loads the driver: the objects whose driver calls a scope guards
  // loaded it when they were made, and host-only calls must not load it.
  const driver::Table* t = driver::loaded_already();
  // Capture modes came with CUDA 10.1: a driver without them has none.
  if (!t || !t->cuThreadExchangeStreamCaptureMode_fn) return;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (t->cuThreadExchangeStreamCaptureMode_fn(&mode) != CUDA_SUCCESS) return;
  previous_ = mode;
  swapped_ = true;
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  --relaxed_depth;
  if (!swapped_) return;
  CUstreamCaptureMode mode = previous_;
  CUMEM_CU_CLEANUP(cuThreadExchangeStreamCaptureMode, (&mode),
                   "restoring the thread's stream capture mode");
}

void begin_capture(const Stream& stream, CUstreamCaptureMode mode) {
  ScopedContext scope(stream.device());
  std::lock_guard<std::mutex> lock(streams_mutex);
  CUMEM_CU(cuStreamBeginCapture, (stream.native(), mode),
           "beginning a capture on " + stream.describe());
  capturing_streams().insert(stream.native());
  underway.fetch_add(1, std::memory_order_relaxed);
  if (history::on())
    history::record(history::Action::capture_begin, 0, nullptr, 0, history::stream_value(&stream),
                    static_cast<uint64_t>(mode));
}

CUgraph end_capture(const Stream& stream) {
  ScopedContext scope(stream.device());
  std::lock_guard<std::mutex> lock(streams_mutex);
  CUgraph graph = nullptr;
  const CUresult r = CUMEM_CU_RESULT(cuStreamEndCapture, (stream.native(), &graph));
  if (capturing_streams().erase(stream.native())) underway.fetch_sub(1, std::memory_order_relaxed);
  driver::check(r, "cuStreamEndCapture", "ending the capture on " + stream.describe());
  if (history::on())
    history::record(history::Action::capture_end, 0, nullptr, 0, history::stream_value(&stream));
  return graph;
}

bool is_capturing(const Stream* stream) {
  if (!stream || underway.load(std::memory_order_relaxed) == 0) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUMEM_CU(cuStreamIsCapturing, (stream->native(), &status),
           "asking whether " + stream->describe() + " is capturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace cumem::core
