// libFuzzer target for DLPack import metadata (tests/fuzz/meson.build: its
// seeds replayed in the host suite, fuzzed by tools/fuzz.sh): the input bytes become ndim, shape, strides, dtype, flags
// and byte_offset of a tensor; check_import() must either throw
// core::Error or return the byte count that a plain 128-bit recomputation
// of a compact layout gives. Any other exception, a crash or a sanitizer
// report is a failure.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "dlpack/layout.hpp"
#include "error.hpp"

namespace {

using namespace cumem::core;
__extension__ typedef unsigned __int128 u128;

struct Reader {
  const uint8_t* data;
  size_t size;
  template <class T>
  T take() {
    T v{};
    const size_t n = size < sizeof(T) ? size : sizeof(T);
    std::memcpy(&v, data, n);
    data += n;
    size -= n;
    return v;
  }
};

// Small values are the interesting ones: bias half the dimensions there.
int64_t dim_value(Reader& r) {
  const uint8_t mode = r.take<uint8_t>();
  return (mode & 1) ? static_cast<int64_t>(static_cast<int8_t>(r.take<uint8_t>()))
                    : r.take<int64_t>();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  int64_t shape[80], strides[80];
  DLTensor t{};
  t.ndim = static_cast<int32_t>(static_cast<int8_t>(r.take<uint8_t>()));  // -128..127
  const int32_t n = t.ndim < 0 ? 0 : (t.ndim > 80 ? 80 : t.ndim);
  for (int32_t i = 0; i < n; ++i) shape[i] = dim_value(r);
  const uint8_t layout = r.take<uint8_t>();
  for (int32_t i = 0; i < n; ++i) strides[i] = dim_value(r);
  t.dtype.code = r.take<uint8_t>();
  t.dtype.bits = r.take<uint8_t>();
  t.dtype.lanes = r.take<uint16_t>();
  t.byte_offset = r.take<uint64_t>();
  const uint64_t flags = r.take<uint8_t>();
  t.shape = (layout & 1) ? nullptr : shape;
  t.strides = (layout & 2) ? strides : nullptr;
  t.data = nullptr;
  t.device = {kDLCPU, 0};
  uint64_t bytes = 0;
  try {
    bytes = dlpack::check_import(t, flags);
  } catch (const Error& e) {
    if (std::strlen(e.what()) == 0) std::abort();  // every refusal says why
    return 0;
  }
  // Accepted: recompute independently.
  if (t.ndim < 0 || t.ndim > dlpack::kMaxNdim || (t.ndim > 0 && !t.shape)) std::abort();
  bool zero = false;
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (shape[i] < 0) std::abort();
    if (shape[i] == 0) zero = true;
  }
  if (zero) {  // no elements: 0 bytes, whatever the other sizes and strides
    if (bytes != 0) std::abort();
    return 0;
  }
  u128 count = 1;
  for (int32_t i = 0; i < t.ndim; ++i) {
    count *= static_cast<u128>(shape[i]);
    if (count > static_cast<u128>(INT64_MAX)) std::abort();  // must have been refused
  }
  if (t.strides) {  // must be compact where sizes are not 1
    u128 expected = 1;
    for (int32_t i = t.ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && static_cast<u128>(strides[i]) != expected) std::abort();
      expected *= static_cast<u128>(shape[i]);
    }
  }
  const u128 bits = static_cast<u128>(t.dtype.bits) * t.dtype.lanes;
  if (bits == 0 || t.dtype.code > kDLFloat4_e2m1fn) std::abort();
  const u128 want = (bits < 8 && (flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED))
                        ? count
                        : (count * bits + 7) / 8;
  if (want != bytes) std::abort();
  if (static_cast<u128>(bytes) + t.byte_offset > UINT64_MAX) std::abort();
  return 0;
}
