// DLPack exchange: a buffer exported as a (versioned or legacy) managed
// tensor that keeps the buffer alive until its deleter runs, and a tensor
// imported as a buffer that calls the tensor's deleter when it is freed.
#pragma once

#include <cumem/dlpack.h>

#include "../buffer.hpp"
#include "layout.hpp"

namespace cumem::core::dlpack {

struct ExportOptions {
  DLDataType dtype{kDLUInt, 8, 1};
  int32_t ndim = 0;
  const int64_t* shape = nullptr;    // null: 1-D over the buffer
  const int64_t* strides = nullptr;  // null: compact row-major
  uint64_t byte_offset = 0;
  int32_t device_type = 0;           // 0: by memory kind
  bool read_only = false;
};

// The device a buffer's tensor names (throws invalid_argument for a
// device_type the memory cannot be presented as).
DLDevice export_device(const BufferInfo& info, int32_t device_type);

DLManagedTensorVersioned* export_versioned(Ref<Buffer> buffer, const ExportOptions& options);
DLManagedTensor* export_legacy(Ref<Buffer> buffer, const ExportOptions& options);

// On failure the tensor's deleter is not called.
Ref<Buffer> import_versioned(DLManagedTensorVersioned* tensor, bool allow_read_only);
Ref<Buffer> import_legacy(DLManagedTensor* tensor);

}  // namespace cumem::core::dlpack
