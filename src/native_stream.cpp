#include "native_stream.hpp"

#include <utility>

#include "capture.hpp"
#include "driver/driver.hpp"
#include "error.hpp"

namespace cumem::core {

// One native handle this thread has seen. A stream libcumem created is
// found through Stream::owner_of and held weakly (`owned`, with its serial):
// the cache must not keep it alive after its user released it. Any other
// CUstream gets a non-owning wrapper that the cache holds (`foreign`).
// Both are valid while Stream::epoch() is what it was when the entry was
// made: no stream libcumem created has come or gone since, so a weakly held
// one still lives and a foreign handle still is not one of libcumem's.
// A foreign entry lent to BorrowedStreams (`pins`: those alive on this
// thread) is neither replaced nor made again while lent.
struct NativeStreamEntry {
  CUstream native = nullptr;
  const Device* device = nullptr;
  uint64_t epoch = 0;
  const Stream* owned = nullptr;
  uint64_t serial = 0;
  Stream* foreign = nullptr;  // a reference of the cache's (let go when replaced, or at thread exit)
  uint32_t pins = 0;
};

namespace {

using Entry = NativeStreamEntry;
constexpr int kEntries = 16;

// Trivially destroyed, so that a lookup asks the TLS descriptor once and
// checks no guard; the references it holds are let go at thread exit by a
// guard made with its first foreign entry.
struct Cache {
  Entry entries[kEntries];
  int next = 0;  // the entry replaced on a miss (round robin)
};
thread_local Cache thread_cache;

struct CacheGuard {
  ~CacheGuard() {
    for (Entry& e : thread_cache.entries) {
      Stream* foreign = std::exchange(e.foreign, nullptr);
      e = Entry{};
      if (foreign) (void)Ref<Stream>::adopt(foreign);
    }
  }
};

Cache& this_thread_cache() noexcept {
  Cache* c = &thread_cache;
  asm("" : "+r"(c));  // the TLS descriptor asked once
  return *c;
}

// The device a foreign stream belongs to, for resources without one.
Ref<Device> device_of(CUstream native) {
  const auto& drv = driver::get();
  if (!drv.cuStreamGetDevice_fn)
    fail(Status::not_supported,
         "this resource has no device, and finding a native stream's device needs "
         "cuStreamGetDevice (CUDA 12.8+; the driver is " +
             std::to_string(drv.driver_version) + "): pass NULL for the legacy default stream");
  if (native == CU_STREAM_PER_THREAD)
    fail(Status::invalid_argument,
         "CU_STREAM_PER_THREAD names no device; this resource has none either");
  // The driver refuses cuStreamGetDevice on a capturing stream, and the
  // refusal would invalidate the capture: refused here first.
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUMEM_CU_QUIET(cuStreamIsCapturing, (native, &capturing)) == CUDA_SUCCESS &&
      capturing != CU_STREAM_CAPTURE_STATUS_NONE)
    fail(Status::invalid_state,
         "this resource has no device, and the device of a capturing native stream cannot be "
         "asked without invalidating its capture; use a resource of the stream's device "
         "(nothing was done)");
  RelaxedCaptureMode relaxed;
  CUdevice dev = 0;
  CUMEM_CU(cuStreamGetDevice, (native, &dev), "finding the device of a native stream");
  const int count = Device::count();
  for (int i = 0; i < count; ++i) {
    Ref<Device> d = Device::get(i);
    if (d->native() == dev) return d;
  }
  fail(Status::no_device, "the native stream's CUdevice " + std::to_string(dev) +
                              " is not one of the driver's devices");
}

// The owning stream of a cached entry, if it still is the one cached.
Ref<Stream> retain_owned(const Entry& e) {
  if (!e.owned->try_retain()) return nullptr;
  Ref<Stream> s = Ref<Stream>::adopt(const_cast<Stream*>(e.owned));
  if (s->serial() != e.serial || s->native() != e.native) return nullptr;  // a reused slot
  return s;
}

// The stream for `native`, made anew: a stream libcumem created
// (retained), else a wrapper of its own.
Ref<Stream> make_stream(const Device* device, CUstream native) {
  Ref<Stream> stream;
  if (native != CU_STREAM_PER_THREAD) stream = Stream::owner_of(native);
  if (stream) {
    if (device && &stream->device() != device)
      fail(Status::wrong_device, "the native stream belongs to " + stream->device().describe() +
                                     ", not to " + device->describe());
    return stream;
  }
  Ref<Device> owner = device ? Ref<Device>::share(const_cast<Device*>(device)) : device_of(native);
  return native == CU_STREAM_PER_THREAD ? Stream::per_thread_default(owner)
                                        : Stream::wrap(owner, native);
}

// The entry for `native` on `device` in this thread's cache, made (or made
// again) where it is missing or stale; `found` gets a stream libcumem
// created, retained (a foreign entry's stream is the entry's). Null when
// every entry is lent (the caller makes the stream uncached).
Entry* entry_for(const Device* device, CUstream native, Ref<Stream>& found) {
  Cache& cache = this_thread_cache();
  const uint64_t epoch = Stream::epoch();
  Entry* slot = nullptr;
  for (Entry& e : cache.entries) {
    if (e.native != native || e.device != device) continue;
    if (e.epoch == epoch) {
      if (e.foreign) return &e;
      if ((found = retain_owned(e))) return &e;
    }
    if (e.pins == 0) {
      slot = &e;  // stale: made again below
      break;
    }
    // Stale but lent to a call still running on this thread: kept as it is.
  }
  for (int i = 0; i < kEntries && !slot; ++i) {
    Entry& e = cache.entries[cache.next];
    cache.next = (cache.next + 1) % kEntries;
    if (e.pins == 0) slot = &e;
  }
  if (!slot) return nullptr;
  Ref<Stream> stream = make_stream(device, native);
  if (Stream* replaced = std::exchange(slot->foreign, nullptr)) (void)Ref<Stream>::adopt(replaced);
  *slot = Entry{};
  slot->native = native;
  slot->device = device;
  slot->epoch = epoch;
  if (stream->owned()) {
    slot->owned = stream.get();
    slot->serial = stream->serial();
    found = std::move(stream);
  } else {
    static thread_local CacheGuard guard;  // made at the first: destroyed at thread exit
    (void)guard;
    slot->foreign = stream.detach();
  }
  return slot;
}

}  // namespace

Ref<Stream> native_stream(const Device* device, CUstream native) {
  if (!native || native == CU_STREAM_LEGACY) return nullptr;
  Ref<Stream> found;
  Entry* e = entry_for(device, native, found);
  if (found) return found;
  return e ? Ref<Stream>::share(e->foreign) : make_stream(device, native);
}

BorrowedStream::BorrowedStream(const Device* device, CUstream native) {
  if (!native || native == CU_STREAM_LEGACY) return;
  Entry* e = entry_for(device, native, held_);
  if (!held_) {
    if (!e)
      held_ = make_stream(device, native);
    else if (native == CU_STREAM_PER_THREAD)
      held_ = Ref<Stream>::share(e->foreign);  // this thread's own stream: a record holds it, never lent
  }
  if (held_) {
    stream_ = held_.get();
    return;
  }
  ++e->pins;
  pinned_ = e;
  stream_ = e->foreign;
}

BorrowedStream::~BorrowedStream() {
  if (pinned_) --pinned_->pins;
}

Ref<Stream> BorrowedStream::reference() const {
  return held_ ? held_ : Ref<Stream>::share(const_cast<Stream*>(stream_));
}

}  // namespace cumem::core
