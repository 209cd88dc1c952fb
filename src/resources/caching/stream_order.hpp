// Stream-ordered reuse in the caching adaptor: which stream a cached block
// was freed on (its key), the references a cache holds to those streams, and
// how a block's reuse on another stream is ordered after the freeing
// stream's work.
//
// A block freed on a stream is handed out again at once on that stream
// (stream order makes that safe). On another stream, that stream is first
// made to wait for an event recorded then on the freeing stream (two driver
// calls, on that path only); a foreign stream (a framework's, which may be
// destroyed while its blocks are cached) is never touched after its free:
// each free on it takes a mark of its free marker, which is recorded now
// and then (Stream::mark_free), and a reuse elsewhere waits for a record
// that covers the block's free. A cache keeps one reference per stream its
// blocks were freed on (not one per block), so that a stream libcumem
// created outlives the blocks freed on it (stream.hpp's lifetime rule).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "../../stream.hpp"
#include "bins.hpp"
#include "cache_line.hpp"

namespace cumem::core::caching {

// Which stream a block was freed on: its CUstream, or for the per-thread
// default stream (a different stream on every thread) a number of the
// thread's own that no other thread ever has (kAnyStream, in bins.hpp: no
// pending work).
inline bool is_per_thread_key(uintptr_t key) { return (key & 7) == 2; }  // CUstreams are aligned
inline uintptr_t stream_key(const Stream* stream) {
  const CUstream s = native_or_legacy(stream);
  if (s != CU_STREAM_PER_THREAD) return reinterpret_cast<uintptr_t>(s);
  static std::atomic<uintptr_t> next{1};
  static thread_local const uintptr_t mine = next.fetch_add(1, std::memory_order_relaxed) << 3 | 2;
  return mine;
}

// What handing out a block freed on `freed_key` on stream `key` needs.
enum class ReuseOrder {
  none,          // the same stream, or no pending work
  after_stream,  // `key` waits for an event recorded on the freeing stream
  after_device,  // a per-thread default stream of another thread: wait for the device
};
inline ReuseOrder reuse_order(uintptr_t freed_key, uintptr_t key) {
  if (freed_key == key || freed_key == kAnyStream) return ReuseOrder::none;
  return is_per_thread_key(freed_key) ? ReuseOrder::after_device : ReuseOrder::after_stream;
}

// Orders the reuse on `stream` (null: the legacy default stream) of a block
// freed on `freed_on` under key `freed_key` (reuse_order not none): the
// work queued there so far (the block's last users) comes before anything
// queued on `stream` from now on. Should the event calls fail, the device
// is waited for. `device`: the context when `stream` is null. `mark`: a
// small block's from a foreign stream (Block::mark); 0 for a large piece,
// whose free was eager (its reuse waits for the record that covers the
// stream's last eager free).
void order_reuse(uintptr_t freed_key, const Stream* freed_on, const Stream* stream,
                 const Device* device, uint64_t mark);

// Unused stream references a cache keeps before dropping them.
inline constexpr size_t kStreamsKept = 8;

// The streams a cache's blocks were freed on, each held once with a count
// of its blocks, so that a block can be ordered after its stream's work.
// S is Stream (a template only so that the counting can be tested alone).
template <class S>
class StreamRefsOf {
 public:
  // One more block freed on `key` (`stream`: null for the legacy default
  // stream, or no stream).
  void add(uintptr_t key, const S* stream) {
    for (Entry& e : entries_)
      if (e.key == key) {
        ++e.blocks;
        return;
      }
    if (entries_.size() >= kStreamsKept)
      entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                    [](const Entry& e) { return e.blocks == 0; }),
                     entries_.end());
    entries_.push_back({key, Ref<S>::share(const_cast<S*>(stream)), 1});
  }
  // One block fewer; the reference stays until kStreamsKept others need room.
  void remove(uintptr_t key) {
    for (Entry& e : entries_)
      if (e.key == key) {
        --e.blocks;
        return;
      }
  }
  const S* stream(uintptr_t key) const {
    for (const Entry& e : entries_)
      if (e.key == key) return e.ref.get();
    return nullptr;
  }
  // Whether a small block freed on a foreign stream may be reused on
  // another stream now: a record of its stream's free marker covers its
  // mark (Stream::mark_free). For Bins::take.
  auto covered() const {
    return [this](const Block& b) {
      const S* s = stream(b.key);
      return s && s->covers(b.mark);
    };
  }
  // Blocks counted on `key` (for tests and checks).
  size_t blocks(uintptr_t key) const {
    for (const Entry& e : entries_)
      if (e.key == key) return e.blocks;
    return 0;
  }
  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

 private:
  struct Entry {
    uintptr_t key;
    Ref<S> ref;  // null: the legacy default stream, or no stream
    size_t blocks;
  };
  std::vector<Entry, CacheLineAllocator<Entry>> entries_;
};
using StreamRefs = StreamRefsOf<Stream>;

}  // namespace cumem::core::caching
