// Core streams for native CUstreams, without an object per call: each thread
// keeps a few non-owning Stream wrappers by (CUstream, device). For the raw
// allocation calls that other libraries' allocators make with the streams
// they hold (cumem_resource_allocate_native, the framework entry points).
#pragma once

#include <cuda.h>

#include "device.hpp"
#include "stream.hpp"

namespace cumem::core {

// The Stream for `native` on `device` (null: find the stream's device from
// the driver), or null for NULL and CU_STREAM_LEGACY, which the core reads
// as the legacy default stream. For a stream libcumem created, that is the
// owning object itself, so that whoever holds the result keeps the CUstream
// alive; for any other, a non-owning wrapper. Either is cached on this
// thread (16 entries, round robin, checked against Stream::epoch()); a hit
// costs one uncontended reference count. The first use of a stream on a
// thread checks its device (wrong_device).
Ref<Stream> native_stream(const Device* device, CUstream native);

}  // namespace cumem::core
