// The caching adaptor: the parts in caching/, composed. Rules:
// - Sizes are rounded up (caching/size_classes.hpp): to 512 B at least, to 8
//   steps per power of two up to 16 MiB (at most 12.5% more), and to
//   multiples of 2 MiB above.
// - Small blocks (up to 128 KiB) are cached in the freeing thread's shard
//   (thread_shard.hpp: one per live thread, so its lock is uncontended) by
//   rounded size, and handed out again from there: an allocate + free pair
//   takes no shared lock and writes no shared cache line. A shard keeps up
//   to kShardCap bytes of small blocks (caching/thread_cache.hpp); beyond
//   that, freed blocks go to the central cache, which every thread looks in
//   before asking the upstream.
// - Large blocks (above 128 KiB) come from segments (caching/segments.hpp),
//   each one upstream allocation: of 20 MiB for requests under 10 MiB (when
//   the upstream has room), else of the rounded size. The central cache
//   hands out the smallest free piece that fits (the lowest address among
//   equals), split to the rounded size; a freed piece merges with free
//   neighbours of its segment freed on the same stream, and a segment that
//   is free whole goes back to the upstream when the cache is released. A
//   thread keeps its last kThreadLarge freed large blocks (up to kShardCap
//   bytes) and hands them out again without the central lock; a large miss
//   moves every thread's kept blocks to the central pieces. In an
//   expandable cache, a large request the thread's kept blocks cannot
//   serve first moves that thread's kept blocks there (so that they merge
//   and take part in the best fit).
// - Streams (caching/stream_order.hpp): a block freed on a stream is handed
//   out again at once on that stream. On another stream, that stream is
//   first made to wait for an event recorded then on the freeing stream.
//   Each cache keeps a reference to the streams its blocks were freed on
//   (one per stream, not per block).
// - Over an upstream that frees synchronously (host, legacy pinned, ...), a
//   free first waits as the upstream would (the stream, else the legacy
//   default stream of its device), and blocks are then reusable anywhere.
// - Stream capture (caching/capture_pools.hpp): on a stream that captures a
//   CUDA graph, whoever began the capture, allocations come from the
//   capture's private pool (its own upstream memory, never a block eager
//   work used), blocks freed inside the capture go back to that pool, and
//   the pool keeps the capture's blocks, freed or not, until the user
//   releases it (release_capture_pool: the graph is gone). Asking whether a
//   stream captures is one driver call per allocation and per free on a
//   stream other than the legacy default stream; with
//   CachingOptions::libcumem_captures_only, only captures begun through
//   libcumem are seen (no call while none is underway). A block from
//   outside a capture freed on a capturing stream is refused (the framework
//   entry points hold such frees until the capture ends).
// - Out of memory upstream: every cached block goes back (after waiting for
//   the device), the upstream is asked to trim what it holds unused
//   (trimmable.hpp), and the allocation is tried once more before failing.
// - Expandable (an option; caching/expandable.hpp): large blocks are pieces
//   of address ranges reserved per stream on the upstream's device, rounded
//   to 512 B only, with pages (by default 8 MiB for blocks of 16 MiB or
//   more, else 2 MiB) mapped when the free pieces cannot serve a request
//   and unmapped when the cache gives memory back (trim, release_cached,
//   out of memory), after a wait for the device; before new pages, free
//   fragments' pages are recycled once known done (recycle_fragments: no
//   device wait while the cache stays within 1 % of its high-water mark;
//   pages mapped in the place of fragments not known done are a loan, and
//   large frees unmap as many free pages once their work is done:
//   repay_loans).
//   Small blocks are pieces of ranges of their own (small_pages_: pages of
//   the smaller size, 2 MiB by default), carved
//   where a small miss finds no cached block and cached by size class as in
//   the plain cache; the cache gives memory back by merging them there and
//   unmapping the whole pages free. (Allocations of their own from a driver
//   pool, as before, took the pool's 32 MiB growth step for a few MiB of
//   small blocks.) The upstream serves the capture pools only.
#include "caching_resource.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../log.hpp"
#include "../snapshot/history.hpp"
#include "../snapshot/snapshot.hpp"
#include "../spin_lock.hpp"
#include "../thread_shard.hpp"
#include "../ipc/virtual_handle.hpp"
#include "../unmap_events.hpp"
#include "../vmm/spec.hpp"
#include "caching/bins.hpp"
#include "caching/capture_pools.hpp"
#include "caching/expandable.hpp"
#include "caching/inventory.hpp"
#include "caching/recycle_markers.hpp"
#include "caching/segments.hpp"
#include "caching/shared_pages.hpp"
#include "caching/size_classes.hpp"
#include "caching/stream_order.hpp"
#include "caching/thread_cache.hpp"
#include "caching/vmm_pages.hpp"
#include "ipc_shareable.hpp"
#include "snapshottable.hpp"
#include "sync_resource.hpp"
#include "trimmable.hpp"
#include "virtual_shareable.hpp"

namespace cumem::core {
namespace {

using namespace caching;

// recycle_fragments maps new pages in place of fragments whose work is not
// known done (no device wait) while the cache stays within 1/kRecycleSlack
// (1 %) of its high-water mark. Replayed with the device 100 requests
// behind, ResNet-50 then waits 12 + 1 times in its two runs (24 + 4 when
// every shortfall waited) and holds 1.0134 / 1.0148 of its peak in use
// (12 + 1 and 1.0107 / 1.0165 since those pages are given back);
// never waiting held 1.0242 (MLP 1.0416), above PyTorch's expandable
// segments (1.0169, 1.0224); 2 % held 1.0191 / 1.0227 with 7 + 0 waits.
constexpr uint64_t kRecycleSlack = 100;
// While pages mapped in that slack are not given back (Central::loaned),
// every kRepayEvery-th large free that reaches the central pieces looks
// for free pages whose work is done to unmap in their place (repay_loans:
// a look sorts the free pieces and may ask the driver about each stream's
// marker).
constexpr uint32_t kRepayEvery = 16;

struct Counters {
  uint64_t hits = 0, misses = 0, reuses = 0;
};

// One thread's cache (or, for the shared shard, that of the threads beyond
// kThreadShards); its lock is taken by its owner and, rarely, by readers and
// release_cached.
struct alignas(64) Shard {
  SpinLock busy;
  ThreadCache cache;
  StreamRefs streams;
  Counters counts;

