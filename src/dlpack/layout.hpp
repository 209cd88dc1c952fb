// DLPack tensor layouts checked without touching memory or the driver: the
// byte extent an export's dtype/shape/strides reach inside a buffer, and the
// bytes an imported tensor views. Pure functions, fuzzed by
// tests/dlpack/fuzz_dlpack_import.cpp.
#pragma once

#include <cumem/dlpack.h>

#include <cstddef>
#include <cstdint>

namespace cumem::core::dlpack {

inline constexpr int32_t kMaxNdim = 64;

// The element type's size in bytes; throws invalid_argument for bits or
// lanes 0, an unknown code, or a size that is not whole bytes.
size_t element_bytes(DLDataType dtype);

// What an export will describe, after check_export: shape and strides are
// filled in (ndim entries; strides always explicit).
struct ExportLayout {
  int32_t ndim = 1;
  int64_t shape[kMaxNdim] = {};
  int64_t strides[kMaxNdim] = {};
  DLDataType dtype{kDLUInt, 8, 1};
};

// Checks an export of `buffer_size` bytes with the given dtype, shape
// (nullptr: 1-D over the buffer after byte_offset; ndim 0 or 1), strides
// (nullptr: compact row-major) and byte offset. Throws invalid_argument or
// out_of_range naming the problem; never reads past ndim entries.
ExportLayout check_export(size_t buffer_size, DLDataType dtype, int32_t ndim,
                          const int64_t* shape, const int64_t* strides, uint64_t byte_offset);

// The bytes an imported tensor views from data + byte_offset: checks ndim,
// shape, compact row-major strides and dtype, and that nothing overflows.
// `flags` are the versioned tensor's (0 for legacy ones). Throws
// invalid_argument or not_supported naming the problem.
uint64_t check_import(const DLTensor& tensor, uint64_t flags);

// "uint8", "float32x4", ... for messages.
const char* dtype_code_name(uint8_t code) noexcept;

}  // namespace cumem::core::dlpack
