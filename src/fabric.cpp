// The fabric probe: whether memory of a device can be shared as fabric
// handles (multi-node NVLink, through an IMEX channel). A device may report
// fabric support and still refuse it: the H200s here do (no IMEX channel:
// cuMemCreate or the export answer CUDA_ERROR_NOT_PERMITTED). So the answer
// comes from doing it once: one granule of device memory created with the
// FABRIC handle type, exported as a fabric handle, released. Never with a
// memory pool: destroying a pool made with the FABRIC type crashed driver
// 580.159 on those H200s (shared/DESIGN.md).
#include "capture.hpp"
#include "device.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "log.hpp"

namespace cumem::core {
namespace {

int quiet_attribute(CUdevice device, CUdevice_attribute attribute) {
  int value = 0;
  if (CUMEM_CU_QUIET(cuDeviceGetAttribute, (&value, attribute, device)) != CUDA_SUCCESS) return 0;
  return value;
}

// The probe itself; `keep` false when the answer may change (out of memory).
FabricProbe probe(const Device& device, bool& keep) {
  keep = true;
  FabricProbe p;
  const auto& drv = driver::get();
  if (!drv.cuMemCreate_fn || !drv.cuMemRelease_fn || !drv.cuMemGetAllocationGranularity_fn ||
      !drv.cuMemExportToShareableHandle_fn) {
    p.why = "the driver lacks the virtual memory management calls (cuMemCreate, "
            "cuMemExportToShareableHandle)";
    return p;
  }
  const CUdevice d = device.native();
  if (quiet_attribute(d, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
    p.why = device.describe() + " does not support virtual memory management";
    return p;
  }
  if (quiet_attribute(d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED) == 0) {
    p.why = device.describe() +
            " reports no fabric handles (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED is 0)";
    return p;
  }
  ScopedContext scope(device);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device.ordinal();
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  size_t granularity = 0;
  CUresult r = drv.cuMemGetAllocationGranularity_fn(&granularity, &prop,
                                                    CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || granularity == 0) {
    p.why = "cuMemGetAllocationGranularity refused fabric memory with " + driver::describe(r);
    return p;
  }
  CUmemGenericAllocationHandle handle = 0;
  r = drv.cuMemCreate_fn(&handle, granularity, &prop, 0);
  if (r != CUDA_SUCCESS) {
    keep = r != CUDA_ERROR_OUT_OF_MEMORY;
    p.why = "cuMemCreate of one " + describe_bytes(granularity) +
            " granule with the FABRIC handle type failed with " + driver::describe(r);
    return p;
  }
  CUmemFabricHandle fabric{};
  r = drv.cuMemExportToShareableHandle_fn(&fabric, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0);
  CUMEM_CU_CLEANUP(cuMemRelease, (handle), "releasing the fabric probe's granule");
  if (r != CUDA_SUCCESS) {
    keep = r != CUDA_ERROR_OUT_OF_MEMORY;
    p.why = "cuMemExportToShareableHandle of a granule as a fabric handle failed with " +
            driver::describe(r);
    return p;
  }
  p.supported = true;
  return p;
}

}  // namespace

FabricProbe Device::fabric_probe() const {
  std::lock_guard<std::mutex> lock(fabric_mutex_);
  if (fabric_known_) return fabric_;
  bool keep = true;
  FabricProbe p = probe(*this, keep);
  if (!p.why.empty() && p.why.find("NOT_PERMITTED") != std::string::npos)
    p.why += " (no IMEX channel: fabric handles need nvidia-imex and a channel in /dev/nvidia-caps-imex-channels)";
  if (log::enabled(log::Level::info))
    log::write(log::Level::info, describe() + ": fabric handles " +
                                     (p.supported ? "work" : "do not work: " + p.why) +
                                     (keep ? "" : " (asked again next time)"));
  if (keep) {
    fabric_ = p;
    fabric_known_ = true;
  }
  return p;
}

}  // namespace cumem::core
