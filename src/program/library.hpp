// Loaded device code (cuLibraryLoadData: cubin, PTX or fatbin) for one
// device. Context-independent in the driver; the library keeps its device
// (and so the primary context) alive, and unloads the code when released.
#pragma once

#include <cuda.h>

#include <cstddef>

#include "../device.hpp"
#include "../object.hpp"

namespace cumem::core {

class Library : public Object {
 public:
  // Throws invalid_argument for an empty image, driver (or the status of
  // the driver's error) when the driver rejects it.
  static Ref<Library> load(Ref<Device> device, const void* image, size_t size);

  CUlibrary native() const noexcept { return handle_; }
  const Device& device() const noexcept { return *device_; }
  const Ref<Device>& device_ref() const noexcept { return device_; }

 private:
  Library(Ref<Device> device, CUlibrary handle)
      : Object(Tag::library), device_(std::move(device)), handle_(handle) {}
  ~Library() override;

  Ref<Device> device_;
  CUlibrary handle_;
};

}  // namespace cumem::core
