#include "stream.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "capture.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "log.hpp"

namespace cumem::core {
namespace {

// The streams libcumem created, by CUstream. Never destroyed: streams can
// outlive static destructors.
struct Registry {
  std::mutex mutex;
  std::unordered_map<CUstream, const Stream*> owned;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}
std::atomic<uint64_t> serial_counter{1};

}  // namespace

Stream::Stream(Ref<Device> device, CUstream handle, bool owned, Ref<Stream> keep)
    : Object(Tag::stream),
      device_(std::move(device)),
      handle_(handle),
      owned_(owned),
      serial_(serial_counter.fetch_add(1, std::memory_order_relaxed)),
      keep_(std::move(keep)) {
  foreign_ = !owned_ && !keep_ && handle_ != CU_STREAM_LEGACY && handle_ != CU_STREAM_PER_THREAD;
}

// One event per foreign native stream, recorded now and then at a free on
// it (see Stream::mark_free). Made at the first record; destroyed with the
// last wrapper that shares it. `frees` and `covered` are read without the
// lock; `covered` and `eager` change under it.
struct FreeMarker {
  std::mutex mutex;
  CUevent event = nullptr;
  std::atomic<uint64_t> frees{0};    // the last free's mark
  std::atomic<uint64_t> covered{0};  // the last record covers the frees marked up to this
  std::atomic<uint64_t> eager{0};    // the last eager free's mark
  Ref<Device> device;
  ~FreeMarker() {
    if (!event) return;
    try {
      ScopedContext scope(*device);
      CUMEM_CU_CLEANUP(cuEventDestroy, (event), "destroying a foreign stream's free marker");
    } catch (...) {
      log::swallowed("destroying a foreign stream's free marker");
    }
  }
};

namespace {

// The markers of the foreign streams that have wrappers, by native handle.
struct Markers {
  std::mutex mutex;
  std::unordered_map<CUstream, std::weak_ptr<FreeMarker>> by_native;
};
Markers& markers() {
  static Markers* m = new Markers;  // never destroyed: wrappers die at exit
  return *m;
}

std::shared_ptr<FreeMarker> marker_for(CUstream native, const Ref<Device>& device) {
  Markers& m = markers();
  std::lock_guard<std::mutex> lock(m.mutex);
  std::weak_ptr<FreeMarker>& slot = m.by_native[native];
  std::shared_ptr<FreeMarker> marker = slot.lock();
  if (!marker) {
    marker = std::make_shared<FreeMarker>();
    marker->device = device;
    slot = marker;
  }
  // Forget the handles whose wrappers are all gone, now and then.
  if (m.by_native.size() > 64)
    for (auto it = m.by_native.begin(); it != m.by_native.end();)
      it = it->second.expired() ? m.by_native.erase(it) : std::next(it);
  return marker;
}

}  // namespace

namespace {

// Frees marked since the last record (read without the lock: a hint, and
// exact under it).
uint64_t uncovered(const FreeMarker& m) {
  return m.frees.load(std::memory_order_relaxed) - m.covered.load(std::memory_order_relaxed);
}

// Under the marker's lock, on its stream (handed in: alive): records the
// marker, covering every free marked so far. Throws on a driver failure.
void record_free_marker(FreeMarker& m, const Stream& stream) {
  // Every free marked up to `through` queued its block's work before it
  // took its mark, so before this record.
  const uint64_t through = m.frees.load(std::memory_order_acquire);
  ScopedContext scope(stream.device());
  if (!m.event)
    CUMEM_CU(cuEventCreate, (&m.event, CU_EVENT_DISABLE_TIMING),
             "creating the free marker of " + stream.describe());
  CUMEM_CU(cuEventRecord, (m.event, stream.native()),
           "recording the free marker of " + stream.describe());
  m.covered.store(through, std::memory_order_release);
}

}  // namespace

uint64_t Stream::mark_free(bool handed_in, bool eager) const {
  FreeMarker& m = *marker_;
  const uint64_t mark = m.frees.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (!eager && (!handed_in || mark - m.covered.load(std::memory_order_relaxed) < kMarkEvery))
    return mark;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (eager && mark > m.eager.load(std::memory_order_relaxed))
    m.eager.store(mark, std::memory_order_relaxed);
  if (handed_in && m.covered.load(std::memory_order_relaxed) < mark) record_free_marker(m, *this);
  return mark;
}

void Stream::cover_frees() const noexcept {
  FreeMarker& m = *marker_;
  if (uncovered(m) < kMarkEvery) return;
  try {
    std::lock_guard<std::mutex> lock(m.mutex);
    if (uncovered(m) >= kMarkEvery) record_free_marker(m, *this);
  } catch (...) {
    // Not covered: the blocks wait for a later record (or a trim).
    log::swallowed("recording a foreign stream's free marker at an allocation on it");
  }
}

bool Stream::covers(uint64_t mark) const noexcept {
  return marker_ && mark != 0 && marker_->covered.load(std::memory_order_acquire) >= mark;
}

uint64_t Stream::eager_mark() const noexcept {
  return marker_ ? marker_->eager.load(std::memory_order_acquire) : 0;
}

bool Stream::wait_for_marker(CUstream later, uint64_t mark) const {
  FreeMarker& m = *marker_;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!m.event || mark == 0 || m.covered.load(std::memory_order_relaxed) < mark) return false;
  ScopedContext scope(*device_);
  return CUMEM_CU_QUIET(cuStreamWaitEvent, (later, m.event, 0)) == CUDA_SUCCESS;
}

