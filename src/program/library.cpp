#include "library.hpp"

#include <cstdint>
#include <cstring>

#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../log.hpp"

namespace cumem::core {
namespace {

// Cubin (ELF) and fatbin images carry their own sizes; anything else is
// PTX text, which the driver reads up to its NUL: without one inside
// `size` bytes it would read past the caller's memory.
bool is_binary_image(const void* image, size_t size) {
  if (size < 4) return false;
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof magic);
  const bool elf = std::memcmp(image, "\x7f" "ELF", 4) == 0;
  return elf || magic == 0xBA55ED50u /* fatbin */ || magic == 0x466243B1u /* fatbin wrapper */;
}

}  // namespace

Ref<Library> Library::load(Ref<Device> device, const void* image, size_t size) {
  if (!image || size == 0)
    fail(Status::invalid_argument, "the code image to load is empty (" +
                                       std::string(image ? "size 0" : "NULL") + ")");
  if (!is_binary_image(image, size) && !std::memchr(image, '\0', size))
    fail(Status::invalid_argument,
         "the code image is neither cubin (ELF) nor fatbin, and as PTX it must end with a NUL "
         "within its " + describe_bytes(size) + "; include the terminating NUL in the size");
  ScopedContext scope(*device);
  CUlibrary handle = nullptr;
  std::string what = "loading a " + describe_bytes(size) + " code image for " +
                     device->describe();
  CUMEM_CU(cuLibraryLoadData, (&handle, image, nullptr, nullptr, 0, nullptr, nullptr, 0), what);
  // cuLibraryLoadData defers reading the image; loading its module into the
  // device's context now reports a bad or foreign image here, not at the
  // first cuLibraryGetKernel or launch.
  CUmodule module = nullptr;
  const CUresult r = CUMEM_CU_RESULT(cuLibraryGetModule, (&module, handle));
  if (r != CUDA_SUCCESS) {
    CUMEM_CU_CLEANUP(cuLibraryUnload, (handle), "unloading a library that failed to load");
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
        r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_INVALID_IMAGE)
      what += " (the image is malformed, built for another architecture, or made by a "
              "compiler newer than the driver)";
    driver::check(r, "cuLibraryGetModule", what);
  }
  return Ref<Library>::adopt(new Library(std::move(device), handle));
}

Library::~Library() {
  // A destructor cannot report: a failure goes to the log.
  CUMEM_CU_CLEANUP(cuLibraryUnload, (handle_), "unloading a library");
}

}  // namespace cumem::core
