// Batch copies (cuda.core's copy_batch) over buffers and over raw pointers:
// every copy is checked first (open buffers, regions inside them, no copy
// depending on another), then the batch goes to the copy kernels
// (copy_kernel.hpp) when its copies are small and their memory is the
// stream's device's to load and store, else to the driver as one
// cuMemcpyBatchAsync (CUDA 12.8+), or as one cuMemcpyAsync per copy where
// the driver lacks it or the stream is capturing a graph. Copies between
// pageable host buffers are done by the host, as Buffer::copy does. The
// shared batch machinery (independence check, the legacy stream, counters)
// is here too.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "batch.hpp"
#include "copy_kernel.hpp"
#include "driver/driver.hpp"
#include "error.hpp"

namespace cumem::core {
namespace batch {
namespace {

struct Counters {
  std::atomic<uint64_t> copy_batches{0}, copy_batches_looped{0};
  std::atomic<uint64_t> copies{0}, copies_looped{0};
  std::atomic<uint64_t> prefetch_batches{0}, prefetch_batches_looped{0}, prefetches{0};
  std::atomic<uint64_t> discard_batches{0}, discards{0};
  std::atomic<uint64_t> copy_batches_by_kernel{0}, copies_by_kernel{0};
};
// Never destroyed: batches may run from static destructors and atexit.
Counters& counters() {
  static Counters* c = new Counters;
  return *c;
}

void add(std::atomic<uint64_t>& counter, uint64_t n) noexcept {
  counter.fetch_add(n, std::memory_order_relaxed);
}

std::string range_text(const Range& r) {
  char text[64];
  std::snprintf(text, sizeof text, "[0x%llx, 0x%llx)", static_cast<unsigned long long>(r.begin),
                static_cast<unsigned long long>(r.end));
  return text;
}

}  // namespace

std::string nth(const char* noun, size_t index) {
  return std::string(noun) + " " + std::to_string(index) + " of the batch";
}

void check_independent(std::vector<Range> writes, std::vector<Range> reads, const char* noun,
                       const char* write, const char* read) {
  auto empty = [](const Range& r) { return r.begin == r.end; };
  writes.erase(std::remove_if(writes.begin(), writes.end(), empty), writes.end());
  reads.erase(std::remove_if(reads.begin(), reads.end(), empty), reads.end());
  std::sort(writes.begin(), writes.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  // Sorted by start, the written ranges are disjoint when each starts at or
  // after the end of the one before.
  for (size_t k = 1; k < writes.size(); ++k)
    if (writes[k].begin < writes[k - 1].end)
      fail(Status::invalid_argument,
           nth(noun, writes[k - 1].index) + " and " + noun + " " +
               std::to_string(writes[k].index) + " have overlapping " + write + "s " +
               range_text(writes[k - 1]) + " and " + range_text(writes[k]) +
               "; the operations of a batch run in no particular order, so they must not "
               "depend on each other");
  // Disjoint and sorted by start, they are sorted by end too: the first
  // written range ending after a read range starts is the only candidate.
  for (const Range& r : reads) {
    auto it = std::partition_point(writes.begin(), writes.end(),
                                   [&](const Range& w) { return w.end <= r.begin; });
    if (it == writes.end() || it->begin >= r.end) continue;
    if (it->index == r.index)
      fail(Status::invalid_argument, nth(noun, r.index) + ": its " + read + " " + range_text(r) +
                                         " and " + write + " " + range_text(*it) + " overlap");
    fail(Status::invalid_argument,
         nth(noun, it->index) + " writes its " + write + " " + range_text(*it) + " over the " +
             read + " " + range_text(r) + " of " + noun + " " + std::to_string(r.index) +
             "; the operations of a batch run in no particular order, so they must not depend "
             "on each other");
  }
}

bool capturing(const Stream* stream) {
  const CUstream s = native_or_legacy(stream);
  if (s == CU_STREAM_LEGACY || s == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUMEM_CU(cuStreamIsCapturing, (s, &status), "asking whether " + stream->describe() +
                                                  " is capturing a graph");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

const Device& context_for(const Stream* stream, int first_device_id, Ref<Device>& holder) {
  if (stream) return stream->device();
  holder = Device::get(first_device_id >= 0 ? first_device_id : 0);
  return *holder;
}

void wait_legacy_into(CUstream later, const char* what) {
  const char* failed = "cuEventRecord";
  const CUresult r = enqueue_wait(CU_STREAM_LEGACY, later, &failed);
  if (r != CUDA_SUCCESS) driver::check(r, failed, what);
}

void wait_into_legacy(CUstream earlier, const char* what) {
  const char* failed = "cuEventRecord";
  const CUresult r = enqueue_wait(earlier, CU_STREAM_LEGACY, &failed);
  if (r != CUDA_SUCCESS) driver::check(r, failed, what);
}

void count_copies(uint64_t copies, uint64_t looped, uint64_t by_kernel) noexcept {
  Counters& c = counters();
  add(c.copy_batches, 1);
  add(c.copies, copies);
  if (looped > 0) {
    add(c.copy_batches_looped, 1);
    add(c.copies_looped, looped);
  }
  if (by_kernel > 0) {
    add(c.copy_batches_by_kernel, 1);
    add(c.copies_by_kernel, by_kernel);
  }
}

void count_prefetches(uint64_t buffers, bool looped) noexcept {
  Counters& c = counters();
  add(c.prefetch_batches, 1);
  add(c.prefetches, buffers);
  if (looped) add(c.prefetch_batches_looped, 1);
}

void count_discards(uint64_t buffers) noexcept {
  Counters& c = counters();
  add(c.discard_batches, 1);
  add(c.discards, buffers);
}

}  // namespace batch

BatchStatistics batch_statistics() noexcept {
  BatchStatistics s;
  if (const driver::Table* t = driver::get_if_loaded()) {
    s.driver_copy_batch = driver::has_memcpy_batch(*t);
    s.driver_prefetch_batch = t->cuMemPrefetchBatchAsync_fn != nullptr;
    s.driver_discard_batch =
        t->cuMemDiscardBatchAsync_fn != nullptr && t->cuMemDiscardAndPrefetchBatchAsync_fn != nullptr;
  }
  const batch::Counters& c = batch::counters();
  auto get = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  s.copy_batches = get(c.copy_batches);
  s.copy_batches_looped = get(c.copy_batches_looped);
  s.copies = get(c.copies);
  s.copies_looped = get(c.copies_looped);
  s.prefetch_batches = get(c.prefetch_batches);
  s.prefetch_batches_looped = get(c.prefetch_batches_looped);
  s.prefetches = get(c.prefetches);
  s.discard_batches = get(c.discard_batches);
  s.discards = get(c.discards);
  s.copy_batches_by_kernel = get(c.copy_batches_by_kernel);
  s.copies_by_kernel = get(c.copies_by_kernel);
  return s;
}

namespace {

// Which device's kernels may load and store a side of a copy: any device,
// one device's ordinal (>= 0), or none (the driver's copies only).
constexpr int kAnyDevice = -1;
constexpr int kNoDevice = -2;

// One copy of a batch, checked. `host`: both sides are pageable host memory
// (done with memcpy).
struct Item {
  char* dst = nullptr;
  const char* src = nullptr;
  size_t size = 0;
  size_t index = 0;  // in the caller's arrays
  bool host = false;
  int dst_reach = kNoDevice, src_reach = kNoDevice;
};

bool reaches(int reach, int ordinal) noexcept { return reach == kAnyDevice || reach == ordinal; }

// Who can reach a buffer's memory by kernel loads and stores. Managed
// memory: every device. Device memory: its device (peers only with peer
// access, which is not asked). Pinned memory of a resource: the resource's
// device, which a pinned pool grants access and in whose context
// cuMemHostAlloc mapped it; foreign pinned memory may be a host pool's
// that no device was granted, so it is left to the driver. Pageable memory:
// none.
int kernel_reach(const Buffer& buffer, const BufferInfo& info) {
  if (!info.device_accessible) return kNoDevice;
  switch (info.memory_kind) {
    case MemoryKind::managed: return kAnyDevice;
    case MemoryKind::device: return info.device_id >= 0 ? info.device_id : kNoDevice;
    case MemoryKind::pinned: {
      const Ref<Resource>& r = buffer.resource();
      return r && r->device() ? r->device()->ordinal() : kNoDevice;
    }
    case MemoryKind::host: return kNoDevice;
  }
  return kNoDevice;
}

bool same(const CopyOptions& a, const CopyOptions& b) noexcept {
  return a.src_access_order == b.src_access_order && a.overlap_mode == b.overlap_mode &&
         a.src_location_hint.type == b.src_location_hint.type &&
         a.src_location_hint.id == b.src_location_hint.id &&
         a.dst_location_hint.type == b.dst_location_hint.type &&
         a.dst_location_hint.id == b.dst_location_hint.id;
}

void check_hint(Location hint, size_t index, const char* field) {
  if (hint.type == LocationType::none) return;
  const std::string what = "options[" + std::to_string(index) + "]." + field;
  validate(hint,
           {LocationType::device, LocationType::host, LocationType::host_numa,
            LocationType::host_numa_current},
           what.c_str());
}

void check_options(const CopyOptions* options, size_t num_options, size_t count) {
  if (!options) {
    if (num_options != 0)
      fail(Status::invalid_argument, "options is NULL but num_options is " +
                                         std::to_string(num_options) + "; give 0 with no options");
    return;
  }
  if (num_options != 1 && num_options != count)
    fail(Status::invalid_argument,
         "num_options is " + std::to_string(num_options) + " for a batch of " +
             std::to_string(count) +
             " copies; give 1 (one set for every copy) or the copy count (one per copy)");
  for (size_t i = 0; i < num_options; ++i) {
    const CopyOptions& o = options[i];
    const int order = static_cast<int>(o.src_access_order);
    if (order < 0 || order > 2)
      fail(Status::invalid_argument, "options[" + std::to_string(i) + "].src_access_order " +
                                         std::to_string(order) + " is not a source access order");
    const int mode = static_cast<int>(o.overlap_mode);
    if (mode < 0 || mode > 1)
      fail(Status::invalid_argument, "options[" + std::to_string(i) + "].overlap_mode " +
                                         std::to_string(mode) + " is not an overlap mode");
    check_hint(o.src_location_hint, i, "src_location_hint");
    check_hint(o.dst_location_hint, i, "dst_location_hint");
  }
}

const CopyOptions& options_of(const Item& item, const CopyOptions* options, size_t num_options) {
  static const CopyOptions defaults;
  if (!options) return defaults;
  return options[num_options == 1 ? 0 : item.index];
}

CUmemcpyAttributes to_cu(const CopyOptions& o) {
  CUmemcpyAttributes a;
  std::memset(&a, 0, sizeof a);
  // The driver's values are ours plus one (its 0 is "invalid").
  a.srcAccessOrder = static_cast<CUmemcpySrcAccessOrder>(static_cast<int>(o.src_access_order) + 1);
  a.srcLocHint = core::to_cu(o.src_location_hint);
  a.dstLocHint = core::to_cu(o.dst_location_hint);
  a.flags = o.overlap_mode == OverlapMode::prefer_compute
                ? static_cast<unsigned>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE)
                : static_cast<unsigned>(CU_MEMCPY_FLAG_DEFAULT);
  return a;
}

void check_region(size_t index, const char* which, size_t offset, size_t length, size_t size) {
  if (offset > size || length > size - offset)
    fail(Status::out_of_range, batch::nth("copy", index) + ": the " + which + " region [" +
                                   std::to_string(offset) + ", " + std::to_string(offset) +
                                   " + " + std::to_string(length) + ") overruns its buffer of " +
                                   std::to_string(size) + " bytes");
}

void check_independent(const std::vector<Item>& items) {
  std::vector<batch::Range> writes, reads;
  writes.reserve(items.size());
  reads.reserve(items.size());
  for (const Item& it : items) {
    const auto d = reinterpret_cast<uintptr_t>(it.dst), s = reinterpret_cast<uintptr_t>(it.src);
    writes.push_back({d, d + it.size, it.index});
    reads.push_back({s, s + it.size, it.index});
  }
  batch::check_independent(std::move(writes), std::move(reads), "copy", "destination", "source");
}

std::string batch_text(size_t copies, unsigned long long bytes) {
  return "a batch of " + std::to_string(copies) + " cop" + (copies == 1 ? "y" : "ies") + " (" +
         describe_bytes(bytes) + ")";
}

// Queues the driver's copies: one cuMemcpyBatchAsync, with equal
// neighbouring options sent once (attrs[k] covers the copies from
// attr_indices[k] to the next run's start).
void submit_native(const driver::Table& t, const Stream* stream, const std::vector<Item>& items,
                   const CopyOptions* options, size_t num_options, unsigned long long bytes) {
  const size_t n = items.size();
  std::vector<CUdeviceptr> dsts(n), srcs(n);
  std::vector<size_t> sizes(n);
  std::vector<CUmemcpyAttributes> attrs;
  std::vector<size_t> attr_indices;
  const CopyOptions* previous = nullptr;
  for (size_t k = 0; k < n; ++k) {
    dsts[k] = reinterpret_cast<CUdeviceptr>(items[k].dst);
    srcs[k] = reinterpret_cast<CUdeviceptr>(items[k].src);
    sizes[k] = items[k].size;
    const CopyOptions& o = options_of(items[k], options, num_options);
    if (!previous || !same(o, *previous)) {
      attrs.push_back(to_cu(o));
      attr_indices.push_back(k);
    }
    previous = &o;
  }
  batch::on_batch_stream(stream, [&](CUstream s) {
    size_t fail_index = SIZE_MAX;
    const CUresult r = driver::memcpy_batch(t, dsts.data(), srcs.data(), sizes.data(), n,
                                            attrs.data(), attr_indices.data(), attrs.size(), s,
                                            &fail_index);
    if (r != CUDA_SUCCESS)
      driver::check(r, "cuMemcpyBatchAsync",
                    "copying " + batch_text(n, bytes) +
                        (fail_index < n ? "; the driver names " +
                                              batch::nth("copy", items[fail_index].index)
                                        : std::string()));
  });
}

// One cuMemcpyAsync per copy; with a during-API-call source, the stream is
// waited for before returning, which keeps that promise.
void submit_loop(const Stream* stream, const std::vector<Item>& items, bool during_api_call,
                 unsigned long long bytes) {
  const CUstream s = native_or_legacy(stream);
  for (const Item& it : items)
    CUMEM_CU(cuMemcpyAsync,
             (reinterpret_cast<CUdeviceptr>(it.dst), reinterpret_cast<CUdeviceptr>(it.src), it.size,
              s),
             "copying " + describe_bytes(it.size) + " as " + batch::nth("copy", it.index) + " (" +
                 batch_text(items.size(), bytes) + ", one copy at a time; the copies before it "
                 "were queued)");
  if (during_api_call)
    CUMEM_CU(cuStreamSynchronize, (s),
             "waiting for " + batch_text(items.size(), bytes) +
                 " whose sources are read during the call");
}

// Whether copies go to the copy kernels of `device` (copy_kernel.hpp):
// enough of them, each small, both sides within reach of the device's
// kernels, no source to be read during the call (a kernel reads in stream
// order; the promise would cost a wait), and none asking to overlap compute
// (CUMEM_COPY_OVERLAP_PREFER_COMPUTE: SM copies compete with the kernels,
// so such a batch stays on the copy engines).
bool suits_kernel(const Device& device, const std::vector<Item>& items,
                  const CopyOptions* options, size_t num_options) {
  if (items.size() < copy_kernel::kMinCopies) return false;
  const int ordinal = device.ordinal();
  for (const Item& it : items) {
    if (it.size > copy_kernel::kMaxCopyBytes || !reaches(it.dst_reach, ordinal) ||
        !reaches(it.src_reach, ordinal))
      return false;
    const CopyOptions& o = options_of(it, options, num_options);
    if (o.src_access_order == SrcAccessOrder::during_api_call ||
        o.overlap_mode == OverlapMode::prefer_compute)
      return false;
  }
  return true;
}

// Queues the copies on the copy kernels; false when they are unavailable
// (nothing queued).
bool submit_kernel(const Device& device, const Stream* stream, const std::vector<Item>& items) {
  std::vector<copy_kernel::Copy> copies(items.size());
  for (size_t k = 0; k < items.size(); ++k)
    copies[k] = {items[k].dst, items[k].src, items[k].size};
  return copy_kernel::launch(device, stream, copies.data(), copies.size());
}

// Runs checked copies: host ones by memcpy, the rest by the copy kernels or
// the driver.
void run(const Stream* stream, const std::vector<Item>& items, const CopyOptions* options,
         size_t num_options, int first_device_id) {
  std::vector<Item> device_items;
  device_items.reserve(items.size());
  size_t host_copies = 0;
  unsigned long long bytes = 0;
  bool during_api_call = false;
  for (const Item& it : items) {
    if (it.size == 0) continue;
    if (it.host) {
      ++host_copies;
      continue;
    }
    device_items.push_back(it);
    bytes += it.size;
    during_api_call = during_api_call || options_of(it, options, num_options).src_access_order ==
                                             SrcAccessOrder::during_api_call;
  }
  if (host_copies > 0) {
    // Pageable host memory on both sides: no driver needed.
    if (stream) stream->synchronize();
    for (const Item& it : items)
      if (it.host && it.size > 0) std::memcpy(it.dst, it.src, it.size);
  }
  if (device_items.empty()) {
    if (host_copies > 0) batch::count_copies(host_copies, 0);
    return;
  }
  const driver::Table& t = driver::get();
  Ref<Device> holder;
  const Device& device = batch::context_for(stream, first_device_id, holder);
  ScopedContext scope(device);
  // Kernels are captured as any launch is, so a capture changes nothing here.
  if (suits_kernel(device, device_items, options, num_options) &&
      submit_kernel(device, stream, device_items)) {
    batch::count_copies(host_copies + device_items.size(), 0, device_items.size());
    return;
  }
  const bool in_capture = (driver::has_memcpy_batch(t) || during_api_call) && batch::capturing(stream);
  if (in_capture && during_api_call)
    fail(Status::invalid_argument,
         "a copy reads its source during the call (CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL), "
         "which cannot be kept on " + stream->describe() +
             ", since it is capturing a graph; use the stream order there");
  const bool native = driver::has_memcpy_batch(t) && !in_capture;
  if (native)
    submit_native(t, stream, device_items, options, num_options, bytes);
  else
    submit_loop(stream, device_items, during_api_call, bytes);
  // Host copies count among the copies, but not as looped: no driver call.
  batch::count_copies(host_copies + device_items.size(), native ? 0 : device_items.size());
}

}  // namespace

void copy_batch(const Stream* stream, size_t count, const BufferCopies& copies,
                const CopyOptions* options, size_t num_options) {
  check_options(options, num_options, count);
  std::vector<Item> items(count);
  int first_device_id = -1;
  for (size_t i = 0; i < count; ++i) {
    Buffer& dst = *copies.dsts[i];
    const Buffer& src = *copies.srcs[i];
    if (dst.is_closed())
      fail(Status::buffer_closed, batch::nth("copy", i) + ": its destination buffer (dsts[" +
                                      std::to_string(i) + "]) was closed");
    if (src.is_closed())
      fail(Status::buffer_closed, batch::nth("copy", i) + ": its source buffer (srcs[" +
                                      std::to_string(i) + "]) was closed");
    const BufferInfo d = dst.info(), s = src.info();
    const size_t dst_offset = copies.dst_offsets ? copies.dst_offsets[i] : 0;
    const size_t src_offset = copies.src_offsets ? copies.src_offsets[i] : 0;
    size_t size = 0;
    if (copies.sizes) {
      size = copies.sizes[i];
    } else {
      // Whole buffers: the rest of each past its offset, of equal length.
      check_region(i, "source", src_offset, 0, s.size);
      check_region(i, "destination", dst_offset, 0, d.size);
      size = s.size - src_offset;
      if (d.size - dst_offset != size)
        fail(Status::size_mismatch,
             batch::nth("copy", i) + ": the source has " + std::to_string(size) +
                 " bytes past its offset but the destination " +
                 std::to_string(d.size - dst_offset) + "; give sizes to copy part of a buffer");
    }
    check_region(i, "destination", dst_offset, size, d.size);
    check_region(i, "source", src_offset, size, s.size);
    Item& it = items[i];
    it.dst = static_cast<char*>(d.ptr) + dst_offset;
    it.src = static_cast<const char*>(s.ptr) + src_offset;
    it.size = size;
    it.index = i;
    it.host = !d.device_accessible && !s.device_accessible;
    it.dst_reach = kernel_reach(dst, d);
    it.src_reach = kernel_reach(src, s);
    if (first_device_id < 0) first_device_id = d.device_id >= 0 ? d.device_id : s.device_id;
  }
  check_independent(items);
  run(stream, items, options, num_options, first_device_id);
}

void copy_batch(const Stream* stream, size_t count, const PointerCopies& copies,
                const CopyOptions* options, size_t num_options) {
  check_options(options, num_options, count);
  std::vector<Item> items(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t size = copies.sizes[i];
    const size_t dst_offset = copies.dst_offsets ? copies.dst_offsets[i] : 0;
    const size_t src_offset = copies.src_offsets ? copies.src_offsets[i] : 0;
    auto range = [&](const void* p, size_t offset, const char* name) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(p);
      if (!p && size > 0)
        fail(Status::invalid_argument, batch::nth("copy", i) + ": " + name + "[" +
                                           std::to_string(i) + "] is NULL with a size of " +
                                           std::to_string(size) + " bytes");
      if (offset > UINTPTR_MAX - start || size > UINTPTR_MAX - start - offset)
        fail(Status::invalid_argument,
             batch::nth("copy", i) + ": " + name + "[" + std::to_string(i) + "] + " +
                 std::to_string(offset) + " + " + std::to_string(size) +
                 " bytes wraps past the end of the address space");
      return start + offset;
    };
    Item& it = items[i];
    it.dst = reinterpret_cast<char*>(range(copies.dsts[i], dst_offset, "dsts"));
    it.src = reinterpret_cast<const char*>(range(copies.srcs[i], src_offset, "srcs"));
    it.size = size;
    it.index = i;
  }
  check_independent(items);
  run(stream, items, options, num_options, -1);
}

}  // namespace cumem::core
