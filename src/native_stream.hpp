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

struct NativeStreamEntry;

// The stream native_stream would give, for the length of one call on this
// thread, without a reference count where this thread's cache holds the
// stream (a framework's CUstream's wrapper): the entry is lent, so that
// lookups nested in the call (a resource that calls back into libcumem)
// neither replace it nor make it again. A stream libcumem created, and the
// per-thread default stream, are held by a reference of this object's.
// It must not outlive the call, nor move to another thread.
class BorrowedStream {
 public:
  BorrowedStream(const Device* device, CUstream native);
  ~BorrowedStream();
  BorrowedStream(const BorrowedStream&) = delete;
  BorrowedStream& operator=(const BorrowedStream&) = delete;

  const Stream* get() const noexcept { return stream_; }
  // The reference it holds (null for a lent wrapper or the legacy stream).
  const Ref<Stream>& held() const noexcept { return held_; }
  // A reference of the caller's own, to keep past the call.
  Ref<Stream> reference() const;

 private:
  const Stream* stream_ = nullptr;
  Ref<Stream> held_;
  NativeStreamEntry* pinned_ = nullptr;
};

}  // namespace cumem::core
