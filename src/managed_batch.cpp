// Batched managed-memory operations (cuda.core's prefetch_batch,
// discard_batch and discard_prefetch_batch): every buffer checked first
// (open, managed, not overlapping another of the batch), then one
// cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync or
// cuMemDiscardAndPrefetchBatchAsync (CUDA 13.0+). Prefetches fall back to one
// cuMemPrefetchAsync per buffer on older drivers; discards have no such form.
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

  const bool looped = op == Op::prefetch && !t.cuMemPrefetchBatchAsync_fn;
  if (looped) {
    const CUstream s = native_or_legacy(stream);
    for (const Item& it : items) {
      const Location to = locations[num_locations == 1 ? 0 : it.index];
      CUMEM_CU(cuMemPrefetchAsync, (it.ptr, it.size, to_cu(to), 0, s),
               "prefetching " + describe_bytes(it.size) + " of managed memory to " + describe(to) +
                   " as " + batch::nth("buffer", it.index) + " (" + batch_text(op, n) +
                   ", one at a time; the ones before it were queued)");
    }
    batch::count_prefetches(n, true);
    return;
  }

  std::vector<CUdeviceptr> ptrs(n);
  std::vector<size_t> sizes(n);
  // Equal neighbouring locations go to the driver once: locs[k] covers the
  // buffers from loc_indices[k] to the next run's start.
  std::vector<CUmemLocation> locs;
  std::vector<size_t> loc_indices;
  for (size_t k = 0; k < n; ++k) {
    ptrs[k] = items[k].ptr;
    sizes[k] = items[k].size;
    if (op == Op::discard) continue;
    const Location to = locations[num_locations == 1 ? 0 : items[k].index];
    if (k == 0 || !same(to, locations[num_locations == 1 ? 0 : items[k - 1].index])) {
      locs.push_back(to_cu(to));
      loc_indices.push_back(k);
    }
  }
  batch::on_batch_stream(stream, [&](CUstream s) {
    switch (op) {
      case Op::prefetch:
        CUMEM_CU(cuMemPrefetchBatchAsync,
                 (ptrs.data(), sizes.data(), n, locs.data(), loc_indices.data(), locs.size(), 0, s),
                 batch_text(op, n));
        break;
      case Op::discard:
        CUMEM_CU(cuMemDiscardBatchAsync, (ptrs.data(), sizes.data(), n, 0, s), batch_text(op, n));
        break;
      case Op::discard_prefetch:
        CUMEM_CU(cuMemDiscardAndPrefetchBatchAsync,
                 (ptrs.data(), sizes.data(), n, locs.data(), loc_indices.data(), locs.size(), 0, s),
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
