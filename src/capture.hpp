// Stream capture into a CUDA graph, begun and ended through libcumem, so
// that the caching adaptor knows when to ask whether a stream captures:
// while no capture begun here is underway, that costs one relaxed load.
#pragma once

#include <cuda.h>

#include "stream.hpp"

namespace cumem::core {

void begin_capture(const Stream& stream, CUstreamCaptureMode mode);
// Ends the capture and returns its graph (the caller destroys it). The
// capture counts as ended even when the driver reports it invalidated.
CUgraph end_capture(const Stream& stream);

// Whether `stream` captures now; false without asking the driver while no
// capture begun with begin_capture is underway. Null: the legacy default
// stream, which cannot capture.
bool is_capturing(const Stream* stream);

}  // namespace cumem::core
