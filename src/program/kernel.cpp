#include "kernel.hpp"

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core {

Ref<Kernel> Kernel::get(Ref<Library> library, const std::string& name) {
  CUkernel handle = nullptr;
  const CUresult r =
      CUMEM_CU_RESULT(cuLibraryGetKernel, (&handle, library->native(), name.c_str()));
  if (r == CUDA_ERROR_NOT_FOUND)
    fail(Status::not_found,
         "the library (" + library->device().describe() + ") has no kernel named '" + name +
             "'; a C++ kernel's name is mangled: declare it extern \"C\" or pass its "
             "lowered name (the program's lowered name of a name expression)");
  driver::check(r, "cuLibraryGetKernel", "getting kernel '" + name + "'");
  Ref<Kernel> kernel = Ref<Kernel>::adopt(new Kernel(std::move(library), handle, name));
  kernel->max_threads_per_block_ = kernel->attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  kernel->static_shared_bytes_ = kernel->attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  return kernel;
}

std::string Kernel::describe() const {
  return "kernel '" + name_ + "' on " + device().describe();
}

int Kernel::attribute(CUfunction_attribute attribute) const {
  int value = 0;
  CUMEM_CU(cuKernelGetAttribute, (&value, attribute, handle_, device().native()),
           "reading attribute " + std::to_string(static_cast<int>(attribute)) + " of " +
               describe());
  return value;
}

KernelAttributes Kernel::attributes() const {
  KernelAttributes a;
  a.max_threads_per_block = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  a.shared_size_bytes = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  a.const_size_bytes = attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  a.local_size_bytes = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  a.num_regs = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
  a.ptx_version = attribute(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  a.binary_version = attribute(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  a.max_dynamic_shared_size_bytes = attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  return a;
}

void Kernel::raise_max_dynamic_shared(int bytes) const {
  std::lock_guard<std::mutex> lock(shared_mutex_);
  if (attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) >= bytes) return;
  CUMEM_CU(cuKernelSetAttribute,
           (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes, handle_, device().native()),
           "allowing " + describe() + " " + std::to_string(bytes) +
               " bytes of dynamic shared memory");
}

}  // namespace cumem::core
