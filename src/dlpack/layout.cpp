#include "layout.hpp"

#include <string>

#include "../error.hpp"

namespace cumem::core::dlpack {
namespace {

// 128-bit arithmetic for extents (GCC and Clang have it on x86-64).
__extension__ typedef __int128 i128;

std::string dtype_text(DLDataType d) {
  std::string s = dtype_code_name(d.code);
  s += std::to_string(d.bits);
  if (d.lanes != 1) s += "x" + std::to_string(d.lanes);
  return s;
}

void check_code(uint8_t code) {
  if (code > kDLFloat4_e2m1fn)
    fail(Status::invalid_argument, "dtype code " + std::to_string(code) +
                                       " is not a DLPack 1.1 DLDataTypeCode (0.." +
                                       std::to_string(static_cast<int>(kDLFloat4_e2m1fn)) + ")");
}

void check_ndim(int32_t ndim) {
  if (ndim < 0 || ndim > kMaxNdim)
    fail(Status::invalid_argument, "ndim " + std::to_string(ndim) + " is outside 0.." +
                                       std::to_string(kMaxNdim));
}

std::string dim_text(int32_t i) { return "dimension " + std::to_string(i); }

}  // namespace

const char* dtype_code_name(uint8_t code) noexcept {
  switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLOpaqueHandle: return "opaque";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case kDLBool: return "bool";
    default: return "float8/6/4-";  // the narrow float codes, 7..17
  }
}

size_t element_bytes(DLDataType dtype) {
  check_code(dtype.code);
  if (dtype.bits == 0 || dtype.lanes == 0)
    fail(Status::invalid_argument, "dtype with bits " + std::to_string(dtype.bits) +
                                       " and lanes " + std::to_string(dtype.lanes) +
                                       ": both must be at least 1");
  const size_t bits = size_t{dtype.bits} * dtype.lanes;
  if (bits % 8 != 0)
    fail(Status::invalid_argument, "dtype " + dtype_text(dtype) + " has " + std::to_string(bits) +
                                       " bits per element, not whole bytes (sub-byte types "
                                       "cannot be exported)");
  return bits / 8;
}

ExportLayout check_export(size_t buffer_size, DLDataType dtype, int32_t ndim,
                          const int64_t* shape, const int64_t* strides, uint64_t byte_offset) {
  ExportLayout out;
  out.dtype = dtype;
  const size_t elem = element_bytes(dtype);
  if (byte_offset > buffer_size)
    fail(Status::out_of_range, "byte_offset " + std::to_string(byte_offset) +
                                   " lies past the buffer's " + std::to_string(buffer_size) +
                                   " bytes");
  const uint64_t room = buffer_size - byte_offset;
  if (!shape) {
    if (ndim != 0 && ndim != 1)
      fail(Status::invalid_argument, "shape is NULL but ndim is " + std::to_string(ndim) +
                                         "; give a shape for more than one dimension");
    if (room % elem != 0)
      fail(Status::invalid_argument,
           "the buffer's " + std::to_string(room) + " bytes after byte_offset " +
               std::to_string(byte_offset) + " are not a whole number of " +
               std::to_string(elem) + "-byte " + dtype_text(dtype) +
               " elements; give a shape");
    out.ndim = 1;
    out.shape[0] = static_cast<int64_t>(room / elem);
    out.strides[0] = 1;
    if (strides && strides[0] != 1 && out.shape[0] > 1)
      fail(Status::invalid_argument, "strides without a shape must be NULL or {1}");
    return out;
  }
  check_ndim(ndim);
  out.ndim = ndim;
  // Compact strides (elements), and the count of elements, overflow-checked.
  int64_t compact = 1;
  bool empty = false;
  bool compact_overflow = false;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    if (shape[i] < 0)
      fail(Status::invalid_argument, dim_text(i) + " has a negative size " +
                                         std::to_string(shape[i]));
    out.shape[i] = shape[i];
    out.strides[i] = compact;
    if (shape[i] == 0) empty = true;
    if (!compact_overflow && __builtin_mul_overflow(compact, shape[i] == 0 ? 1 : shape[i], &compact))
      compact_overflow = true;
  }
  if (strides)
    for (int32_t i = 0; i < ndim; ++i) out.strides[i] = strides[i];
  else if (compact_overflow && !empty)
    fail(Status::invalid_argument, "the shape's element count overflows 64 bits");
  if (empty) return out;  // no element is reached: any strides fit
  // Lowest and highest element index reached, relative to the first element.
  i128 low = 0, high = 0;
  for (int32_t i = 0; i < ndim; ++i) {
    const i128 reach = static_cast<i128>(out.strides[i]) * (out.shape[i] - 1);
    if (reach < 0) low += reach; else high += reach;
    // Each reach is below 2^127 in size; stop before the sums could overflow.
    if (high > (static_cast<i128>(1) << 64) || low < -(static_cast<i128>(1) << 64))
      fail(Status::out_of_range, "the layout's strides reach more than 2^64 elements from its "
                                 "first element; the buffer has " +
                                     std::to_string(buffer_size) + " bytes");
  }
  const i128 first = static_cast<i128>(byte_offset) + low * static_cast<i128>(elem);
  const i128 end = static_cast<i128>(byte_offset) + (high + 1) * static_cast<i128>(elem);
  auto text = [](i128 v) {
    // Values here fit 64 bits unless absurd; say so rather than print 128.
    if (v > INT64_MAX || v < INT64_MIN) return std::string(v < 0 ? "below -2^63" : "above 2^63");
    return std::to_string(static_cast<int64_t>(v));
  };
  if (first < 0 || end > static_cast<i128>(buffer_size))
    fail(Status::out_of_range,
         "the layout reaches bytes " + text(first) + ".." + text(end - 1) +
             " (from byte_offset " + std::to_string(byte_offset) + ", " +
             std::to_string(elem) + "-byte elements) but the buffer has bytes 0.." +
             std::to_string(buffer_size == 0 ? 0 : buffer_size - 1) +
             (buffer_size == 0 ? " (none: it is empty)" : ""));
  return out;
}