  void lock() { busy.lock(); }
  void unlock() { busy.unlock(); }
};

// What every thread shares: small blocks beyond the shards' caps, and the
// large segments with their free pieces (upstream allocations, or the
// expandable segments).
struct Central {
  std::mutex mutex;
  Bins small;
  uint64_t small_cached = 0;
  std::unique_ptr<Segments> segments;
  StreamRefs streams;
  Counters counts;
  uint64_t recycles = 0, recycle_waits = 0;  // recycle_fragments' (expandable)
  // The most the cache held after a mapping that left no fragment for its
  // work (since the last trim): recycle_fragments' bound.
  uint64_t high_water = 0;
  // Bytes of pages mapped in the place of fragments whose work was not
  // known done (recycle_fragments' slack), not yet given back: repay_loans
  // unmaps as many free pages once their work is done, so that the cache
  // returns to its high-water mark (a second training run ends where the
  // first did) instead of keeping the slack for good.
  //
  // A mapping that grows the cache beyond the mark and the loans, and
  // borrows nothing, takes in what is still loaned (the mark then counts
  // it): so a growing run (a first training) keeps its 1 % of slack for
  // new loans and waits for the device no more often than before loans
  // were given back, while a run that does not grow (a second training)
  // gives back every loan. Counting every loan out of the mark until it
  // is given back bounded them all by the one 1 % (the ResNet-50 trace
  // replayed 100 requests behind the device waited 17 times instead of 13);
  // taking them in at any mapping that borrowed nothing, even one that
  // unmapped as much as it mapped, kept the loans of a run that did not
  // grow (the MLP's replayed second run ended up to 1.0 % above its first).
  uint64_t loaned = 0;
  uint32_t frees_since_repay = 0;
  uint64_t repaid = 0;  // bytes repay_loans unmapped, ever (for the log)
  SmallSegments small_segments;  // for snapshots: every small upstream allocation held
};

// A block with the stream it was freed on, moved between caches.
using BlockOn = std::pair<Block, Ref<Stream>>;

class CachingResource final : public Adaptor,
                              public Caching,
                              public Snapshottable,
                              public IpcShareable,
                              public VirtualShareable {
 public:
  // `pages`: where an expandable cache maps its pages; null for the plain cache.
  CachingResource(Ref<Resource> upstream, std::unique_ptr<PageSource> pages,
                  bool libcumem_captures_only)
      : Adaptor(std::move(upstream), ResourceKind::caching),
        stream_ordered_(this->upstream().properties().stream_ordered),
        libcumem_captures_only_(libcumem_captures_only),
        pages_(std::move(pages)) {
    if (!pages_) {
      central_.segments = std::make_unique<Segments>();
      return;
    }
    pages_->set_owner(id());  // its pages' unmaps are notified
    auto expandable = std::make_unique<ExpandableSegments>(*pages_);
    expandable_ = expandable.get();
    central_.segments = std::move(expandable);
    small_pages_ = std::make_unique<ExpandableSegments>(*pages_);
  }
  ~CachingResource() override {
    try {
      release_cached();
    } catch (...) {
      log::swallowed("giving the cached blocks back to the upstream resource");
    }
    {
      // The capture pools' free memory goes back; blocks still in use (a
      // graph that was never released) stay with the upstream, logged.
      std::lock_guard<std::mutex> lock(pools_mutex_);
      if (pools_.live() != 0)
        log::write(log::Level::warning,
                   describe() + " was destroyed with " + std::to_string(pools_.live()) +
                       " block(s) of CUDA graphs' private pools still allocated");
      try {
        pools_.for_each([&](PrivatePool& p) { give_back_pool(p, true); });
      } catch (...) {
        log::swallowed("giving the capture pools' memory back to the upstream resource");
      }
    }
    const uint64_t in_use =
        expandable_ ? expandable_->in_use_bytes() + small_pages_->in_use_bytes() : 0;
    if (in_use != 0)
      log::write(log::Level::warning,
                 describe() + " was destroyed with " + describe_bytes(in_use) +
                     " of blocks still allocated: their pages stay mapped until the process ends");
  }
  std::string describe() const override {
    if (!expandable_) return "caching over " + upstream().describe();
    const uint64_t small = pages_->page_size(), large = pages_->large_page_size();
    const std::string pages = small == large ? describe_bytes(small) + " pages"
                                             : describe_bytes(small) + " and " +
                                                   describe_bytes(large) + " pages";
    return "caching (expandable, " + pages + ") over " + upstream().describe();
  }

  CachingStatistics caching_statistics() const override {
    CachingStatistics c;
    auto add = [&c](const Counters& n) {
      c.hits += n.hits;
      c.misses += n.misses;
      c.stream_reuses += n.reuses;
    };
    for (size_t i = 0; i <= kThreadShards; ++i) {
      Shard& s = shards_[i];
      std::lock_guard<Shard> lock(s);
      c.bytes_cached += s.cache.cached();
      add(s.counts);
    }
    {
      std::lock_guard<std::mutex> lock(central_.mutex);
      c.bytes_cached += central_.small_cached + central_.segments->free_bytes();
      add(central_.counts);
      c.recycles = central_.recycles;
      c.recycle_waits = central_.recycle_waits;
      if (expandable_) {
        c.bytes_cached += small_pages_->free_bytes();
        c.pages_mapped = expandable_->pages_mapped() + small_pages_->pages_mapped();
        c.pages_unmapped = expandable_->pages_unmapped() + small_pages_->pages_unmapped();
      }
    }
    {
      std::lock_guard<std::mutex> lock(pools_mutex_);
      c.capture_pools = pools_.pool_count();
      c.capture_pool_bytes = pools_.reserved();
    }
    c.bytes_reserved = reserved_.load(std::memory_order_relaxed);
    c.peak_bytes_reserved = peak_reserved_.load(std::memory_order_relaxed);
    c.oom_retries = retries_.load(std::memory_order_relaxed);
    return c;
  }

  void release_capture_pool(uint64_t capture_id) override {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    PrivatePool* p = pools_.find(capture_id);
    if (!p)
      fail(Status::not_found, describe() + " has no private pool of capture " +
                                  std::to_string(capture_id) +
                                  " (it allocated nothing under that capture, or the pool was "
                                  "released and empty)");
    if (!p->released) {  // released twice: the first one holds
      p->released = true;
      give_back_pool(*p, false);
    }
    // Nothing in use and nothing held: the pool goes (its id never captures again).
    if (p->in_use == 0 && p->reserved == 0) pools_.erase(capture_id);
  }

  void release_cached() override {
    const uint64_t before = reserved_.load(std::memory_order_relaxed);
    give_back_cached(0);
    record_trim(before, 0);
  }

  void trim(uint64_t keep_bytes) override {
    const uint64_t before = reserved_.load(std::memory_order_relaxed);
    give_back_cached(keep_bytes);
    record_trim(before, keep_bytes);
    // The frees above are ordered on the legacy default stream: the upstream
    // has the memory back only once they ran, and trims only what it has.
    if (stream_ordered_ && device_) {
      ScopedContext scope(*device_);
      CUMEM_CU(cuStreamSynchronize, (CU_STREAM_LEGACY),
               "waiting for the cache's frees before trimming " + upstream().describe());
    }
    core::trim_unused(upstream());
  }

  // Trimmable: a request from an adaptor above gives back every cached block.
  void trim_unused() override { trim(0); }

  // PeerAccessible: the upstream's memory (the small blocks, and every block
  // of the plain cache) and, when expandable, the pages of every range, now
  // and in ranges reserved later.
  void set_peer_access(const Device& peer, bool read_write) override {
    if (!expandable_) return Adaptor::set_peer_access(peer, read_write);
    if (&peer == device_.get()) {
      if (read_write) return;  // the cache's own device always has it
      fail(Status::invalid_argument, "cannot revoke " + peer.describe() + "'s access to " +
                                         describe() + ", whose pages are its memory");
    }
    // The upstream first, outside the central lock: it refuses a peer with
    // no path to the device, or memory with no access to set, before any
    // range changes.
    const bool upstream_before = Adaptor::peer_access(peer);
    Adaptor::set_peer_access(peer, read_write);
    try {
      std::lock_guard<std::mutex> lock(central_.mutex);
      set_pages_access(peer.ordinal(), read_write);  // all ranges or none
    } catch (...) {
      try {
        Adaptor::set_peer_access(peer, upstream_before);
      } catch (...) {
        log::swallowed("restoring the upstream's peer access after a failed change");
      }
      throw;
    }
  }
  bool peer_access(const Device& peer) const override {
    if (!expandable_) return Adaptor::peer_access(peer);
    if (&peer == device_.get()) return true;
    bool pages = false;
    {
      std::lock_guard<std::mutex> lock(central_.mutex);
      pages = expandable_->peer_access(peer.ordinal()) && small_pages_->peer_access(peer.ordinal());
    }
    return pages && Adaptor::peer_access(peer);
  }

  // DmaBufSource: a block is exported as the upstream allocation that holds
  // it (its segment, or a small block's own allocation), which the
  // upstream describes; an expandable block as the pages that hold it.
  DmaBufRanges dmabuf_ranges(void* ptr, size_t size, uintptr_t first,
                             size_t bytes) const override {
    void* segment = nullptr;
    uint64_t segment_size = 0;
    {
      std::lock_guard<std::mutex> lock(central_.mutex);
      const auto& small = central_.small_segments.sizes();
      if (const auto it = small.find(ptr); it != small.end()) {
        segment = ptr;
        segment_size = it->second;
      } else if (expandable_) {
        if (const Piece* p = handed_out_at(ptr)) return expandable_pages(*p, first, bytes);
      } else if (const Piece* p = piece_at(*central_.segments, ptr)) {
        whole_segment(*p, segment, segment_size);
      }
    }
    if (!segment) {
      std::lock_guard<std::mutex> lock(pools_mutex_);
      if (PrivatePool* pool = pools_.owner(ptr)) {
        if (const Piece* p = piece_at(pool->large, ptr)) {
          whole_segment(*p, segment, segment_size);
        } else {
          segment = ptr;  // a small block of a capture's pool: an allocation of its own
          segment_size = round_size(size);
        }
      }
    }
    if (!segment)
      fail(Status::invalid_argument, describe() + " did not hand out this buffer's memory (or it "
                                                  "was freed already)");
    return dmabuf_ranges_of(upstream(), segment, static_cast<size_t>(segment_size), first, bytes);
  }

  // IpcShareable: the small blocks (128 KiB or less) of the plain cache are
  // allocations of the upstream, which shares them as its own buffers when
  // it can (an IPC-enabled pool), and exports itself for them. Large blocks
  // are pieces of segments, and every block of an expandable cache a piece
  // of its pages: one made with the POSIX fd handle type shares those as
  // virtual IPC handles.
  Ref<AllocationHandle> get_allocation_handle() const override {
    return upstream_shareable("exporting the pool under " + describe())
        .get_allocation_handle();
  }
  IpcDescriptor get_ipc_descriptor(void* ptr, size_t size) const override {
    uint64_t block = 0;
    {
      std::lock_guard<std::mutex> lock(central_.mutex);
      const auto& small = central_.small_segments.sizes();
      if (const auto it = small.find(ptr); it != small.end()) block = it->second;
    }
    if (block == 0)
      fail(Status::not_supported,
           expandable_
               ? "the blocks of " + describe() + " are pieces of its pages, not buffers of its "
                 "upstream: share the block at " + address_text(ptr) +
                 " as a virtual IPC handle (cumem_buffer_get_virtual_ipc_handle)"
               : "only the small blocks (" + describe_bytes(kSmallLimit) + " or less) of " +
                     describe() + " share as buffers of its upstream, and " + address_text(ptr) +
                     " is not one: a large block is a piece of an upstream allocation");
    check_share_size(ptr, size, block);
    return upstream_shareable("sharing a small block of " + describe())
        .get_ipc_descriptor(ptr, size == 0 ? block : size);
  }

  // VirtualShareable: a block of an expandable cache made with the POSIX fd
  // handle type, as the pages that hold it (caching/shared_pages.hpp).
  Ref<VirtualIpcHandle> get_virtual_ipc_handle(void* ptr, size_t size) const override {
    if (!expandable_)
      fail(Status::not_supported,
           describe() + " is not expandable: its blocks are pieces of the upstream's allocations "
                        "and cannot be shared as virtual IPC handles");
    if (!pages_->shareable())
      fail(Status::not_supported,
           describe() + " was made without the POSIX fd handle type, so its blocks cannot be "
                        "shared (set handle_types to CUMEM_IPC_HANDLE_POSIX_FD)");
    SharedPages shared;
    uint64_t block = 0;
    {
      std::lock_guard<std::mutex> lock(central_.mutex);
      const Piece* p = handed_out_at(ptr);
      if (!p)
        fail(Status::invalid_argument, "sharing " + address_text(ptr) + ": no block of " +
                                           describe() + " handed out starts there");
      block = p->size;
      check_share_size(ptr, size, block);
      ScopedContext scope(*device_);
      RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
      export_block_pages(*p, size == 0 ? block : size, shared);
    }
    VirtualDescriptor d;
    d.size = size == 0 ? block : size;
    d.offset = shared.offset;
    d.location_type = kVirtualDevice;
    d.location_id = device_->ordinal();
    d.device_uuid = device_->uuid();
    d.exporter_pid = static_cast<uint32_t>(getpid());
    d.handle_types = vmm::kHandlePosixFd;
    d.granularity = pages_->granularity();
    for (const auto& [offset, bytes] : shared.pages) d.chunks.push_back({offset, bytes});
    return VirtualIpcHandle::take(d, shared.fds.release());
  }

  // Snapshottable: every segment and block, taken with every lock held at
  // once (each shard's, then the central one; no other path holds a
  // shard's lock while it takes another lock), so that the blocks add up.
  void snapshot(snapshot::Builder& out) const override {
    out.entry().caching = caching_statistics();
    std::vector<std::unique_lock<Shard>> locks;
    locks.reserve(kThreadShards + 1);
    KeptBlocks kept;
    for (size_t i = 0; i <= kThreadShards; ++i) {
      locks.emplace_back(shards_[i]);
      shards_[i].cache.for_each([&](const Block& b) { kept.emplace(b.ptr, b.key); });
    }
    std::lock_guard<std::mutex> lock(central_.mutex);
    central_.small.for_each([&](const Block& b) { kept.emplace(b.ptr, b.key); });
    describe_segments(*central_.segments, kept, out);
    if (expandable_) describe_segments(*small_pages_, kept, out);
    describe_small(central_.small_segments, kept, out);
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    if (stream_ordered_) {
      const CaptureInfo c = capture_of(stream);
      if (c.capturing()) return allocate_captured(size, stream, c);
      // Handed in, a foreign stream is alive now: a record covers the
      // frees made on it where it was only remembered (CuPy's name none),
      // so that their blocks can serve other streams.
      if (stream && stream->foreign()) stream->cover_frees();
    }
    const uint64_t rounded = expandable_ ? round_expandable(size) : round_size(size);
    const uintptr_t key = stream_ordered_ ? stream_key(stream) : kAnyStream;
    Shard& s = shards_[thread_shard().index];
    {
      std::lock_guard<Shard> lock(s);
      Block found;
      if (s.cache.take(rounded, key, found, s.streams.covered())) {
        hand_out(s.counts, s.streams, found.key, key, stream, found.mark);
        return found.ptr;
      }
    }
    // Expandable: a large block the thread's own blocks cannot serve
    // sends them to the central pieces first, where they merge with free
    // neighbours and take part in the best fit. Kept back, they left
    // their neighbours small, and the requests carved up other free
    // pieces meanwhile: the trainings' traces held up to 1 % more at
    // their peaks (GPT-2 1.0092 against 1.0044, ResNet-50's second run
    // 1.0188 against 1.0080; tests/resource/expandable/replay_trace.cpp)
    // and mapped more pages. A thread's pair of one size still never
    // leaves its shard; a thread's large hits fell from 40 to 36 % of
    // GPT-2's large requests, from 29 to 21 % of ResNet-50's.
    if (expandable_ && !is_small(rounded) && s.cache.may_hold(false)) free_own_large_blocks(s);
    if (is_small(rounded)) {
      if (void* p = take_central_small(rounded, key, stream)) return p;
      // The small blocks other threads keep may be this thread's, freed
      // there (PyTorch's autograd thread frees the forward pass's
      // activations): they join the central cache, and the search runs
      // again. A miss costs the upstream call anyway.
      if (return_small_blocks())
        if (void* p = take_central_small(rounded, key, stream)) return p;
      if (expandable_) return allocate_small_pages(size, rounded, stream);
    } else {
      if (void* p = take_central_large(rounded, key, stream)) return p;
      // The large blocks threads keep (of other sizes, or freed by another
      // thread: PyTorch's backward pass frees on its own thread) may be
      // pieces to split or merge: they join the central free pieces, and
      // the search runs again. A miss costs the upstream call anyway.
      if (return_large_blocks())
        if (void* p = take_central_large(rounded, key, stream)) return p;
      if (expandable_) return allocate_pages(size, rounded, stream);
    }
    return allocate_upstream(size, rounded, stream);
  }

  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    const uint64_t rounded = expandable_ ? round_expandable(size) : round_size(size);
    if (!stream_ordered_) {
      wait_before_free(device_.get(), stream);
      stream = nullptr;
    } else {
      // A foreign stream remembered rather than handed in may be gone: a
      // driver error on the capture question then means it is (and so
      // does not capture), and nothing is queued on it below.
      const bool remembered_foreign =
          stream && stream->foreign() && RememberedStreamScope::active();
      CaptureInfo c;
      try {
        c = capture_of(stream);
      } catch (const Error& e) {
        if (!remembered_foreign || e.status() != Status::driver) throw;
      }
      // A block of a capture's pool goes back there, captured or not.
      if ((c.capturing() || captured_live_.load(std::memory_order_acquire) != 0) &&
          free_captured(ptr, stream, remembered_foreign))
        return;
      if (c.capturing())
        fail(Status::invalid_state,
             "the caching adaptor cannot free on " + stream->describe() +
                 " while it captures a CUDA graph a block allocated outside that capture (the "
                 "graph's replays would run after the block was handed out again); free it "
                 "after the capture ends (nothing was freed)");
    }
    uintptr_t key = stream_ordered_ ? stream_key(stream) : kAnyStream;
    uint64_t mark = 0;
    if (stream_ordered_ && stream && stream->foreign()) {
      // Before the block is seen by another thread: its mark, which a reuse
      // on another stream waits for (the stream itself may be gone then).
      // A small block is reused elsewhere only once a record covers it; a
      // large piece may be at once, so its free records (stream.hpp). A
      // stream remembered rather than handed in may be gone already: not
      // touched, and the block waits for a later record (or a trim).
      try {
        mark = stream->mark_free(!RememberedStreamScope::active(), !is_small(rounded));
      } catch (const Error&) {
        // No marker: the block's work is waited for now, and it has none.
        wait_before_free(device_.get(), stream);
        key = kAnyStream;
      }
    }
    deallocate(shards_[thread_shard().index], Block{ptr, rounded, key, mark}, stream);
  }

