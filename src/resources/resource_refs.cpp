// A resource's core references, counted per thread shard while the user
// holds a handle to it: each buffer takes one reference on its resource and
// gives it back when it is destroyed, and with one shared count every
// thread allocating from the resource would write the same cache line.
//
// Each shard holds credit: references taken from the shared count
// (Object's) in batches of kBatch. A retain takes one from the calling
// thread's shard (refilling it with a batch when empty); a release gives
// one back to the shard of the thread releasing (which returns a batch
// once it holds 2 * kBatch). Every reference is in the shared count the
// whole time, so the resource cannot be destroyed while credit exists;
// hence credit is only kept while the user holds a handle. Marks in the
// credit word say when it is not kept:
// - kNotYet: the user has never held a handle (a resource only the core
//   uses); retain and release use the shared count;
// - kClosed: the user's handles are all gone. Closing takes every shard's
//   credit back out of the shared count before the handles' own reference
//   is dropped; from then on retain and release use the shared count.
// A shard's word changes only by compare-and-swap or exchange, so a
// release either gives its reference to open credit (and touches the
// resource no more) or sees the mark and releases through the shared
// count: no reference is lost or counted twice.
#include "resource.hpp"

#include "../snapshot/registry.hpp"

namespace cumem::core {

using credit::kBatch;
using credit::kClosed;
using credit::kMarks;
using credit::kNotYet;

Resource::Resource(Ref<Device> device, const ResourceProperties& properties)
    : Object(Tag::resource),
      device_(std::move(device)),
      properties_(properties),
      id_(snapshot::next_resource_id()) {
  for (Credit& c : credits_) c.refs.store(kNotYet, std::memory_order_relaxed);
  want_user_hook();  // user_handles_live opens and closes the shards
}

Resource::~Resource() { snapshot::unpublish(id_); }

// retain() found no credit to take, or a mark (or lost its one
// compare-and-swap).
void Resource::retain_slow(std::atomic<int64_t>& c) const noexcept {
  int64_t n = c.load(std::memory_order_relaxed);
  for (;;) {
    if (n & kMarks) return Object::retain();
    if (n == 0) break;
    if (c.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return;
  }
  // Empty: a batch from the shared count, one reference of it ours. The
  // caller holds a reference already, so the object is alive throughout.
  add_refs(kBatch);
  for (;;) {
    if (n & kMarks) {
      drop_refs(kBatch - 1);  // closed meanwhile: keep only ours
      return;
    }
    if (c.compare_exchange_weak(n, n + kBatch - 1, std::memory_order_relaxed)) return;
  }
}

// release() found the credit full, or a mark (or lost its one
// compare-and-swap).
void Resource::release_slow(std::atomic<int64_t>& c) const noexcept {
  int64_t n = c.load(std::memory_order_relaxed);
  for (;;) {
    if (n & kMarks) return Object::release();
    if (n + 1 < 2 * kBatch) {
      // Given to the shard's credit: this thread touches the resource no more.
      if (c.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) return;
    } else if (c.compare_exchange_weak(n, n + 1 - kBatch, std::memory_order_acq_rel)) {
      // A batch back to the shared count (ours among them).
      drop_refs(kBatch);
      return;
    }
  }
}

void Resource::user_handles_live(bool live) const noexcept {
  if (live) {
    // Whole now (a handle is handed out after construction): snapshots of
    // the process may list it.
    snapshot::publish(*this);
    // Opens the shards, once: after a close they stay closed.
    for (Credit& c : credits_) {
      int64_t expected = kNotYet;
      c.refs.compare_exchange_strong(expected, 0, std::memory_order_relaxed);
    }
    return;
  }
  // The handles' shared reference is still held: the drops cannot destroy.
  for (Credit& c : credits_) {
    const int64_t n = c.refs.exchange(kClosed, std::memory_order_acq_rel);
    if (!(n & kMarks) && n > 0) drop_refs(static_cast<uint32_t>(n));
  }
}

}  // namespace cumem::core
