#include "chunk.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core::vmm {

std::shared_ptr<Chunk> Chunk::create(std::shared_ptr<const Spec> spec, size_t size) {
  const size_t g = spec->granularity();
  if (size == 0 || size % g != 0)
    fail(Status::invalid_argument, "a chunk of " + describe_bytes(size) +
                                       " is not a non-zero multiple of the granularity of " +
                                       describe_bytes(g));
  CUmemGenericAllocationHandle handle = 0;
  CUMEM_CU(cuMemCreate, (&handle, size, &spec->prop(), 0),
           "creating " + describe_bytes(size) + " of " + spec->describe());
  return adopt(std::move(spec), handle, size);
}

std::shared_ptr<Chunk> Chunk::adopt(std::shared_ptr<const Spec> spec,
                                    CUmemGenericAllocationHandle handle, size_t size) {
  try {
    return std::shared_ptr<Chunk>(new Chunk(std::move(spec), handle, size));
  } catch (...) {
    CUMEM_CU_CLEANUP(cuMemRelease, (handle), "releasing a chunk whose owner could not be made");
    throw;
  }
}

Chunk::~Chunk() {
  CUMEM_CU_CLEANUP(cuMemRelease, (handle_), "releasing a physical chunk of virtual memory");
  spec_->count_chunk_released();
}

int Chunk::export_fd() const {
  if (!(spec_->prop().requestedHandleTypes & kHandlePosixFd))
    fail(Status::not_supported, "a chunk of " + spec_->describe() +
                                    " made without the POSIX file descriptor handle type "
                                    "cannot be exported as one");
  int fd = -1;
  CUMEM_CU(cuMemExportToShareableHandle,
           (&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           "exporting a chunk of " + describe_bytes(size_) + " as a file descriptor");
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

}  // namespace cumem::core::vmm