 private:
  // invalid_argument unless `size` bytes at `ptr` fit the block there.
  static void check_share_size(const void* ptr, size_t size, uint64_t block) {
    if (size > block)
      fail(Status::invalid_argument, "sharing " + describe_bytes(size) + " at " +
                                         address_text(ptr) + ": the block there has " +
                                         describe_bytes(block));
  }
  // The upstream's IPC, or not_supported naming it.
  const IpcShareable& upstream_shareable(const std::string& doing) const {
    const auto* s = dynamic_cast<const IpcShareable*>(&upstream());
    if (!s)
      fail(Status::not_supported, doing + ": " + upstream().describe() +
                                      " does not take part in IPC (make the cache over an "
                                      "IPC-enabled pool)");
    return *s;
  }
  // The piece handed out at `ptr`, or null.
  static const Piece* piece_at(const Segments& segments, void* ptr) {
    const auto it = segments.pieces().find(ptr);
    return it == segments.pieces().end() || it->second->free ? nullptr : it->second;
  }
  // Under the central lock, in an expandable cache: the piece handed out at
  // `ptr`, a large block's or a small one's (pages either way), or null.
  const Piece* handed_out_at(void* ptr) const {
    if (const Piece* p = piece_at(*central_.segments, ptr)) return p;
    return piece_at(*small_pages_, ptr);
  }
  // The upstream allocation (segment) that the piece `p` is part of.
  static void whole_segment(const Piece& p, void*& ptr, uint64_t& size) {
    const Piece* head = &p;
    while (head->prev) head = head->prev;
    const Piece* tail = &p;
    while (tail->next) tail = tail->next;
    ptr = head->ptr;
    size = static_cast<uint64_t>(tail->ptr - head->ptr) + tail->size;
  }
  // The whole pages of an expandable range that hold [first, first + bytes).
  DmaBufRanges expandable_pages(const Piece& p, uintptr_t first, size_t bytes) const {
    const uintptr_t base = reinterpret_cast<uintptr_t>(p.segment->pages->base());
    const uint64_t page = p.segment->pages->page_size();
    const uint64_t lo = (first - base) / page * page;
    const uint64_t hi = (first + bytes - base + page - 1) / page * page;
    DmaBufRanges r;
    r.device = device_.get();
    r.what = "the pages of " + describe();
    r.whole = DmaBufSpan{base + static_cast<uintptr_t>(lo), static_cast<size_t>(hi - lo)};
    return r;
  }