uint64_t check_import(const DLTensor& t, uint64_t flags) {
  check_ndim(t.ndim);
  if (t.ndim > 0 && !t.shape)
    fail(Status::invalid_argument, "shape is NULL but ndim is " + std::to_string(t.ndim));
  check_code(t.dtype.code);
  if (t.dtype.bits == 0 || t.dtype.lanes == 0)
    fail(Status::invalid_argument, "dtype with bits " + std::to_string(t.dtype.bits) +
                                       " and lanes " + std::to_string(t.dtype.lanes) +
                                       ": both must be at least 1");
  uint64_t count = 1;
  bool overflow = false, empty = false;
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0)
      fail(Status::invalid_argument, dim_text(i) + " has a negative size " +
                                         std::to_string(t.shape[i]));
    if (t.shape[i] == 0) empty = true;
    if (!overflow && __builtin_mul_overflow(count, static_cast<uint64_t>(t.shape[i]), &count))
      overflow = true;
  }
  // A zero size means no elements, whatever the other sizes (an overflow of
  // their product does not matter); a wrapped product of zero does not.
  if (empty) return 0;
  if (overflow || count > static_cast<uint64_t>(INT64_MAX))
    fail(Status::invalid_argument, "the shape's element count overflows 63 bits");
  if (t.strides) {
    int64_t expected = 1;
    for (int32_t i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected)
        fail(Status::invalid_argument,
             "the tensor is not contiguous: " + dim_text(i) + " (size " +
                 std::to_string(t.shape[i]) + ") has stride " + std::to_string(t.strides[i]) +
                 " but a compact row-major layout needs " + std::to_string(expected) +
                 "; make it contiguous first (e.g. .contiguous() or ascontiguousarray)");
      expected *= t.shape[i];  // no overflow: the product of all sizes fits
    }
  }
  const uint64_t bits_per_element = uint64_t{t.dtype.bits} * t.dtype.lanes;
  uint64_t bytes = 0;
  if (bits_per_element < 8 && (flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)) {
    bytes = count;  // one byte each
  } else {
    uint64_t bits = 0;
    if (__builtin_mul_overflow(count, bits_per_element, &bits))
      fail(Status::invalid_argument, "the tensor's size in bits overflows 64 bits");
    bytes = bits / 8 + (bits % 8 != 0);
  }
  if (bytes > UINT64_MAX - t.byte_offset)
    fail(Status::invalid_argument, "byte_offset " + std::to_string(t.byte_offset) + " plus " +
                                       std::to_string(bytes) + " bytes overflows 64 bits");
  return bytes;
}

}  // namespace cumem::core::dlpack
