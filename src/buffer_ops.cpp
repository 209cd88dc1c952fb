// What buffers do with their memory: copies, fills and the managed-memory
// operations.
#include <cstdint>
#include <cstring>

#include "batch.hpp"
#include "buffer.hpp"
#include "capture.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "log.hpp"

namespace cumem::core {
namespace {

void check_region(const char* which, size_t offset, size_t length, size_t size) {
  if (offset > size || length > size - offset)
    fail(Status::out_of_range, std::string("the ") + which + " region [" + std::to_string(offset) +
                                   ", " + std::to_string(offset) + " + " + std::to_string(length) +
                                   ") overruns its buffer of " + std::to_string(size) + " bytes");
}

// The device whose context a driver call should use: the stream's, else
// one of the buffers', else device 0 (kept alive by `holder`).
const Device& pick_context(const Stream* stream, const Device* a, const Device* b,
                           Ref<Device>& holder) {
  if (stream) return stream->device();
  if (a) return *a;
  if (b) return *b;
  holder = Device::get(0);
  return *holder;
}

}  // namespace

void Buffer::copy(Buffer& dst, size_t dst_offset, const Buffer& src, size_t src_offset,
                  size_t length, const Stream* stream) {
  dst.ensure_open();
  src.ensure_open();
  check_region("destination", dst_offset, length, dst.info_.size);
  check_region("source", src_offset, length, src.info_.size);
  if (length == 0) return;
  char* d = static_cast<char*>(dst.info_.ptr) + dst_offset;
  const char* s = static_cast<const char*>(src.info_.ptr) + src_offset;
  const uintptr_t du = reinterpret_cast<uintptr_t>(d), su = reinterpret_cast<uintptr_t>(s);
  if (du < su + length && su < du + length)
    fail(Status::invalid_argument, "the source and destination regions overlap");
  if (!dst.info_.device_accessible && !src.info_.device_accessible) {
    // Pageable host memory on both sides: no driver needed.
    if (stream) {
      refuse_if_capturing(stream, "copy between pageable host buffers (the copy waits for the stream)");
      stream->synchronize();
    }
    std::memcpy(d, s, length);
    return;
  }
  // A copy from or to pageable host memory cannot be captured into a graph
  // (the driver refuses it and invalidates the capture): refused first.
  if (!dst.info_.device_accessible || !src.info_.device_accessible)
    refuse_if_capturing(stream, "copy from or to pageable host memory");
  Ref<Device> holder;
  ScopedContext scope(pick_context(stream, dst.context_device(), src.context_device(), holder));
  CUMEM_CU(cuMemcpyAsync,
           (reinterpret_cast<CUdeviceptr>(d), reinterpret_cast<CUdeviceptr>(s), length,
            native_or_legacy(stream)),
           "copying " + describe_bytes(length) + " from " + memory_kind_name(src.info_.memory_kind) +
               " to " + memory_kind_name(dst.info_.memory_kind) + " memory");
}

void Buffer::fill(uint32_t value, uint32_t width, const Stream* stream) {
  ensure_open();
  if (width != 1 && width != 2 && width != 4)
    fail(Status::invalid_argument,
         "fill width " + std::to_string(width) + " must be 1, 2 or 4 bytes");
  if (width < 4 && (value >> (8 * width)) != 0)
    fail(Status::invalid_argument, "fill value " + std::to_string(value) + " does not fit in " +
                                       std::to_string(width) + " byte" + (width == 1 ? "" : "s"));
  if (info_.size % width != 0)
    fail(Status::size_mismatch, "the buffer's size " + std::to_string(info_.size) +
                                    " is not a multiple of the fill width " + std::to_string(width));
  if (info_.size == 0) return;
  if (!info_.device_accessible) {
    if (stream) {
      refuse_if_capturing(stream, "fill pageable host memory (the fill waits for the stream)");
      stream->synchronize();
    }
    char* p = static_cast<char*>(info_.ptr);
    if (width == 1) {
      std::memset(p, static_cast<int>(value), info_.size);
    } else {
      const uint16_t v16 = static_cast<uint16_t>(value);
      for (size_t i = 0; i < info_.size; i += width)
        std::memcpy(p + i, width == 2 ? static_cast<const void*>(&v16) : &value, width);
    }
    return;
  }
  if (reinterpret_cast<uintptr_t>(info_.ptr) % width != 0)
    fail(Status::invalid_argument, "the buffer's address is not aligned to the fill width " +
                                       std::to_string(width));
  if (stream && info_.memory_kind == MemoryKind::device &&
      info_.device_id != stream->device().ordinal())
    fail(Status::wrong_device, "cannot fill memory of device " + std::to_string(info_.device_id) +
                                   " on " + stream->describe());
  Ref<Device> holder;
  ScopedContext scope(pick_context(stream, context_device(), nullptr, holder));
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(info_.ptr);
  const size_t count = info_.size / width;
  const CUstream s = native_or_legacy(stream);
  const std::string what = "filling " + describe_bytes(info_.size) + " of " +
                           memory_kind_name(info_.memory_kind) + " memory";
  if (width == 1)
    CUMEM_CU(cuMemsetD8Async, (p, static_cast<unsigned char>(value), count, s), what);
  else if (width == 2)
    CUMEM_CU(cuMemsetD16Async, (p, static_cast<unsigned short>(value), count, s), what);
  else
    CUMEM_CU(cuMemsetD32Async, (p, value, count, s), what);
}

void Buffer::require_managed(const char* operation) const {
  ensure_open();
  if (info_.memory_kind != MemoryKind::managed)
    fail(Status::invalid_argument, std::string(operation) + " applies to managed memory; this is " +
                                       memory_kind_name(info_.memory_kind) + " memory");
}

void Buffer::prefetch(Location location, const Stream* stream) {
  require_managed("prefetch");
  validate(location,
           {LocationType::device, LocationType::host, LocationType::host_numa,
            LocationType::host_numa_current},
           "the prefetch destination");
  if (info_.size == 0) return;
  Ref<Device> holder;
  ScopedContext scope(pick_context(stream, context_device(), nullptr, holder));
  CUMEM_CU(cuMemPrefetchAsync,
           (reinterpret_cast<CUdeviceptr>(info_.ptr), info_.size, to_cu(location), 0, native_or_legacy(stream)),
           "prefetching " + describe_bytes(info_.size) + " of managed memory to " + describe(location));
}

void Buffer::advise(Advice advice, Location location) {
  require_managed("advise");
  if (static_cast<int>(advice) < 1 || static_cast<int>(advice) > 6)
    fail(Status::invalid_argument, "unknown advice " + std::to_string(static_cast<int>(advice)));
  // The driver ignores the location of these three.
  const bool ignores_location = advice == Advice::set_read_mostly ||
                                advice == Advice::unset_read_mostly ||
                                advice == Advice::unset_preferred_location;
  if (ignores_location) {
    // A bad one is still refused, as everywhere.
    if (location.type != LocationType::none)
      validate(location, {LocationType::device, LocationType::host, LocationType::host_numa},
               "the advice's location");
  } else if (advice == Advice::set_preferred_location) {
    if (location.type == LocationType::none)
      fail(Status::invalid_argument,
           "the preferred-location advice needs a location (a device, the host or a host NUMA "
           "node)");
    validate(location,
             {LocationType::device, LocationType::host, LocationType::host_numa,
              LocationType::host_numa_current},
             "the preferred-location advice's location");
  } else {
    // The driver takes only a device or the host for accessed-by.
    if (location.type == LocationType::none)
      fail(Status::invalid_argument,
           "the accessed-by advices need a location (a device or the host)");
    validate(location, {LocationType::device, LocationType::host},
             "the accessed-by advices' location");
  }
  if (info_.size == 0) return;
  Ref<Device> holder;
  const Device& ctx = pick_context(nullptr, context_device(), nullptr, holder);
  // The driver ignores these advices' location, but still rejects an unset
  // one.
  if (ignores_location && location.type == LocationType::none)
    location = Location{LocationType::device, ctx.ordinal()};
  ScopedContext scope(ctx);
  const CUresult r = CUMEM_CU_RESULT(cuMemAdvise, (reinterpret_cast<CUdeviceptr>(info_.ptr), info_.size,
                                                   static_cast<CUmem_advise>(advice), to_cu(location)));
  // CUDA 13.0 drivers refuse advice on memory from the managed pool.
  if (r == CUDA_ERROR_NOT_SUPPORTED && resource_ && resource_->properties().is_pool)
    fail(Status::not_supported,
         "cuMemAdvise does not support memory from the managed memory pool on this driver; "
         "create the managed resource with disable_pool = true (cuMemAllocManaged) to advise it");
  driver::check(r, "cuMemAdvise",
                "advising " + describe_bytes(info_.size) + " of managed memory (advice " +
                    std::to_string(static_cast<int>(advice)) + ", " + describe(location) + ")");
}

// There is no single-range discard in the driver: a batch of one (which
// also takes the legacy default stream, batch.hpp).
void Buffer::discard(const Stream* stream) {
  require_managed("discard");
  Buffer* self = this;
  discard_batch(stream, 1, &self);
}

void Buffer::discard_prefetch(Location location, const Stream* stream) {
  require_managed("discard_prefetch");
  Buffer* self = this;
  discard_prefetch_batch(stream, 1, &self, &location, 1);
}

Location Buffer::last_prefetch_location() const {
  require_managed("last_prefetch_location");
  if (info_.size == 0) return Location{};
  Ref<Device> holder;
  ScopedContext scope(pick_context(nullptr, context_device(), nullptr, holder));
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(info_.ptr);
  auto query = [&](void* data, size_t size, CUmem_range_attribute attribute) {
    const CUresult r = CUMEM_CU_RESULT(cuMemRangeGetAttribute, (data, size, attribute, p, info_.size));
    // As with advice: drivers that cannot query memory of the managed pool.
    if ((r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE) && resource_ &&
        resource_->properties().is_pool)
      fail(Status::not_supported,
           "cuMemRangeGetAttribute cannot query memory from the managed memory pool on this "
           "driver (" + driver::describe(r) + "); create the managed resource with disable_pool "
           "= true (cuMemAllocManaged) to read its last prefetch location");
    driver::check(r, "cuMemRangeGetAttribute",
                  "reading the last prefetch location of " + describe_bytes(info_.size) +
                      " of managed memory");
  };
  if (driver::get().driver_version >= 13000) {
    // CUDA 13 reports the location's type and id, host NUMA nodes included.
    CUmemLocationType type = CU_MEM_LOCATION_TYPE_INVALID;
    int id = 0;
    query(&type, sizeof type, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE);
    switch (type) {
      case CU_MEM_LOCATION_TYPE_DEVICE:
        query(&id, sizeof id, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID);
        return Location{LocationType::device, id};
      case CU_MEM_LOCATION_TYPE_HOST: return Location{LocationType::host, 0};
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        query(&id, sizeof id, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID);
        return Location{LocationType::host_numa, id};
      default: return Location{};
    }
  }
  // Before CUDA 13: a device ordinal, CU_DEVICE_CPU, or CU_DEVICE_INVALID.
  int device = CU_DEVICE_INVALID;
  query(&device, sizeof device, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION);
  if (device >= 0) return Location{LocationType::device, device};
  if (device == CU_DEVICE_CPU) return Location{LocationType::host, 0};
  return Location{};
}

Ref<Buffer> Buffer::copy_to_new(const Stream* stream) const {
  ensure_open();
  if (!resource_)
    fail(Status::invalid_argument,
         "the buffer has no resource to allocate its copy from (its memory is wrapped, "
         "registered or a DLPack tensor's); copy into a destination buffer instead");
  Ref<Buffer> copy = allocate(resource_, info_.size, stream);
  try {
    Buffer::copy(*copy, 0, *this, 0, info_.size, stream);
  } catch (...) {
    try {
      copy->close(stream);
    } catch (...) {
      log::swallowed("freeing the new buffer of a copy that failed");
    }
    throw;
  }
  return copy;
}

}  // namespace cumem::core
