#include "sync_resource.hpp"

#include "../driver/driver.hpp"

namespace cumem::core {

void SyncResource::do_deallocate(void* ptr, size_t size, const Stream* stream) {
  if (stream) {
    stream->synchronize();
  } else if (device_) {
    ScopedContext scope(*device_);
    CUMEM_CU(cuStreamSynchronize, (CU_STREAM_LEGACY),
             "waiting for the legacy default stream of " + device_->describe() +
                 " before freeing");
  }
  free_now(ptr, size);
}

}  // namespace cumem::core