bool Stream::marker_done() const noexcept {
  if (!marker_) return false;
  FreeMarker& m = *marker_;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!m.event || m.covered.load(std::memory_order_relaxed) < m.eager.load(std::memory_order_relaxed))
    return false;
  try {
    ScopedContext scope(*device_);
    return CUMEM_CU_QUIET(cuEventQuery, (m.event)) == CUDA_SUCCESS;
  } catch (...) {
    return false;
  }
}

Ref<Stream> Stream::owner_of(CUstream native) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.owned.find(native);
  // A stream whose last reference is going is no owner any more.
  if (it == r.owned.end() || !it->second->try_retain()) return nullptr;
  return Ref<Stream>::adopt(const_cast<Stream*>(it->second));
}

Ref<Stream> Stream::create(Ref<Device> device, bool nonblocking, int priority,
                           PriorityMode mode) {
  int least = 0, greatest = 0;
  device->stream_priority_range(least, greatest);
  // Greatest priority is numerically lowest.
  if (priority < greatest || priority > least) {
    if (mode == PriorityMode::reject)
      fail(Status::invalid_argument,
           "stream priority " + std::to_string(priority) + " is outside the range of " +
               device->describe() + ": " + std::to_string(greatest) + " (highest) to " +
               std::to_string(least) + " (lowest)");
    priority = priority < greatest ? greatest : least;
  }
  ScopedContext scope(*device);
  CUstream handle = nullptr;
  const unsigned flags = nonblocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
  CUMEM_CU(cuStreamCreateWithPriority, (&handle, flags, priority),
           "creating a stream on " + device->describe());
  Ref<Stream> stream;
  try {
    stream = Ref<Stream>::adopt(new Stream(std::move(device), handle, true));
  } catch (...) {
    CUMEM_CU_CLEANUP(cuStreamDestroy, (handle), "destroying a stream that could not be wrapped");
    throw;
  }
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    // A handle the driver reuses replaces the entry of a stream destroyed
    // outside libcumem (a wrapped one); libcumem's own leave it first.
    r.owned[handle] = stream.get();
  }
  epoch_counter.fetch_add(1, std::memory_order_acq_rel);
  return stream;
}

namespace {

// Whether the foreign stream `native` captures now (asked in the context of
// `device`); false when the driver cannot say, so that the caller's next
// call reports what is wrong.
bool captures_now(const Device& device, CUstream native) {
  ScopedContext scope(device);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUMEM_CU_QUIET(cuStreamIsCapturing, (native, &status)) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace

Ref<Stream> Stream::wrap(Ref<Device> device, CUstream native) {
  if (!native)
    fail(Status::invalid_argument,
         "cannot wrap a NULL CUstream; use the legacy default stream instead");
  // A stream libcumem created stays alive as long as a wrapper of it.
  Ref<Stream> owner = owner_of(native);
  if (owner) {
    if (&owner->device() != device.get())
      fail(Status::wrong_device, "the stream to wrap belongs to " + owner->device().describe() +
                                     ", not to " + device->describe());
  } else if (driver::get().cuStreamGetDevice_fn && !captures_now(*device, native)) {
    // The device check asks the driver, which refuses cuStreamGetDevice on
    // a capturing stream (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, seen on
    // 580.159) and so would invalidate the capture: a capturing stream is
    // taken as the caller's device says (frameworks wrap their streams
    // while they capture).
    CUdevice dev = 0;
    ScopedContext scope(*device);
    RelaxedCaptureMode relaxed;
    CUMEM_CU(cuStreamGetDevice, (native, &dev), "finding the device of a foreign stream");
    if (dev != device->native())
      fail(Status::wrong_device, "the stream to wrap belongs to CUdevice " +
                                     std::to_string(dev) + ", not to " + device->describe());
  }
  Ref<Stream> wrapped =
      Ref<Stream>::adopt(new Stream(device, native, false, std::move(owner)));
  if (wrapped->foreign_) wrapped->marker_ = marker_for(native, device);
  return wrapped;
}

Ref<Stream> Stream::legacy_default(Ref<Device> device) {
  return Ref<Stream>::adopt(new Stream(std::move(device), CU_STREAM_LEGACY, false));
}

Ref<Stream> Stream::per_thread_default(Ref<Device> device) {
  return Ref<Stream>::adopt(new Stream(std::move(device), CU_STREAM_PER_THREAD, false));
}

Stream::~Stream() {
  if (owned_) {
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      auto it = r.owned.find(handle_);
      if (it != r.owned.end() && it->second == this) r.owned.erase(it);
    }
    epoch_counter.fetch_add(1, std::memory_order_acq_rel);
    // A destructor cannot report (failures go to the log); the driver frees
    // the stream's resources once its work is done.
    try {
      ScopedContext scope(*device_);
      CUMEM_CU_CLEANUP(cuStreamDestroy, (handle_), "destroying a stream");
    } catch (...) {
      log::swallowed("destroying a stream");
    }
  }
}

std::string Stream::describe() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "stream %p of ", static_cast<void*>(handle_));
  return buf + device_->describe();
}

