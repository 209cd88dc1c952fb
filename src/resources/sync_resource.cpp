#include "sync_resource.hpp"

#include "../driver/driver.hpp"

namespace cumem::core {

void wait_before_free(const Device* device, const Stream* stream) {
  if (stream) {
    stream->synchronize();
  } else if (device) {
    ScopedContext scope(*device);
    CUMEM_CU(cuStreamSynchronize, (CU_STREAM_LEGACY),
             "waiting for the legacy default stream of " + device->describe() +
                 " before freeing");
  }
}

void SyncResource::do_deallocate(void* ptr, size_t size, const Stream* stream) {
  wait_before_free(device_.get(), stream);
  free_now(ptr, size);
}

}  // namespace cumem::core
