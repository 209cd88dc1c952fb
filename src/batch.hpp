// Batches: many copies, prefetches or discards submitted to one stream in one
// call (cuda.core's copy_batch, prefetch_batch, discard_batch and
// discard_prefetch_batch). Each goes to the driver's batch call where the
// driver has it (cuMemcpyBatchAsync, cuMemPrefetchBatchAsync, ...), else to
// one driver call per operation; batches of small copies go to the copy
// kernels (copy_kernel.hpp) where they can. Every batch is counted for
// cumem_batch_get_statistics. Copies are in copy_batch.cpp, the managed
// operations in managed_batch.cpp.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "location.hpp"
#include "stream.hpp"

namespace cumem::core {

// The values are the C ABI's (cumem_copy_src_access_order_t); the driver's
// CUmemcpySrcAccessOrder is one more (its 0 is "invalid").
enum class SrcAccessOrder { stream = 0, during_api_call = 1, any = 2 };
enum class OverlapMode { normal = 0, prefer_compute = 1 };

// What one copy of a batch asks of the driver (CUmemcpyAttributes).
struct CopyOptions {
  SrcAccessOrder src_access_order = SrcAccessOrder::stream;
  Location src_location_hint;  // none: no hint
  Location dst_location_hint;
  OverlapMode overlap_mode = OverlapMode::normal;
};

// The copies of a batch over buffers: copy i takes sizes[i] bytes from
// srcs[i] at src_offsets[i] to dsts[i] at dst_offsets[i]. Null offsets are
// all 0; null sizes mean whole buffers (the rest of the source past its
// offset, and the destination past its offset must be as long).
struct BufferCopies {
  Buffer* const* dsts = nullptr;
  const size_t* dst_offsets = nullptr;
  const Buffer* const* srcs = nullptr;
  const size_t* src_offsets = nullptr;
  const size_t* sizes = nullptr;
};

// The same over raw pointers (sizes required).
struct PointerCopies {
  void* const* dsts = nullptr;
  const size_t* dst_offsets = nullptr;
  const void* const* srcs = nullptr;
  const size_t* src_offsets = nullptr;
  const size_t* sizes = nullptr;
};

// Copies `count` regions ordered on `stream` (null: the legacy default
// stream). `options` holds num_options entries: 0 (defaults), 1 (one for
// every copy) or count (one per copy). Everything is checked before anything
// is queued; see cumem.h for the rules.
void copy_batch(const Stream* stream, size_t count, const BufferCopies& copies,
                const CopyOptions* options, size_t num_options);
void copy_batch(const Stream* stream, size_t count, const PointerCopies& copies,
                const CopyOptions* options, size_t num_options);

// Managed buffers: prefetch to locations (num_locations 1 or count),
// discard, or both in one step.
void prefetch_batch(const Stream* stream, size_t count, Buffer* const* buffers,
                    const Location* locations, size_t num_locations);
void discard_batch(const Stream* stream, size_t count, Buffer* const* buffers);
void discard_prefetch_batch(const Stream* stream, size_t count, Buffer* const* buffers,
                            const Location* locations, size_t num_locations);

struct BatchStatistics {
  bool driver_copy_batch = false;
  bool driver_prefetch_batch = false;
  bool driver_discard_batch = false;
  uint64_t copy_batches = 0, copy_batches_looped = 0;
  uint64_t copies = 0, copies_looped = 0;
  uint64_t prefetch_batches = 0, prefetch_batches_looped = 0, prefetches = 0;
  uint64_t discard_batches = 0, discards = 0;
  uint64_t copy_batches_by_kernel = 0, copies_by_kernel = 0;
};
BatchStatistics batch_statistics() noexcept;

namespace batch {

// A range of addresses [begin, end) that operation `index` of a batch reads
// or writes.
struct Range {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  size_t index = 0;
};

// Throws invalid_argument when a range of `writes` overlaps another of
// `writes` or any of `reads` (an operation's own read included): the
// operations of a batch run in no order, so such a batch has no defined
// result. `noun` names the operations ("copy"), `write` and `read` their
// ranges ("destination", "source"). Empty ranges overlap nothing.
void check_independent(std::vector<Range> writes, std::vector<Range> reads, const char* noun,
                       const char* write, const char* read);

// Whether `stream` is capturing a graph (false for the legacy default
// stream, which cannot capture).
bool capturing(const Stream* stream);

// The device whose context a batch uses: the stream's, else the first
// buffer's with a device id, else device 0 (kept alive by `holder`).
const Device& context_for(const Stream* stream, int first_device_id, Ref<Device>& holder);

// The counters of cumem_batch_get_statistics.
// A copy batch of `copies` copies, `looped` of them by one driver call each,
// `by_kernel` of them by the copy kernels.
void count_copies(uint64_t copies, uint64_t looped, uint64_t by_kernel = 0) noexcept;
void count_prefetches(uint64_t buffers, bool looped) noexcept;
void count_discards(uint64_t buffers) noexcept;

// "copy 3 of the batch" for messages.
std::string nth(const char* noun, size_t index);

// Event waits between the legacy default stream and another (enqueue_wait,
// failures thrown with `what`).
void wait_legacy_into(CUstream later, const char* what);
void wait_into_legacy(CUstream earlier, const char* what);

// Queues a batch call on `stream` (null: the legacy default stream) in the
// current context: submit(CUstream) on the stream itself, or, since the
// driver's batch calls refuse the legacy default stream, on the per-thread
// default stream between two event waits (legacy -> per-thread before,
// per-thread -> legacy after), so that the batch runs where work queued on
// the legacy default stream would.
template <class Submit>
void on_batch_stream(const Stream* stream, Submit&& submit) {
  const CUstream s = native_or_legacy(stream);
  if (s != CU_STREAM_LEGACY && s != nullptr) {
    submit(s);
    return;
  }
  wait_legacy_into(CU_STREAM_PER_THREAD, "ordering a batch after the legacy default stream");
  submit(CU_STREAM_PER_THREAD);
  wait_into_legacy(CU_STREAM_PER_THREAD, "ordering the legacy default stream after a batch");
}

}  // namespace batch
}  // namespace cumem::core
