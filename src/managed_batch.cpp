// Batched managed-memory operations (cuda.core's prefetch_batch,
// discard_batch and discard_prefetch_batch): every buffer checked first
// (open, managed, not overlapping another of the batch), then one
// cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync or
// cuMemDiscardAndPrefetchBatchAsync (CUDA 13.0+). Prefetches fall back to one
// cuMemPrefetchAsync per range on older drivers; discards have no such form.
//
// The driver's cost is per range, not per byte: on the H200 1,000 managed
// buffers of 64 KiB took 33-46 ms of host time as 1,000 ranges (a batch or a
// loop alike), the same 62.5 MiB as one range under 1 ms (bench_batches). So
// buffers that touch, lie in one driver allocation and go to the same
// location are given to the driver as one range: slices of one buffer, and
// the blocks of a caching adaptor's segment over managed memory. Buffers of
// separate allocations stay apart even where they touch (neighbours from the
// managed pool or cuMemAllocManaged often do): the driver refuses a range
// across two allocations (CUDA_ERROR_INVALID_VALUE, seen on the H200).
#include <algorithm>

#include "batch.hpp"
#include "driver/driver.hpp"
#include "error.hpp"

namespace cumem::core {
namespace {

enum class Op { prefetch, discard, discard_prefetch };

const char* name_of(Op op) {
  switch (op) {
    case Op::prefetch: return "prefetch";
    case Op::discard: return "discard";
    case Op::discard_prefetch: return "discard and prefetch";
  }
  return "?";
}

struct Item {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  size_t index = 0;  // in the caller's array
};

bool same(Location a, Location b) { return a.type == b.type && a.id == b.id; }

void check_locations(const Location* locations, size_t num_locations, size_t count) {
  if (num_locations != 1 && num_locations != count)
    fail(Status::invalid_argument,
         "num_locations is " + std::to_string(num_locations) + " for a batch of " +
             std::to_string(count) +
             " buffers; give 1 (one location for every buffer) or the buffer count (one each)");
  for (size_t i = 0; i < num_locations; ++i) {
    // Checked one by one only when a location differs from the one before,
    // so that a broadcast location costs one check.
    if (i > 0 && same(locations[i], locations[i - 1])) continue;
    const std::string what = "locations[" + std::to_string(i) + "]";
    validate(locations[i],
             {LocationType::device, LocationType::host, LocationType::host_numa,
              LocationType::host_numa_current},
             what.c_str());
  }
}

// The non-empty buffers of the batch, checked, and the first device id.
std::vector<Item> checked_items(Op op, size_t count, Buffer* const* buffers, int& first_device_id) {
  std::vector<Item> items;
  items.reserve(count);
  std::vector<batch::Range> ranges;
  ranges.reserve(count);
  first_device_id = -1;
  for (size_t i = 0; i < count; ++i) {
    const Buffer& b = *buffers[i];
    if (b.is_closed())
      fail(Status::buffer_closed,
           "buffers[" + std::to_string(i) + "] (" + batch::nth("buffer", i) + ") was closed");
    const BufferInfo info = b.info();
    if (info.memory_kind != MemoryKind::managed)
      fail(Status::invalid_argument,
           "buffers[" + std::to_string(i) + "] is not managed memory; a batch " + name_of(op) +
               " applies to managed buffers only");
    if (first_device_id < 0) first_device_id = info.device_id;
    if (info.size == 0) continue;
    const auto p = reinterpret_cast<uintptr_t>(info.ptr);
    items.push_back({static_cast<CUdeviceptr>(p), info.size, i});
    ranges.push_back({p, p + info.size, i});
  }
  batch::check_independent(std::move(ranges), {}, "buffer", "range", "range");
  return items;
}

// A range given to the driver: one buffer, or buffers that touch in one
// allocation and go to the same location (`to`; unset for a discard).
// `first` is the caller's index of its lowest buffer, `buffers` how many.
struct Span {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  Location to{};
  size_t first = 0;
  size_t buffers = 1;
};

bool before(const Location& a, const Location& b) {
  return a.type != b.type ? a.type < b.type : a.id < b.id;
}

// The end of the driver allocation that holds `p`, or `fallback` where the
// driver cannot say (then nothing is joined to the range ending there).
CUdeviceptr allocation_end(CUdeviceptr p, CUdeviceptr fallback) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (CUMEM_CU_RESULT(cuMemGetAddressRange, (&base, &size, p)) != CUDA_SUCCESS) return fallback;
  return base + size;
}

// The ranges for the driver, by location and then by address. One
// cuMemGetAddressRange per range (not per buffer): a buffer that starts
// where the range ends belongs to the same allocation exactly when the
// range's allocation extends beyond that point.
std::vector<Span> spans_of(const std::vector<Item>& items, const Location* locations,
                           size_t num_locations) {
  std::vector<Span> spans;
  spans.reserve(items.size());
  for (const Item& it : items)
    spans.push_back({it.ptr, it.size,
                     locations ? locations[num_locations == 1 ? 0 : it.index] : Location{},
                     it.index, 1});
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (!same(a.to, b.to)) return before(a.to, b.to);
    return a.ptr < b.ptr;
  });
  size_t out = 0;
  CUdeviceptr end_of_allocation = 0;  // of spans[out]; 0 until asked
  for (size_t k = 1; k < spans.size(); ++k) {
    Span& last = spans[out];
    const CUdeviceptr last_end = last.ptr + last.size;
    if (same(last.to, spans[k].to) && last_end == spans[k].ptr) {
      if (end_of_allocation == 0) end_of_allocation = allocation_end(last.ptr, last_end);
      if (end_of_allocation > last_end) {
        last.size += spans[k].size;
        last.buffers += 1;
        continue;
      }
    }
    spans[++out] = spans[k];
    end_of_allocation = 0;
  }
  spans.resize(spans.empty() ? 0 : out + 1);
  return spans;
}

