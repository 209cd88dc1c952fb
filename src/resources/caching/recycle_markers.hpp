// Markers that tell the expandable cache when the work of freed pieces is
// done, so that it can unmap their pages (recycle them) without waiting for
// the device. A cache recycles the whole pages of free fragments before it
// maps new ones (caching_resource.cpp, recycle_fragments); unmapping needs the
// fragments' last users to have finished, and a device-wide wait for that came
// about once per training step (ResNet-50 on the H200, run E of 2026-12-04,
// whose second training ran at 91 % of PyTorch's steps/s): it drains the queue
// the host had filled. Instead, each free stamps its piece with the segments'
// clock (Segments::clock), and the cache records a marker (an event) on a
// stream when it maps pages for it, and on a fragment's stream when a recycle
// needs it: a piece is done when a marker recorded after its free has
// completed.
//
// Per stream key: the legacy default stream and libcumem's own streams get an
// event of the cache's; a foreign stream (a framework's) is never touched
// after its free, and its own free marker (Stream::marker_done) says whether
// all its eager frees (the large pieces') are done; a per-thread default
// stream cannot be named from here, and its pieces are done only after a
// device wait. Under the adaptor's central lock.
#pragma once

#include <cstdint>
#include <vector>

#include "../../device.hpp"
#include "../../stream.hpp"

namespace cumem::core::caching {

class RecycleMarkers {
 public:
  explicit RecycleMarkers(const Device* device) : device_(device) {}
  ~RecycleMarkers();
  RecycleMarkers(const RecycleMarkers&) = delete;
  RecycleMarkers& operator=(const RecycleMarkers&) = delete;

  // Whether the work queued before a free stamped `freed_at` on stream
  // `key` is done. `stream`: the key's stream (null for the legacy default
  // stream or none). Asks the driver at most once per key per call of
  // begin(): begin() starts a recycle, and forgets what was asked.
  void begin() { ++generation_; }
  bool done(uintptr_t key, const Stream* stream, uint64_t freed_at);
  // Records a marker on `key`'s stream that covers the frees stamped up to
  // `covers` (the clock before it moves on), unless one is pending (true
  // then too: a later record follows its completion). False when the key's
  // stream cannot take one (foreign, per-thread, capturing, or a driver
  // failure): its pieces are not known done until a device wait.
  bool mark(uintptr_t key, const Stream* stream, uint64_t covers);
  // Pending markers (tests).
  size_t pending() const;

 private:
  struct Entry {
    uintptr_t key = 0;
    CUevent event = nullptr;
    bool pending = false;        // recorded, not yet seen complete
    uint64_t covers = 0;         // the pending record covers frees up to this tick
    uint64_t done_through = 0;   // frees up to this tick are done
    uint64_t asked = 0;          // the generation the driver was last asked in
    bool foreign_done = false;   // a foreign stream's answer in that generation
  };
  Entry* find(uintptr_t key);
  // The key's entry, made if need be; beyond kKept entries, one with no
  // pending marker goes first (its event destroyed: its pieces are then
  // not known done until a new marker).
  Entry& entry(uintptr_t key);
  static constexpr size_t kKept = 16;
  void destroy(Entry& e) noexcept;
  // Asks the driver whether e's pending marker has completed; if so, its
  // frees are done (done_through) and nothing is pending.
  bool completed(Entry& e) noexcept;

  const Device* device_;
  std::vector<Entry> entries_;
  uint64_t generation_ = 0;
};

}  // namespace cumem::core::caching
