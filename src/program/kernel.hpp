// A kernel of a loaded library (a CUkernel), on the library's device. The
// kernel keeps its library, and so its device, alive.
#pragma once

#include <cuda.h>

#include <mutex>
#include <string>

#include "../object.hpp"
#include "library.hpp"

namespace cumem::core {

struct KernelAttributes {
  int max_threads_per_block = 0;
  int shared_size_bytes = 0;  // static shared memory
  int const_size_bytes = 0;
  int local_size_bytes = 0;  // per thread
  int num_regs = 0;          // per thread
  int ptx_version = 0;
  int binary_version = 0;
  int max_dynamic_shared_size_bytes = 0;
};

class Kernel : public Object {
 public:
  // Throws not_found when the library has no kernel of that name.
  static Ref<Kernel> get(Ref<Library> library, const std::string& name);

  CUkernel native() const noexcept { return handle_; }
  const Library& library() const noexcept { return *library_; }
  const Device& device() const noexcept { return library_->device(); }
  const std::string& name() const noexcept { return name_; }

  int attribute(CUfunction_attribute attribute) const;
  // Constant for the kernel's life; read once when it is created.
  int max_threads_per_block() const noexcept { return max_threads_per_block_; }
  int static_shared_bytes() const noexcept { return static_shared_bytes_; }
  KernelAttributes attributes() const;
  // Raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to at least
  // `bytes` on the device; never lowers it, so concurrent launches that
  // raised it for themselves stay valid.
  void raise_max_dynamic_shared(int bytes) const;
  // "kernel 'name' on device 0" for messages.
  std::string describe() const;

 private:
  Kernel(Ref<Library> library, CUkernel handle, std::string name)
      : Object(Tag::kernel), library_(std::move(library)), handle_(handle),
        name_(std::move(name)) {}
  ~Kernel() override = default;

  Ref<Library> library_;
  CUkernel handle_;
  std::string name_;
  int max_threads_per_block_ = 0;
  int static_shared_bytes_ = 0;
  mutable std::mutex shared_mutex_;  // serialises raise_max_dynamic_shared
};

}  // namespace cumem::core
