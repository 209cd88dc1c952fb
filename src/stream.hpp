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

#include <atomic>

#include <memory>

#include "device.hpp"
#include "object.hpp"
#include "this_thread.hpp"

namespace cumem::core {

enum class PriorityMode { clamp, reject };

class Stream : public Object {
  // Stream::epoch(): read inline by every lookup of a native stream.
  static inline std::atomic<uint64_t> epoch_counter{1};

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
  // A stream libcumem neither created nor keeps alive (a framework's own,
  // wrapped): it may be destroyed while caches still hold blocks freed on
  // it, so nothing may be queued on it later than the call that handed it
  // in. Such work is ordered through its free marker instead.
  bool foreign() const noexcept { return foreign_; }
  // The free marker of a foreign stream: an event recorded on it now and
  // then while it is known alive (handed in), so that a block freed on it
  // can be reused on another stream without touching it again. Every free
  // on it gets a mark (its number, from 1); a record covers the frees
  // marked before it. A free whose block may go to another stream at once
  // (`eager`: a large piece, found by size alone) records when the stream
  // is handed in; the others (the small blocks, which are reused elsewhere
  // only once covered) record once kMarkEvery of them are uncovered, so
  // that a pair on one stream costs a driver call only every kMarkEvery
  // frees. `handed_in` false: the stream was remembered, not handed in,
  // and may be gone: nothing is recorded (the free stays uncovered until
  // a later record). Returns the free's mark; throws on a driver failure
  // (the free is then not covered).
  static constexpr uint64_t kMarkEvery = 16;
  uint64_t mark_free(bool handed_in, bool eager) const;
  // This foreign stream was handed in (an allocation on it): records the
  // marker when kMarkEvery frees are uncovered (frees made where it was
  // remembered, as CuPy's, which names no stream). A failure is logged: the
  // frees stay uncovered.
  void cover_frees() const noexcept;
  // Whether a record covers the free marked `mark` (without the marker's
  // lock: a record once made covers it for good).
  bool covers(uint64_t mark) const noexcept;
  // The mark of the last eager free (0: none), which a reuse of a large
  // piece waits for.
  uint64_t eager_mark() const noexcept;
  // Makes `later` (null: the legacy default stream) wait for the marker's
  // last record, without touching this stream. False when no record
  // covers the free marked `mark`, or the wait failed: the caller then
  // waits for the device.
  bool wait_for_marker(CUstream later, uint64_t mark) const;
  // Whether the work of every eager free on this foreign stream so far is
  // done (a record covers them all and has completed), without touching
  // the stream. False when not, or when the driver cannot say.
  bool marker_done() const noexcept;

  // The live stream libcumem created for `native`, with a reference for
  // the caller; null when libcumem did not create it (or it is gone).
  static Ref<Stream> owner_of(CUstream native);
  // Changes whenever libcumem creates or destroys a stream: a cache of
  // native handles that saw the same epoch needs no new lookup.
  static uint64_t epoch() noexcept { return epoch_counter.load(std::memory_order_acquire); }

 private:
  Stream(Ref<Device> device, CUstream handle, bool owned, Ref<Stream> keep = nullptr);
  ~Stream() override;

  Ref<Device> device_;
  CUstream handle_;
  bool owned_;
  uint64_t serial_;
  // A wrapper of a CUstream that libcumem created keeps that stream alive.
  Ref<Stream> keep_;
  bool foreign_ = false;
  // A foreign stream's free marker (shared by every wrapper of the native).
  std::shared_ptr<struct FreeMarker> marker_;
};

// Marks, on the calling thread for its scope, that the stream of the frees
// made now was remembered (a buffer's or a framework allocation's own),
// not handed in by the caller: a foreign one may be gone, so those frees
// queue nothing on it (Stream::mark_free).
// The mark is the thread's (this_thread.hpp).
class RememberedStreamScope {
 public:
  RememberedStreamScope() noexcept : RememberedStreamScope(this_thread()) {}
  explicit RememberedStreamScope(ThisThread& t) noexcept
      : thread_(t), previous_(t.remembered_stream) {
    t.remembered_stream = true;
  }
  ~RememberedStreamScope() { thread_.remembered_stream = previous_; }
  RememberedStreamScope(const RememberedStreamScope&) = delete;
  RememberedStreamScope& operator=(const RememberedStreamScope&) = delete;
  static bool active() noexcept { return this_thread().remembered_stream; }

 private:
  ThisThread& thread_;
  bool previous_;
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
// The same, for an `earlier` stream that was remembered (null: the legacy
// default stream): a foreign one may be gone, so the device is waited for
// instead of recording on it.
void order_after_remembered(const Device& device, const Stream* earlier, CUstream later,
                            const char* what);

}  // namespace cumem::core