std::string span_text(const Span& s) {
  return s.buffers == 1 ? batch::nth("buffer", s.first)
                        : std::to_string(s.buffers) + " buffers that touch, from " +
                              batch::nth("buffer", s.first);
}

std::string batch_text(Op op, size_t n) {
  return std::string(name_of(op)) + " of a batch of " + std::to_string(n) + " managed buffer" +
         (n == 1 ? "" : "s");
}

void run(Op op, const Stream* stream, size_t count, Buffer* const* buffers,
         const Location* locations, size_t num_locations) {
  if (count == 0) return;
  if (op != Op::discard) check_locations(locations, num_locations, count);
  int first_device_id = -1;
  const std::vector<Item> items = checked_items(op, count, buffers, first_device_id);
  if (items.empty()) return;
  const driver::Table& t = driver::get();
  // The batch-only calls are checked before anything is queued.
  if (op == Op::discard && !t.cuMemDiscardBatchAsync_fn)
    driver::missing("cuMemDiscardBatchAsync", driver::version_of_cuMemDiscardBatchAsync);
  if (op == Op::discard_prefetch && !t.cuMemDiscardAndPrefetchBatchAsync_fn)
    driver::missing("cuMemDiscardAndPrefetchBatchAsync",
                    driver::version_of_cuMemDiscardAndPrefetchBatchAsync);
  Ref<Device> holder;
  ScopedContext scope(batch::context_for(stream, first_device_id, holder));
  const size_t n = items.size();

  const std::vector<Span> spans =
      spans_of(items, op == Op::discard ? nullptr : locations, num_locations);
  const size_t ranges = spans.size();

  const bool looped = op == Op::prefetch && !t.cuMemPrefetchBatchAsync_fn;
  if (looped) {
    const CUstream s = native_or_legacy(stream);
    for (const Span& span : spans)
      CUMEM_CU(cuMemPrefetchAsync, (span.ptr, span.size, to_cu(span.to), 0, s),
               "prefetching " + describe_bytes(span.size) + " of managed memory to " +
                   describe(span.to) + " as " + span_text(span) + " (" + batch_text(op, n) +
                   ", one range at a time; the ones before it were queued)");
    batch::count_prefetches(n, true);
    return;
  }

  std::vector<CUdeviceptr> ptrs(ranges);
  std::vector<size_t> sizes(ranges);
  // Equal neighbouring locations go to the driver once: locs[k] covers the
  // ranges from loc_indices[k] to the next run's start.
  std::vector<CUmemLocation> locs;
  std::vector<size_t> loc_indices;
  for (size_t k = 0; k < ranges; ++k) {
    ptrs[k] = spans[k].ptr;
    sizes[k] = spans[k].size;
    if (op == Op::discard) continue;
    if (k == 0 || !same(spans[k].to, spans[k - 1].to)) {
      locs.push_back(to_cu(spans[k].to));
      loc_indices.push_back(k);
    }
  }
  batch::on_batch_stream(stream, [&](CUstream s) {
    switch (op) {
      case Op::prefetch:
        CUMEM_CU(cuMemPrefetchBatchAsync,
                 (ptrs.data(), sizes.data(), ranges, locs.data(), loc_indices.data(), locs.size(),
                  0, s),
                 batch_text(op, n));
        break;
      case Op::discard:
        CUMEM_CU(cuMemDiscardBatchAsync, (ptrs.data(), sizes.data(), ranges, 0, s),
                 batch_text(op, n));
        break;
      case Op::discard_prefetch:
        CUMEM_CU(cuMemDiscardAndPrefetchBatchAsync,
                 (ptrs.data(), sizes.data(), ranges, locs.data(), loc_indices.data(), locs.size(),
                  0, s),
                 batch_text(op, n));
        break;
    }
  });
  if (op == Op::prefetch)
    batch::count_prefetches(n, false);
  else
    batch::count_discards(n);
}

}  // namespace

void prefetch_batch(const Stream* stream, size_t count, Buffer* const* buffers,
                    const Location* locations, size_t num_locations) {
  run(Op::prefetch, stream, count, buffers, locations, num_locations);
}

void discard_batch(const Stream* stream, size_t count, Buffer* const* buffers) {
  run(Op::discard, stream, count, buffers, nullptr, 0);
}

void discard_prefetch_batch(const Stream* stream, size_t count, Buffer* const* buffers,
                            const Location* locations, size_t num_locations) {
  run(Op::discard_prefetch, stream, count, buffers, locations, num_locations);
}

}  // namespace cumem::core
