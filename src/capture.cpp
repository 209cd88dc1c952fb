#include "capture.hpp"

#include <atomic>
#include <mutex>
#include <set>

#include "driver/driver.hpp"
#include "error.hpp"

namespace cumem::core {
namespace {

std::atomic<int> underway{0};
std::mutex streams_mutex;
std::set<CUstream>& capturing_streams() {
  static std::set<CUstream> streams;
  return streams;
}

}  // namespace

void begin_capture(const Stream& stream, CUstreamCaptureMode mode) {
  ScopedContext scope(stream.device());
  std::lock_guard<std::mutex> lock(streams_mutex);
  CUMEM_CU(cuStreamBeginCapture, (stream.native(), mode),
           "beginning a capture on " + stream.describe());
  capturing_streams().insert(stream.native());
  underway.fetch_add(1, std::memory_order_relaxed);
}

CUgraph end_capture(const Stream& stream) {
  ScopedContext scope(stream.device());
  std::lock_guard<std::mutex> lock(streams_mutex);
  CUgraph graph = nullptr;
  const CUresult r = CUMEM_CU_RESULT(cuStreamEndCapture, (stream.native(), &graph));
  if (capturing_streams().erase(stream.native())) underway.fetch_sub(1, std::memory_order_relaxed);
  driver::check(r, "cuStreamEndCapture", "ending the capture on " + stream.describe());
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
