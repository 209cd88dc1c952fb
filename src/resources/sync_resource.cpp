#include "sync_resource.hpp"

#include "../capture.hpp"
#include "../driver/driver.hpp"

namespace cumem::core {

void wait_before_free(const Device* device, const Stream* stream) {
  if (stream) {
    // Before any wait: the capture stays valid.
    refuse_if_capturing(stream, "free synchronously");
    stream->synchronize();
  } else if (device) {
    refuse_if_legacy_unusable(*device, "wait before freeing");
    ScopedContext scope(*device);
    RelaxedCaptureMode relaxed;
    CUMEM_CU(cuStreamSynchronize, (CU_STREAM_LEGACY),
             "waiting for the legacy default stream of " + device->describe() +
                 " before freeing");
  }
}

void SyncResource::do_deallocate(void* ptr, size_t size, const Stream* stream) {
  wait_before_free(device_.get(), stream);
  RelaxedCaptureMode relaxed;
  free_now(ptr, size);
}

}  // namespace cumem::core