int Stream::priority() const {
  ScopedContext scope(*device_);
  int p = 0;
  CUMEM_CU(cuStreamGetPriority, (handle_, &p), "reading the priority of " + describe());
  return p;
}

void Stream::synchronize() const {
  ScopedContext scope(*device_);
  // Capture: a capturing stream's work has not run (refused before the
  // driver would invalidate the capture); the wait itself in relaxed mode.
  refuse_if_capturing(this, "synchronize");
  RelaxedCaptureMode relaxed;
  CUMEM_CU(cuStreamSynchronize, (handle_), "synchronizing " + describe());
}

bool Stream::query() const {
  ScopedContext scope(*device_);
  refuse_if_capturing(this, "query whether the work is done");
  RelaxedCaptureMode relaxed;
  const CUresult r = CUMEM_CU_RESULT(cuStreamQuery, (handle_));
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (r != CUDA_SUCCESS) driver::check(r, "cuStreamQuery", "querying " + describe());
  return true;
}

void Stream::wait(CUevent event) const {
  ScopedContext scope(*device_);
  CUMEM_CU(cuStreamWaitEvent, (handle_, event, 0), "making " + describe() + " wait for an event");
}

void Stream::wait(const Stream& other) const {
  if (&other == this) return;
  ScopedContext scope(*other.device_);
  const char* failed = nullptr;
  const CUresult r = enqueue_wait(other.handle_, handle_, &failed);
  if (r != CUDA_SUCCESS)
    driver::check(r, failed, "making " + describe() + " wait for " + other.describe());
}

CUresult enqueue_wait(CUstream earlier, CUstream later, const char** failed_call) {
  CUevent marker = nullptr;
  CUresult r = CUMEM_CU_RESULT(cuEventCreate, (&marker, CU_EVENT_DISABLE_TIMING));
  *failed_call = "cuEventCreate";
  if (r == CUDA_SUCCESS) {
    r = CUMEM_CU_RESULT(cuEventRecord, (marker, earlier));
    *failed_call = "cuEventRecord";
  }
  if (r == CUDA_SUCCESS) {
    r = CUMEM_CU_RESULT(cuStreamWaitEvent, (later, marker, 0));
    *failed_call = "cuStreamWaitEvent";
  }
  if (marker) CUMEM_CU_CLEANUP(cuEventDestroy, (marker), "destroying the event that orders two streams");
  if (r == CUDA_SUCCESS) *failed_call = nullptr;
  return r;
}

void order_or_synchronize(const Device& device, CUstream earlier, CUstream later,
                          const char* what) {
  ScopedContext scope(device);
  const char* failed = nullptr;
  if (enqueue_wait(earlier, later, &failed) != CUDA_SUCCESS)
    CUMEM_CU(cuCtxSynchronize, (), what);
}

void order_after_remembered(const Device& device, const Stream* earlier, CUstream later,
                            const char* what) {
  if (earlier && earlier->foreign()) {
    ScopedContext scope(device);
    RelaxedCaptureMode relaxed;
    CUMEM_CU(cuCtxSynchronize, (), what);
    return;
  }
  order_or_synchronize(device, native_or_legacy(earlier), later, what);
}

}  // namespace cumem::core