  void deallocate(Shard& s, const Block& block, const Stream* stream) {
    std::unique_lock<Shard> lock(s);
    if (is_small(block.size)) {
      if (s.cache.keep_small(block)) {
        s.streams.add(block.key, stream);
        return;
      }
      lock.unlock();
      std::lock_guard<std::mutex> central(central_.mutex);
      central_.small.push(block);
      central_.small_cached += block.size;
      central_.streams.add(block.key, stream);
      return;
    }
    if (!ThreadCache::keeps_large(block.size)) {
      lock.unlock();
      std::lock_guard<std::mutex> central(central_.mutex);
      free_piece(block, stream);
      return;
    }
    // The thread keeps its last kThreadLarge large blocks, up to kShardCap
    // bytes: the oldest make room for this one and go to the central pieces.
    s.cache.keep_large(block);
    s.streams.add(block.key, stream);
    if (!s.cache.over_large_limit()) return;
    std::vector<BlockOn> evicted;
    while (s.cache.over_large_limit()) {
      const Block old = s.cache.evict_oldest();
      evicted.emplace_back(old, Ref<Stream>::share(const_cast<Stream*>(s.streams.stream(old.key))));
      s.streams.remove(old.key);
    }
    lock.unlock();
    std::lock_guard<std::mutex> central(central_.mutex);
    for (const auto& [old, on] : evicted) free_piece(old, on.get());
  }

  // Every thread's small blocks (or large ones), taken out of the threads'
  // caches but the shard `skip`, each with a reference to the stream it was
  // freed on. A shard that holds none is passed over without its lock, so
  // a miss with nothing kept elsewhere costs a glance at each shard.
  std::vector<BlockOn> take_thread_blocks(bool small, size_t skip = SIZE_MAX) {
    std::vector<BlockOn> moved;
    for (size_t i = 0; i <= kThreadShards; ++i) {
      if (i == skip || !shards_[i].cache.may_hold(small)) continue;
      std::lock_guard<Shard> lock(shards_[i]);
      drain_shard(shards_[i], small, moved);
    }
    return moved;
  }

  // Under the shard's lock: its small blocks (or large ones) taken out
  // into `moved`, each with a reference to the stream it was freed on.
  static void drain_shard(Shard& s, bool small, std::vector<BlockOn>& moved) {
    auto take = [&](const Block& b) {
      moved.emplace_back(b, Ref<Stream>::share(const_cast<Stream*>(s.streams.stream(b.key))));
      s.streams.remove(b.key);
    };
    if (small)
      s.cache.drain_small(take);
    else
      s.cache.drain_large(take);
  }

  // Moves the other threads' small blocks to the central cache (the
  // calling thread's has none of the class it missed, and keeps its
  // others); false if there were none. Without this a thread that only
  // frees what another allocates keeps up to kShardCap of blocks the other
  // cannot reuse, and the other takes new upstream memory in their place.
  bool return_small_blocks() {
    const std::vector<BlockOn> moved = take_thread_blocks(true, thread_shard().index);
    if (moved.empty()) return false;
    std::lock_guard<std::mutex> lock(central_.mutex);
    for (const auto& [b, stream] : moved) {
      central_.small.push(b);
      central_.small_cached += b.size;
      central_.streams.add(b.key, stream.get());
    }
    return true;
  }

  // Moves every thread's large blocks to the central free pieces; false if
  // there were none.
  bool return_large_blocks() {
    const std::vector<BlockOn> moved = take_thread_blocks(false);
    if (moved.empty()) return false;
    free_pieces(moved);
    return true;
  }

  // The calling thread's large blocks (its shard `s`) to the central free
  // pieces. Out of line: the hits before it stay as small as they were.
  [[gnu::noinline]] void free_own_large_blocks(Shard& s) {
    std::vector<BlockOn> moved;
    {
      std::lock_guard<Shard> lock(s);
      drain_shard(s, false, moved);
    }
    free_pieces(moved);
  }

  // Large blocks taken from threads back to the central free pieces.
  void free_pieces(const std::vector<BlockOn>& blocks) {
    std::lock_guard<std::mutex> lock(central_.mutex);
    for (const auto& [b, stream] : blocks) free_piece(b, stream.get());
  }

  // Under the central lock: a large piece back to the free pieces, merged
  // with free neighbours (each merge leaves one free piece fewer on the
  // neighbour's stream).
  void free_piece(const Block& b, const Stream* stream) {
    const Merged m = central_.segments->put_back(b.ptr, b.key);
    central_.streams.add(m.key, m.key == b.key ? stream : central_.streams.stream(m.key));
    for (int i = 0; i < m.count; ++i) central_.streams.remove(m.absorbed[i]);
    if (central_.loaned != 0 && ++central_.frees_since_repay >= kRepayEvery) {
      central_.frees_since_repay = 0;
      // The free is done: a repayment that fails (no memory for its
      // bookkeeping) is left for a later look, never the free's failure.
      try {
        repay_loans();
      } catch (...) {
        log::swallowed("giving back pages mapped in the place of fragments");
      }
    }
  }

