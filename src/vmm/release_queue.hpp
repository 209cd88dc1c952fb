// Virtual memory to unmap once the GPU work queued before its release is
// done: whole ranges (a freed buffer, the old addresses of a buffer that
// moved) and detached mappings (the tail of a buffer that shrank). Each is
// ordered after the work queued so far on a stream by an event recorded
// there, or released at once when the stream has no work queued.
//
// Why an event and not a host function (cuLaunchHostFunc): CUDA forbids
// driver calls inside a host function, and cuMemUnmap, cuMemRelease and
// cuMemAddressFree are driver calls, so a host function could only hand the
// work to another thread. Instead the owner drains the queue on its own
// calls: reclaim() releases what is done (one cuEventQuery per item), and
// wait_all() / wait_for() wait for the events first. Memory freed on a busy
// stream is therefore given back at the owner's next call after the work
// ends (the virtual resource reclaims on every call, and waits for all of
// it before reporting out of memory).
//
// Not thread-safe: the owner serializes every call (the virtual resource
// holds its lock). Driver calls run in the context of the queue's device.
#pragma once

#include <cuda.h>

#include <deque>
#include <memory>

#include "../stream.hpp"
#include "range.hpp"

namespace cumem::core::vmm {

class ReleaseQueue {
 public:
  explicit ReleaseQueue(Ref<Device> device) : device_(std::move(device)) {}
  // Waits for every item, then releases it (wait_all).
  ~ReleaseQueue();
  ReleaseQueue(const ReleaseQueue&) = delete;
  ReleaseQueue& operator=(const ReleaseQueue&) = delete;

  // Takes `range` (left untouched when this throws) and destroys it after
  // the work queued so far on `stream` (null: the legacy default stream of
  // the queue's device), at once when the stream has none. `releases`:
  // the physical bytes that go with it (0 for the old addresses of a range
  // that moved, whose chunks stay mapped elsewhere), for bytes(). A stream
  // that is capturing into a graph is refused (invalid_argument): its work
  // runs when the graph is launched, which the queue cannot know.
  void retire(std::unique_ptr<Range>& range, const Stream* stream, size_t releases);
  // As above for mappings detached from `origin` (which may be destroyed
  // before them); `mappings` is left untouched when this throws.
  void retire(Mappings& mappings, const Range* origin, const Stream* stream);

  // Releases every item whose work is done. Never throws (a failing event
  // query counts as done: the work cannot still run on a lost context).
  void reclaim() noexcept;
  // Waits for every item's work, then releases it.
  void wait_all() noexcept;
  // Waits for and releases the mappings detached from `origin` (before
  // mapping its span again).
  void wait_for(const Range* origin) noexcept;

  // Physical bytes that the items still hold (what their releases give back).
  size_t bytes() const noexcept { return bytes_; }
  size_t size() const noexcept { return items_.size(); }

 private:
  struct Item {
    CUevent event = nullptr;
    std::unique_ptr<Range> range;
    Mappings mappings;
    const Range* origin = nullptr;
    size_t bytes = 0;
  };
  // The event that orders a release after `stream`'s queued work, or
  // nullptr when there is none.
  CUevent order_after(const Stream* stream);
  void release(Item& item) noexcept;

  Ref<Device> device_;
  std::deque<Item> items_;
  size_t bytes_ = 0;
};

}  // namespace cumem::core::vmm
