#include "native_stream.hpp"

#include "driver/driver.hpp"
#include "error.hpp"

namespace cumem::core {
namespace {

constexpr int kEntries = 16;

struct Cache {
  struct Entry {
    CUstream native = nullptr;
    const Device* device = nullptr;
    Ref<Stream> stream;
  };
  Entry entries[kEntries];
  int next = 0;  // the entry replaced on a miss (round robin)
};

// The device a foreign stream belongs to, for resources without one.
Ref<Device> device_of(CUstream native) {
  const auto& drv = driver::get();
  if (!drv.cuStreamGetDevice_fn)
    fail(Status::not_supported,
         "this resource has no device, and finding a native stream's device needs "
         "cuStreamGetDevice (CUDA 12.8+; the driver is " +
             std::to_string(drv.driver_version) + "): pass NULL for the legacy default stream");
  if (native == CU_STREAM_PER_THREAD)
    fail(Status::invalid_argument,
         "CU_STREAM_PER_THREAD names no device; this resource has none either");
  CUdevice dev = 0;
  CUMEM_CU(cuStreamGetDevice, (native, &dev), "finding the device of a native stream");
  const int count = Device::count();
  for (int i = 0; i < count; ++i) {
    Ref<Device> d = Device::get(i);
    if (d->native() == dev) return d;
  }
  fail(Status::no_device, "the native stream's CUdevice " + std::to_string(dev) +
                              " is not one of the driver's devices");
}

}  // namespace

Ref<Stream> native_stream(const Device* device, CUstream native) {
  if (!native || native == CU_STREAM_LEGACY) return nullptr;
  thread_local Cache cache;
  for (auto& e : cache.entries)
    if (e.native == native && e.device == device && e.stream) return e.stream;
  Ref<Device> owner =
      device ? Ref<Device>::share(const_cast<Device*>(device)) : device_of(native);
  Ref<Stream> stream = native == CU_STREAM_PER_THREAD ? Stream::per_thread_default(owner)
                                                      : Stream::wrap(owner, native);
  Cache::Entry& e = cache.entries[cache.next];
  cache.next = (cache.next + 1) % kEntries;
  e.native = native;
  e.device = device;
  e.stream = stream;
  return stream;
}

}  // namespace cumem::core