  // Under the lock of the cache that held it: a block freed on stream
  // `freed_key` is handed out on `stream` (`key`): counted, ordered after
  // the freeing stream's work when the streams differ (`mark`: a small
  // block's from a foreign stream; 0 for a large piece, Stream::mark_free),
  // and its stream reference dropped (the cache's reference keeps that
  // stream alive until the event is recorded).
  void hand_out(Counters& counts, StreamRefs& streams, uintptr_t freed_key, uintptr_t key,
                const Stream* stream, uint64_t mark) {
    ++counts.hits;
    if (reuse_order(freed_key, key) != ReuseOrder::none) {
      ++counts.reuses;
      order_reuse(freed_key, streams.stream(freed_key), stream, device_.get(), mark);
    }
    streams.remove(freed_key);
  }

  void* take_central_small(uint64_t rounded, uintptr_t key, const Stream* stream) {
    std::lock_guard<std::mutex> lock(central_.mutex);
    Block b;
    if (!central_.small.take(rounded, key, b, central_.streams.covered())) return nullptr;
    central_.small_cached -= rounded;
    hand_out(central_.counts, central_.streams, b.key, key, stream, b.mark);
    return b.ptr;
  }

  void* take_central_large(uint64_t rounded, uintptr_t key, const Stream* stream) {
    std::lock_guard<std::mutex> lock(central_.mutex);
    const Taken t = central_.segments->take(rounded, key);
    if (!t.ptr) return nullptr;
    // The rest of a split piece is one more free piece on its stream.
    if (t.split) central_.streams.add(t.freed_key, central_.streams.stream(t.freed_key));
    hand_out(central_.counts, central_.streams, t.freed_key, key, stream, 0);
    return t.ptr;
  }

  // The upstream's memory, or nullptr when it is out of memory.
  void* try_upstream(uint64_t bytes, const Stream* stream, std::string* refusal) {
    try {
      return upstream().allocate_raw(static_cast<size_t>(bytes), stream);
    } catch (const Error& e) {
      if (e.status() != Status::out_of_memory) throw;
      if (refusal) *refusal = e.what();
      return nullptr;
    }
  }

  void* allocate_upstream(size_t size, uint64_t rounded, const Stream* stream) {
    // A large request under kMidLimit takes a kMidSegment segment, split
    // (when the upstream has room for it): several fit one allocation.
    uint64_t segment = segment_size(rounded);
    void* ptr = segment > rounded ? try_upstream(segment, stream, nullptr) : nullptr;
    if (!ptr) {
      segment = rounded;
      ptr = try_upstream(rounded, stream, nullptr);
    }
    if (!ptr) {
      retries_.fetch_add(1, std::memory_order_relaxed);
      const CachingStatistics before = caching_statistics();
      trim(0);
      std::string refusal;
      ptr = try_upstream(rounded, stream, &refusal);
      if (ptr && log::enabled(log::Level::info))
        log::write(log::Level::info,
                   describe() + ": the upstream refused " + describe_bytes(rounded) +
                       "; served after giving back " + describe_bytes(before.bytes_cached) +
                       " of cached blocks");
      if (!ptr)
        fail(Status::out_of_memory,
             "the cache asked its upstream for " + describe_bytes(rounded) + " (" +
                 describe_bytes(size) + " rounded up) and was refused even after giving back " +
                 describe_bytes(before.bytes_cached) + " of cached blocks; it had " +
                 describe_bytes(before.bytes_reserved - before.bytes_cached) + " in use of " +
                 describe_bytes(before.bytes_reserved) + " reserved" + free_note(rounded) +
                 "; the upstream said: " + refusal);
    }
    if (!is_small(rounded)) {
      std::lock_guard<std::mutex> lock(central_.mutex);
      // The rest is free, ordered after this stream's work.
      const uintptr_t key = stream_ordered_ ? stream_key(stream) : kAnyStream;
      if (central_.segments->add(ptr, segment, rounded, key))
        central_.streams.add(key, stream_ordered_ ? stream : nullptr);
      ++central_.counts.misses;
    } else {
      {
        std::lock_guard<std::mutex> lock(central_.mutex);
        central_.small_segments.add(ptr, segment);
      }
      Shard& s = shards_[thread_shard().index];
      std::lock_guard<Shard> lock(s);
      ++s.counts.misses;
    }
    count_reserved(segment);
    if (history::on())
      history::record(history::Action::segment_alloc, id(), ptr, segment,
                      history::stream_value(stream));
    return ptr;
  }

  // Expandable: a large block from new pages of the stream's ranges; on out
  // of memory, the fragments left for their work (recycle_fragments) go
  // after a wait for the device and the pages are asked for again; then
  // every cached block goes back (its pages unmapped) and they are asked for
  // once more.
  void* allocate_pages(size_t size, uint64_t rounded, const Stream* stream) {
    // More than the device has can never be mapped: no reservation, no trim.
    if (rounded > pages_->range_size())
      fail(Status::out_of_memory,
           "a block of " + describe_bytes(rounded) + " is larger than the address range the "
           "cache reserves per stream (" + describe_bytes(pages_->range_size()) +
           ", the device's memory and an eighth)");
    std::string refusal;
    bool left = false;
    if (void* p = try_pages(rounded, stream, &refusal, false, &left)) return p;
    retries_.fetch_add(1, std::memory_order_relaxed);
    const CachingStatistics before = caching_statistics();
    if (left) {
      if (void* p = try_pages(rounded, stream, &refusal, true, nullptr)) {
        if (log::enabled(log::Level::info))
          log::write(log::Level::info, describe() + ": mapping pages for " +
                                           describe_bytes(rounded) + " ran out of memory; served "
                                           "after waiting for the device to unmap fragments");
        return p;
      }
    }
    return served_after_trim("pages for " + describe_bytes(rounded), size, rounded, before,
                             refusal, true,
                             [&] { return try_pages(rounded, stream, &refusal, true, nullptr); });
  }

  // After mapping `what` for an allocation of `size` bytes (`rounded`) ran
  // out of memory (`before`: the cache's statistics then; `refusal`: why):
  // every cached block goes back, its pages unmapped, and `again` is tried
  // once more; if that fails too, out of memory, with what the cache held
  // (and, with `note_free`, the free pieces left: free_note).
  template <class Again>
  void* served_after_trim(const std::string& what, size_t size, uint64_t rounded,
                          const CachingStatistics& before, const std::string& refusal,
                          bool note_free, Again&& again) {
    trim(0);
    if (void* p = again()) {
      if (log::enabled(log::Level::info))
        log::write(log::Level::info, describe() + ": mapping " + what +
                                         " ran out of memory; served after giving back " +
                                         describe_bytes(before.bytes_cached) + " of cached blocks");
      return p;
    }
    fail(Status::out_of_memory,
         "the cache could not map " + what + " (" + describe_bytes(size) +
             " asked) even after giving back " + describe_bytes(before.bytes_cached) +
             " of cached blocks; it had " +
             describe_bytes(before.bytes_reserved - before.bytes_cached) + " in use of " +
             describe_bytes(before.bytes_reserved) + " reserved" +
             (note_free ? free_note(rounded) : std::string()) + "; " + refusal);
  }

  // Expandable: a small block carved from the small blocks' pages
  // (small_pages_): a free piece of them, else new pages; on out of memory,
  // every cached block goes back (its pages unmapped) and they are asked
  // for once more.
  void* allocate_small_pages(size_t size, uint64_t rounded, const Stream* stream) {
    std::string refusal;
    if (void* p = try_small_pages(rounded, stream, &refusal)) return p;
    retries_.fetch_add(1, std::memory_order_relaxed);
    return served_after_trim("a page for a small block of " + describe_bytes(rounded), size,
                             rounded, caching_statistics(), refusal, false,
                             [&] { return try_small_pages(rounded, stream, &refusal); });
  }

  // A small block from small_pages_, or nullptr when its pages are out of
  // memory (why in `refusal`): a free piece of the stream's (or with no
  // pending work); else one made so from the cached small blocks of other
  // classes freed on the stream (the central cache's, then the calling
  // thread's), merged into their pages' free pieces, so that the classes a
  // workload stopped asking for serve the new ones without new pages; else
  // new pages. Only such pieces: a free piece on another stream's key would
  // need an order after that stream's work, and pieces carry no marker;
  // every piece loses its key when the cache gives memory back (after a
  // wait for the device).
  void* try_small_pages(uint64_t rounded, const Stream* stream, std::string* refusal) {
    const uintptr_t key = stream_ordered_ ? stream_key(stream) : kAnyStream;
    {
      std::lock_guard<std::mutex> lock(central_.mutex);
      if (void* p = take_small_piece(rounded, key)) return p;
    }
    // Taken before the central lock (a shard's lock is never taken under it).
    const std::vector<Block> own = take_own_small(key);
    std::lock_guard<std::mutex> lock(central_.mutex);
    for (const Block& b : own) small_pages_->put_back(b.ptr, b.key);
    if (void* p = take_small_piece(rounded, key)) return p;
    Grown g;
    if (!grow(*small_pages_, rounded, key, refusal, g)) return nullptr;
    count_mapped(g, stream, 0);
    return g.taken.ptr;
  }

