// libFuzzer target for the virtual-memory IPC descriptor decoder
// (ipc/virtual_descriptor.hpp; tests/fuzz/meson.build: its seeds replayed
// in the host suite, fuzzed by tools/fuzz.sh): decode_virtual() of any
// bytes either throws core::Error or returns a descriptor that encodes back
// to exactly the same bytes, whose chunk count virtual_chunk_count() also
// reads. Any other exception, a crash or a sanitizer report is a failure.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "error.hpp"
#include "ipc/bytes.hpp"
#include "ipc/virtual_descriptor.hpp"

namespace {

using namespace cumem::core;

void check(const uint8_t* data, size_t size) {
  VirtualDescriptor d;
  try {
    d = decode_virtual(data, size);
  } catch (const Error&) {
    return;  // rejected, with a message: fine
  }
  // An accepted descriptor must be encodable (a throw here aborts), to the
  // same bytes, and describable.
  const std::vector<uint8_t> out = encode_virtual(d);
  if (out.size() != size || std::memcmp(out.data(), data, size) != 0) std::abort();
  if (virtual_chunk_count(data, size) != d.chunks.size()) std::abort();
  if (d.offset + d.size > d.mapped()) std::abort();
  if (describe(d).empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(data, size);
  // Mutated bytes almost never keep a matching CRC, so each input long
  // enough to hold one is tried once more with its last four bytes made
  // the CRC of the rest: that reaches the field checks.
  if (size >= kVirtualHeaderSize + 4) {
    std::vector<uint8_t> sealed(data, data + size);
    const uint32_t crc = crc32(sealed.data(), size - 4);
    for (int i = 0; i < 4; ++i) sealed[size - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    check(sealed.data(), size);
  }
  return 0;
}
