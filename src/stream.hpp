// A CUDA stream of one device: owned (destroyed with the object), wrapped
// (someone else's CUstream), or one of the device's default streams.
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

 private:
  Stream(Ref<Device> device, CUstream handle, bool owned)
      : Object(Tag::stream), device_(std::move(device)), handle_(handle), owned_(owned) {}
  ~Stream() override;

  Ref<Device> device_;
  CUstream handle_;
  bool owned_;
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