  // Under the central lock: pages of `segments` mapped for a block of
  // `rounded` bytes on `key` (ExpandableSegments::grow) into `g`; false,
  // why in `refusal`, when they are out of memory.
  static bool grow(ExpandableSegments& segments, uint64_t rounded, uintptr_t key,
                   std::string* refusal, Grown& g) {
    try {
      g = segments.grow(rounded, key);
      return true;
    } catch (const Error& e) {
      if (e.status() != Status::out_of_memory) throw;
      *refusal = e.what();
      return false;
    }
  }

  // Under the central lock, after grow(): a miss, the pages' bytes
  // reserved, `loan` of them loaned (mapped in the place of fragments left
  // for their work, recycle_fragments' slack), the high-water mark raised
  // by what the cache holds beyond it and the loans (see Central::loaned),
  // and the mapping in the history.
  void count_mapped(const Grown& g, const Stream* stream, uint64_t loan) {
    ++central_.counts.misses;
    count_reserved(g.mapped);
    const uint64_t reserved = reserved_.load(std::memory_order_relaxed);
    central_.loaned += std::min(loan, g.mapped);
    const uint64_t own = reserved - std::min(reserved, central_.loaned);
    if (own > central_.high_water) {
      // The cache grew beyond its mark by pages no fragment could have
      // given: a mapping of that growth alone takes in what is still
      // loaned; one that also borrowed raises the mark by its own part.
      if (loan == 0) {
        central_.high_water = reserved;
        central_.loaned = 0;
      } else {
        central_.high_water = own;
      }
    }
    if (history::on())
      history::record(history::Action::segment_map, id(), g.mapped_at, g.mapped,
                      history::stream_value(stream));
  }

  // Under the central lock: a free piece of small_pages_ on `key` (or with
  // no pending work) for a small block, after the central cache's small
  // blocks on `key` merged into them when none fits; null when none does.
  void* take_small_piece(uint64_t rounded, uintptr_t key) {
    Taken t = small_pages_->take_on(rounded, key);
    if (!t.ptr && central_.small_cached != 0) {
      central_.small.drain_on(key, [&](const Block& b) {
        small_pages_->put_back(b.ptr, b.key);
        central_.small_cached -= b.size;
        central_.streams.remove(b.key);
      });
      t = small_pages_->take_on(rounded, key);
    }
    if (!t.ptr) return nullptr;
    ++central_.counts.hits;  // cached bytes: the free pieces count as cached
    return t.ptr;
  }

  // The calling thread's small blocks freed on `key` (or with no pending
  // work), taken out of its shard.
  std::vector<Block> take_own_small(uintptr_t key) {
    std::vector<Block> own;
    Shard& s = shards_[thread_shard().index];
    if (!s.cache.may_hold(true)) return own;
    std::lock_guard<Shard> lock(s);
    s.cache.drain_small_on(key, [&](const Block& b) {
      own.push_back(b);
      s.streams.remove(b.key);
    });
    return own;
  }

  // Under the central lock: grants or revokes device `ordinal`'s access to
  // the pages of both kinds of ranges, all or nothing.
  void set_pages_access(int ordinal, bool read_write) {
    const bool small_before = small_pages_->peer_access(ordinal);
    small_pages_->set_peer_access(ordinal, read_write);
    try {
      expandable_->set_peer_access(ordinal, read_write);
    } catch (...) {
      try {
        small_pages_->set_peer_access(ordinal, small_before);
      } catch (...) {
        log::swallowed("restoring the small blocks' pages' peer access after a failed change");
      }
      throw;
    }
  }

  // The block, or nullptr when the pages are out of memory (why in
  // `refusal`). `wait`: whether its recycle may wait for the device; `left`
  // (when given): whether the recycle left fragments whose work was not
  // known done.
  void* try_pages(uint64_t rounded, const Stream* stream, std::string* refusal, bool wait,
                  bool* left) {
    const uintptr_t key = stream_ordered_ ? stream_key(stream) : kAnyStream;
    std::lock_guard<std::mutex> lock(central_.mutex);
    const uint64_t short_of_fragments = recycle_fragments(rounded, key, wait);
    if (left) *left = short_of_fragments != 0;
    Grown g;
    if (!grow(*expandable_, rounded, key, refusal, g)) return nullptr;
    for (int i = 0; i < g.consumed_count; ++i) central_.streams.remove(g.consumed[i]);
    // The rest of the new pages is free, ordered after this stream's work.
    if (g.taken.split) central_.streams.add(key, stream_ordered_ ? stream : nullptr);
    // A marker after the frees so far (one driver call, none while one is
    // pending): the next recycle finds their fragments done.
    if (stream_ordered_ && device_)
      (void)markers_.mark(key, stream, central_.segments->advance_clock());
    count_mapped(g, stream, short_of_fragments);
    if (short_of_fragments && log::enabled(log::Level::info))
      log::write(log::Level::info,
                 describe() + ": mapped " + describe_bytes(g.mapped) + " for a block of " +
                     describe_bytes(rounded) + ", " + describe_bytes(short_of_fragments) +
                     " of it in the place of fragments whose work was not known done, a loan "
                     "given back once their work is (holding " +
                     describe_bytes(reserved_.load(std::memory_order_relaxed)) +
                     ", the high-water mark " + describe_bytes(central_.high_water) + ")");
    return g.taken.ptr;
  }

  // Under the central lock, before new pages are mapped for a block of
  // `rounded` bytes on `key`: where free pieces too small for it hold whole
  // pages (fragments between blocks in use), those pages are unmapped
  // first, so that the cache takes no more physical memory than it holds
  // when only fragmentation keeps it from serving the block. Without this a
  // training run whose layout differs from the last one keeps mapping
  // pages: the cache would end each run higher than the one before.
  //
  // A fragment's pages can go once its last users' work is done: the
  // fragments known done (recycle_markers.hpp: a marker recorded after their
  // free has completed) go; if they are not enough, a marker recorded now
  // on the others' streams is asked once (a device that has caught up with
  // the host has finished them too). The rest stay free pieces, and grow()
  // maps new pages for what they did not give, as long as that keeps the
  // cache within kRecycleSlack of its high-water mark: a later miss
  // recycles them once their markers say done. Only beyond that bound, or
  // with `wait` (out of memory, allocate_pages), is the device waited for so
  // that they all go. (A wait drains the queue the host had filled: waiting
  // whenever the fragments known done fell short cost ResNet-50's second
  // training 5 waits in 7 recycles on the H100, at 38.1 steps/s against
  // PyTorch's 41.8.)
  // Returns the bytes of fragments not known done that stayed (without
  // `wait`): what the pages mapped next take beyond what the cache held.
  uint64_t recycle_fragments(uint64_t rounded, uintptr_t key, bool wait) {
    const uint64_t wanted = expandable_->fragment_bytes(rounded, key);
    if (wanted == 0) return 0;
    std::vector<std::pair<char*, uint64_t>> unmapped;
    std::vector<std::pair<char*, uint64_t>>* spans = history::on() ? &unmapped : nullptr;
    uint64_t bytes = 0;
    if (stream_ordered_ && device_) {
      std::vector<uintptr_t> pending;  // the streams of fragments not known done
      const auto done = known_done(pending);
      markers_.begin();
      bytes = expandable_->recycle(rounded, key, spans, done);
      if (bytes < wanted && !pending.empty()) {
        const uint64_t covers = central_.segments->advance_clock();
        bool marked = false;
        for (uintptr_t k : pending) marked |= markers_.mark(k, central_.streams.stream(k), covers);
        if (marked) {
          pending.clear();
          markers_.begin();
          bytes += expandable_->recycle(rounded, key, spans, done, wanted - bytes);
        }
      }
      // Mapping in the place of the fragments left would take the cache
      // above its high-water mark by more than kRecycleSlack: wait instead.
      const uint64_t after = reserved_.load(std::memory_order_relaxed) - bytes + (wanted - bytes);
      if (bytes < wanted &&
          (wait || after > central_.high_water + central_.high_water / kRecycleSlack)) {
        ++central_.recycle_waits;
        device_->synchronize();
        // Every free piece's work is done: any stream may take it.
        central_.segments->forget_streams({});
        central_.streams.clear();
        bytes += expandable_->recycle(rounded, key, spans, nullptr, wanted - bytes);
      }
    } else {
      bytes = expandable_->recycle(rounded, key, spans);
    }
    if (bytes > 0) ++central_.recycles;  // counted when it unmapped pages, not when all waited
    reserved_.fetch_sub(bytes, std::memory_order_relaxed);
    for (const auto& [ptr, n] : unmapped)
      history::record(history::Action::segment_unmap, id(), ptr, n, 0);
    return wanted - std::min(wanted, bytes);
  }

