// The memory history (PyTorch's _record_memory_history): while it is on,
// every resource records its allocations and frees, the caching adaptor its
// segments (upstream allocations, pages mapped and unmapped) and trims,
// every resource its out-of-memory failures, and libcumem's captures their
// begin and end, as events in one bounded ring (the oldest are overwritten),
// each with its time, thread, stream and resource, and when asked the
// native stack of the call that made it. Beside the ring, each live
// allocation's requested size, stream and stack, which a snapshot gives to
// the block it finds at that address.
//
// Off, the cost is one relaxed load and a branch per allocate and free
// (on()); on, one lock per event; with stacks, one backtrace(3) per
// outermost call (nested calls, an adaptor's upstream allocation, share it).
#pragma once

#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace cumem::core {
class Stream;
}

namespace cumem::core::history {

enum class Action : uint8_t {
  allocate = 1,       // a resource handed out `size` bytes at `address`
  free = 2,           // and took them back
  segment_alloc = 3,  // the caching adaptor took a segment from its upstream
  segment_free = 4,   // and gave it back
  segment_map = 5,    // the expandable cache mapped pages at `address`
  segment_unmap = 6,  // and unmapped them
  out_of_memory = 7,  // an allocation of `size` failed; detail: the device's free bytes
  trim = 8,           // memory given back on request; detail: the bytes asked to keep
  capture_begin = 9,  // a capture began on `stream`; detail: the capture mode
  capture_end = 10,   // and ended
};
const char* action_name(Action action) noexcept;

struct Event {
  uint64_t time_ns = 0;   // since the Unix epoch
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;    // the CUstream's value (1: the legacy default stream); 0: none
  uint64_t resource = 0;  // the resource's id; 0: none (captures)
  uint64_t detail = 0;
  uint32_t thread = 0;    // the OS thread id
  uint32_t stack = 0;     // the stack's id; 0: none
  Action action = Action::allocate;
};

// What an allocation made while the history was on was asked for.
struct Live {
  uint64_t size = 0;  // requested
  uint64_t stream = 0;
  uint64_t time_ns = 0;
  uint32_t thread = 0;
  uint32_t stack = 0;
};

struct Options {
  uint64_t max_entries = 65536;  // the ring's size
  bool stacks = false;
};
inline constexpr uint64_t kMaxEntries = uint64_t{1} << 26;

namespace detail {
extern std::atomic<bool> recording;
}
// Whether the history is on: the hot path's only question.
inline bool on() noexcept { return detail::recording.load(std::memory_order_relaxed); }

// Turns it on, emptied (a second start begins again, with new options).
void start(const Options& options);
// Turns it off; the events stay for snapshots until the next start, the
// live allocations are forgotten (their frees would go unseen).
void stop();

// A stream's value in events and snapshots: the CUstream, 1 (the legacy
// default stream) for null, as the logging adaptor writes it.
uint64_t stream_value(const Stream* stream) noexcept;

// An allocate or free of a resource while the history is on is one call:
// with stacks on, the stack is taken once when the outermost call enters
// and given to every event it and its nested calls record (an adaptor's
// upstream allocation). Each enter_call() is matched by one leave_call().
void enter_call() noexcept;
void leave_call() noexcept;

// Records an event (nothing when off). Never throws: an event that finds
// no memory is dropped.
void record(Action action, uint64_t resource, const void* address, uint64_t size,
            uint64_t stream, uint64_t detail = 0) noexcept;
// An allocation and its free, recorded with the live allocations.
void record_allocate(uint64_t resource, const void* address, uint64_t size,
                     uint64_t stream) noexcept;
// record_free forgets the live allocation at `address`, keeping it for the
// calling thread until its next record_free, so that restore() can bring
// it back should the free be refused.
void record_free(uint64_t resource, const void* address, uint64_t size, uint64_t stream) noexcept;
void restore(uint64_t resource, const void* address) noexcept;

// What a snapshot takes: everything, copied under the history's lock.
struct Copy {
  bool recording = false;
  bool with_stacks = false;
  uint64_t max_entries = 0;
  uint64_t recorded = 0;  // events ever recorded since start
  uint64_t dropped = 0;   // of those, overwritten (the ring is full)
  uint64_t stacks_refused = 0;
  std::vector<Event> events;  // oldest first
  // (resource id, address) -> the allocation.
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, Live>> live;
  std::unordered_map<uint32_t, std::vector<void*>> stacks;  // those the events and live allocations name
};
Copy copy();

}  // namespace cumem::core::history
