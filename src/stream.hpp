// A CUDA stream of one device: owned (destroyed with the object), wrapped
// (someone else's CUstream), or one of the device's default streams.
//
// Lifetime rule: whatever records a stream to use it later (a buffer's
// deallocation stream, a cached block, a framework allocation) holds a
// Ref<Stream>. A stream libcumem created is destroyed only with its last
// reference, so a recorded stream is never used after its CUstream was
// destroyed. Owned streams are registered by CUstream (owner_of), so that
// code given only the native handle of one (the native and framework entry
// points, cumem_stream_wrap) reaches the owning object and keeps it alive.
// A CUstream libcumem did not create is the caller's to keep valid.
#pragma once

#include <cuda.h>

#include "device.hpp"
#include "object.hpp"

namespace cumem::core {

enum class PriorityMode { clamp, reject };

class Stream : public Object {
 public:
  static Ref<Stream> create(Ref<Device> device, bool nonblocking, int priority,
                            PriorityMode mode);
  static Ref<Stream> wrap(Ref<Device> device, CUstream native);
  static Ref<Stream> legacy_default(Ref<Device> device);
  static Ref<Stream> per_thread_default(Ref<Device> device);

  CUstream native() const noexcept { return handle_; }
  const Device& device() const noexcept { return *device_; }
  const Ref<Device>& device_ref() const noexcept { return device_; }
  int priority() const;
  void synchronize() const;
  bool query() const;  // true when all queued work is done
  // Work queued after this waits for the last record of `event` (any device).
  void wait(CUevent event) const;
  void wait(const Stream& other) const;
  // "stream 0x1234 of device 0" for messages.
  std::string describe() const;
  // A number no other Stream object of the process ever has (slots of the
  // slab are reused; this tells a reused slot from the object once there).
  uint64_t serial() const noexcept { return serial_; }
  bool owned() const noexcept { return owned_; }

  // The live stream libcumem created for `native`, with a reference for
  // the caller; null when libcumem did not create it (or it is gone).
  static Ref<Stream> owner_of(CUstream native);
  // Changes whenever libcumem creates or destroys a stream: a cache of
  // native handles that saw the same epoch needs no new lookup.
  static uint64_t epoch() noexcept;

 private:
  Stream(Ref<Device> device, CUstream handle, bool owned, Ref<Stream> keep = nullptr);
  ~Stream() override;

  Ref<Device> device_;
  CUstream handle_;
  bool owned_;
  uint64_t serial_;
  // A wrapper of a CUstream that libcumem created keeps that stream alive.
  Ref<Stream> keep_;
};

// The native handle of an optional stream: the legacy default stream for
// nullptr.
inline CUstream native_or_legacy(const Stream* stream) {
  return stream ? stream->native() : CU_STREAM_LEGACY;
}

// The one way libcumem orders two streams: work queued on `later` from now
// on waits for the work queued so far on `earlier` (native handles, in the
// current context), through an event recorded on `earlier` and destroyed at
// once (the driver keeps what the wait needs). Returns CUDA_SUCCESS, or the
// first failure with the call that failed in `failed_call`.
CUresult enqueue_wait(CUstream earlier, CUstream later, const char** failed_call);

// For orderings that must hold even when the event calls fail (a freed
// block handed out on another stream): enqueue_wait, else a wait for the
// whole device (cuCtxSynchronize) in the context of `device`. `what`
// names the ordering for the error, should the device wait fail as well.
void order_or_synchronize(const Device& device, CUstream earlier, CUstream later,
                          const char* what);

}  // namespace cumem::core