  // Under the central lock: whether a free piece's work is known done
  // (recycle_markers.hpp); the stream key of each piece that is not goes
  // into `pending`, once.
  std::function<bool(const Piece&)> known_done(std::vector<uintptr_t>& pending) {
    return [this, &pending](const Piece& p) {
      if (markers_.done(p.key, central_.streams.stream(p.key), p.freed_at)) return true;
      if (std::find(pending.begin(), pending.end(), p.key) == pending.end())
        pending.push_back(p.key);
      return false;
    };
  }

  // Under the central lock, at a large free while pages are loaned (see
  // Central::loaned): unmaps the whole pages of free pieces whose work is
  // known done, the smallest first, until the cache is back at its
  // high-water mark or the loan is repaid; never waits for the device.
  // Where the pieces' work is not known done, a marker is recorded on their
  // streams (where one can be) for a later look.
  void repay_loans() {
    const uint64_t reserved = reserved_.load(std::memory_order_relaxed);
    const uint64_t above = reserved > central_.high_water ? reserved - central_.high_water : 0;
    const uint64_t owed = std::min(central_.loaned, above);
    // (Loans exist only where markers do: stream-ordered, with a device.)
    if (owed == 0) {
      central_.loaned = 0;  // nothing above the mark: nothing owed
      return;
    }
    std::vector<std::pair<char*, uint64_t>> unmapped;
    std::vector<uintptr_t> pending;
    markers_.begin();
    const uint64_t bytes =
        expandable_->unmap_done(owed, history::on() ? &unmapped : nullptr, known_done(pending));
    if (bytes < owed && !pending.empty()) {
      const uint64_t covers = central_.segments->advance_clock();
      for (uintptr_t k : pending) (void)markers_.mark(k, central_.streams.stream(k), covers);
    }
    central_.loaned = owed - std::min(owed, bytes);
    if (bytes == 0) return;
    reserved_.fetch_sub(bytes, std::memory_order_relaxed);
    central_.repaid += bytes;
    for (const auto& [ptr, n] : unmapped)
      history::record(history::Action::segment_unmap, id(), ptr, n, 0);
    if (log::enabled(log::Level::info))
      log::write(log::Level::info,
                 describe() + ": unmapped " + describe_bytes(bytes) +
                     " of free pages whose work is done, in return for pages mapped in the "
                     "place of fragments (holding " +
                     describe_bytes(reserved_.load(std::memory_order_relaxed)) +
                     ", the high-water mark " + describe_bytes(central_.high_water) + "; " +
                     describe_bytes(central_.repaid) + " so returned in all)");
  }

  // For an out-of-memory message, after the cache gave back what it could:
  // the free pieces left between blocks in use, the largest of them, and
  // how fragmented they are (all are too small for `request`, or it would
  // have been served).
  std::string free_note(uint64_t request) {
    std::lock_guard<std::mutex> lock(central_.mutex);
    const uint64_t free_bytes = central_.segments->free_bytes();
    if (free_bytes == 0) return "; no free block is left in its segments";
    const uint64_t largest = central_.segments->largest_free();
    const double fragmentation =
        100.0 * (1.0 - static_cast<double>(largest) / static_cast<double>(free_bytes));
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", fragmentation);
    return "; its segments still hold " + describe_bytes(free_bytes) + " free in " +
           std::to_string(central_.segments->free_count()) +
           " blocks between blocks in use, the largest " + describe_bytes(largest) +
           " (fragmentation " + percent + ": every free block is smaller than the " +
           describe_bytes(request) + " asked for)";
  }

  void count_reserved(uint64_t bytes) {
    const uint64_t now = reserved_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = peak_reserved_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_reserved_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  // Tells the unmap subscribers that the upstream allocation [ptr, ptr +
  // size) is about to go back (the blocks handed out of it are no longer
  // the cache's). Only for memory the device can access.
  void notify_release(void* ptr, uint64_t size) const noexcept {
    if (!unmap::any() || !properties().device_accessible) return;
    unmap::Event e;
    e.reason = unmap::Reason::cache_release;
    e.address = reinterpret_cast<uintptr_t>(ptr);
    e.size = size;
    e.resource_id = id();
    e.device_id = properties().device_id;
    unmap::notify(e);
  }

  // Under the central lock.
  void give_back(void* ptr, uint64_t size) {
    if (!ptr) return;
    if (history::on()) history::record(history::Action::segment_free, id(), ptr, size, 0);
    notify_release(ptr, size);
    upstream().deallocate_raw(ptr, static_cast<size_t>(size), nullptr);
    central_.small_segments.remove(ptr);
    reserved_.fetch_sub(size, std::memory_order_relaxed);
  }

  void record_trim(uint64_t reserved_before, uint64_t keep_bytes) {
    if (!history::on()) return;
    const uint64_t now = reserved_.load(std::memory_order_relaxed);
    history::record(history::Action::trim, id(), nullptr,
                    reserved_before > now ? reserved_before - now : 0, 0, keep_bytes);
  }

  // Gives cached blocks back to the upstream until at most `keep` bytes
  // stay cached: upstream allocations free whole first (largest first),
  // then small blocks (largest first). What stays is in the central cache,
  // reusable on any stream (the device was waited for).
  void give_back_cached(uint64_t keep) {
    // Every thread's blocks go to the central cache first.
    std::vector<Block> small;
    std::vector<void*> large;
    for (size_t i = 0; i <= kThreadShards; ++i) {
      Shard& s = shards_[i];
      std::lock_guard<Shard> lock(s);
      s.cache.drain_small([&](const Block& b) { small.push_back(b); });
      s.cache.drain_large([&](const Block& b) { large.push_back(b.ptr); });
      s.streams.clear();
    }
    std::lock_guard<std::mutex> lock(central_.mutex);
    central_.small.drain([&](const Block& b) { small.push_back(b); });
    central_.small_cached = 0;
    if (small.empty() && large.empty() && !central_.segments->has_free() &&
        !(expandable_ && small_pages_->has_free()))
      return;
    // Work queued before the frees may still use the blocks (and their
    // pages); after this wait, which stream freed what no longer matters.
    if (stream_ordered_ && device_) device_->synchronize();
    central_.segments->forget_streams(large);
    central_.streams.clear();
    central_.high_water = 0;
    central_.loaned = 0;  // what the cache keeps now is what it is allowed
    uint64_t cached = central_.segments->free_bytes();
    for (const Block& b : small) cached += b.size;
    central_.segments->release_whole(keep, cached,
                                     [&](void* ptr, uint64_t size) { give_back(ptr, size); });
    if (expandable_) {
      std::vector<std::pair<char*, uint64_t>> unmapped;
      auto* spans = history::on() ? &unmapped : nullptr;
      reserved_.fetch_sub(expandable_->unmap_free(keep, cached, spans), std::memory_order_relaxed);
      // The small blocks merge into the free pieces of their pages, whose
      // whole pages go next while more than `keep` stays cached; what is
      // left free serves the next small misses.
      cached += small_pages_->free_bytes();
      std::vector<void*> returned;
      returned.reserve(small.size());
      for (const Block& b : small) returned.push_back(b.ptr);
      small_pages_->forget_streams(returned);
      reserved_.fetch_sub(small_pages_->unmap_free(keep, cached, spans), std::memory_order_relaxed);
      for (const auto& [ptr, bytes] : unmapped)
        history::record(history::Action::segment_unmap, id(), ptr, bytes, 0);
      return;
    }
    std::sort(small.begin(), small.end(),
              [](const Block& a, const Block& b) { return a.size > b.size; });
    for (Block& b : small) {
      if (cached > keep) {
        give_back(b.ptr, b.size);
        cached -= b.size;
      } else {
        b.key = kAnyStream;  // no pending work, and no mark to wait for
        b.mark = 0;
        central_.small.push(b);
        central_.small_cached += b.size;
      }
    }
  }

  // Whether `stream` captures now, as this adaptor watches captures.
  CaptureInfo capture_of(const Stream* stream) const {
    if (!stream) return {};
    if (libcumem_captures_only_ && !is_capturing(stream)) return {};
    const CaptureInfo c = capture_info(stream);
    if (c.status == CaptureStatus::invalidated)
      fail(Status::invalid_state,
           "the caching adaptor cannot serve " + stream->describe() +
               ": its CUDA graph capture was invalidated by an earlier error; end the capture "
               "(and discard its graph) first");
    return c;
  }

  // An allocation on a stream that captures: from the capture's pool, a
  // block freed in it on the same stream, else new upstream memory.
  void* allocate_captured(size_t size, const Stream* stream, const CaptureInfo& c) {
    const uint64_t rounded = round_size(size);
    const uintptr_t key = stream_key(stream);
    std::lock_guard<std::mutex> lock(pools_mutex_);
    PrivatePool& p = pools_.pool(c.id);
    void* ptr = nullptr;
    if (is_small(rounded)) {
      Block b;
      if (p.small.take_on(rounded, key, b)) {
        ptr = b.ptr;
        p.small_free -= rounded;
      }
    } else if (const Taken t = p.large.take_on(rounded, key); t.ptr) {
      ptr = t.ptr;
    }
    if (!ptr) {
      uint64_t got = 0;
      ptr = allocate_for_pool(rounded, got);
      if (is_small(rounded)) {
        ++p.blocks;
      } else {
        p.large.add(ptr, got, rounded, key);  // the rest is free on this stream
      }
      p.reserved += got;
    }
    pools_.handed_out(p, ptr, rounded);
    captured_live_.store(pools_.live(), std::memory_order_release);
    return ptr;
  }

  // Upstream memory for a capture's pool, allocated outside the capture:
  // on a stream of the cache's own, waited for, in relaxed capture mode
  // (so that neither the allocation nor the wait joins or breaks the
  // capture). A large request asks for a whole segment first, else the
  // rounded size; `got` says which. Under pools_mutex_.
  void* allocate_for_pool(uint64_t rounded, uint64_t& got) {
    RelaxedCaptureMode relaxed;
    if (!pool_stream_) pool_stream_ = Stream::create(device_, true, 0, PriorityMode::clamp);
    uint64_t segment = is_small(rounded) ? rounded : segment_size(rounded);
    void* ptr = segment > rounded ? try_upstream(segment, pool_stream_.get(), nullptr) : nullptr;
    if (!ptr) {
      std::string refusal;
      ptr = try_upstream(rounded, pool_stream_.get(), &refusal);
      if (!ptr)
        fail(Status::out_of_memory, "the cache asked its upstream for " + describe_bytes(rounded) +
                                        " for a CUDA graph's private pool and was refused: " +
                                        refusal);
      segment = rounded;
    }
    pool_stream_->synchronize();
    count_reserved(segment);
    got = segment;
    return ptr;
  }

  // A free of a block a capture's pool handed out: back to that pool
  // (freed on `stream`), or, for a released pool, back to the upstream.
  // False when no pool handed the block out.
  // `gone`: `stream` is a foreign one remembered, which may be gone: a
  // released pool then waits for the device instead, and frees on the
  // legacy default stream.
  bool free_captured(void* ptr, const Stream* stream, bool gone) {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    PrivatePool* p = pools_.owner(ptr);
    if (!p) return false;
    if (p->released && gone) {
      if (device_) device_->synchronize();
      stream = nullptr;
    }
    const uint64_t rounded = pools_.returned(*p, ptr);
    captured_live_.store(pools_.live(), std::memory_order_release);
    if (p->released) {
      // The graph is gone: the memory goes back once the freeing stream's
      // work is done (a small block is an upstream allocation of its own;
      // a piece waits for its segment to be free whole).
      if (is_small(rounded)) {
        notify_release(ptr, rounded);
        upstream().deallocate_raw(ptr, static_cast<size_t>(rounded), stream);
        reserved_.fetch_sub(rounded, std::memory_order_relaxed);
        p->reserved -= rounded;
        --p->blocks;
      } else {
        if (stream) stream->synchronize();
        p->large.put_back(ptr, kAnyStream);
        give_back_pool(*p, true);
      }
      if (p->in_use == 0 && p->reserved == 0) pools_.erase(p->id);
      return true;
    }
    const uintptr_t key = stream_key(stream);
    if (is_small(rounded)) {
      p->small.push(Block{ptr, rounded, key});
      p->small_free += rounded;
    } else {
      p->large.put_back(ptr, key);
    }
    return true;
  }

  // Gives a released pool's free memory back to the upstream, after the
  // device's work (`waited`: the caller already waited for what it frees).
  // Under pools_mutex_.
  void give_back_pool(PrivatePool& p, bool waited) {
    if (p.free_bytes() == 0) return;
    if (!waited && device_) device_->synchronize();
    p.large.forget_streams({});
    uint64_t cached = p.large.free_bytes();
    p.large.release_whole(0, cached, [&](void* ptr, uint64_t size) {
      give_back(ptr, size);
      p.reserved -= size;
    });
    p.small.drain([&](const Block& b) {
      give_back(b.ptr, b.size);
      p.reserved -= b.size;
      --p.blocks;
    });
    p.small_free = 0;
  }

  const bool stream_ordered_;
  const bool libcumem_captures_only_;
  // The capture pools (under pools_mutex_), a stream of the cache's own for
  // their upstream allocations, and the count of their blocks in use (read
  // without the lock by every free: 0 skips the lookup).
  mutable std::mutex pools_mutex_;
  CapturePools pools_;
  Ref<Stream> pool_stream_;
  std::atomic<size_t> captured_live_{0};
  // Expandable: where the pages come from, and the segments they fill (the
  // same object as central_.segments).
  std::unique_ptr<PageSource> pages_;
  ExpandableSegments* expandable_ = nullptr;
  // Expandable: the small blocks' ranges, apart from the large blocks' so
  // that the small blocks the size-class caches keep pack into few pages
  // (under the central lock).
  std::unique_ptr<ExpandableSegments> small_pages_;
  // Under the central lock: the markers that let recycle_fragments unmap
  // without a wait.
  RecycleMarkers markers_{device_.get()};
  // Apart from the object: kThreadShards + 1 shards of a few KiB each.
  const std::unique_ptr<Shard[]> shards_{new Shard[kThreadShards + 1]};
  mutable Central central_;
  std::atomic<uint64_t> reserved_{0}, peak_reserved_{0}, retries_{0};
};

}  // namespace

Ref<Resource> create_caching_resource(Ref<Resource> upstream, const CachingOptions& options) {
  // Checked before the object is made, so that nothing half-made is left.
  std::unique_ptr<PageSource> pages;
  if (options.expandable) {
    const Device* device = upstream->device();
    if (upstream->properties().memory_kind != MemoryKind::device || !device)
      fail(Status::not_supported, "expandable segments are device memory, and " +
                                      upstream->describe() +
                                      " is not: make the expandable cache over a device resource");
    if (options.handle_types & ~vmm::kHandlePosixFd)
      fail(Status::invalid_argument,
           "handle types " + std::to_string(options.handle_types) +
               " for an expandable cache: only the POSIX fd handle type (CUMEM_IPC_HANDLE_POSIX_FD) "
               "or none is supported");
    pages = device_pages(Ref<Device>::share(const_cast<Device*>(device)), options.page_size,
                         options.handle_types);
  } else if (options.handle_types != 0) {
    fail(Status::invalid_argument,
         "handle types are for an expandable cache's pages; a plain caching adaptor shares what "
         "its upstream shares (set expandable, or leave handle_types 0)");
  }
  return Ref<Resource>::adopt(new CachingResource(std::move(upstream), std::move(pages),
                                                  options.libcumem_captures_only));
}

}  // namespace cumem::core
