// libFuzzer target for the IPC descriptor decoder (tests/fuzz/meson.build:
// its seeds replayed in the host suite, fuzzed by tools/fuzz.sh): decode() of any bytes either throws
// core::Error or returns a descriptor that encodes back to exactly the same
// bytes. Any other exception, a crash or a sanitizer report is a failure.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "error.hpp"
#include "ipc/bytes.hpp"
#include "ipc/descriptor.hpp"

namespace {

using namespace cumem::core;

void check(const uint8_t* data, size_t size) {
  IpcDescriptor d;
  try {
    d = decode(data, size);
  } catch (const Error&) {
    return;  // rejected, with a message: fine
  }
  uint8_t out[kIpcDescriptorSize];
  encode(d, out);  // an accepted descriptor must be encodable: a throw here aborts
  if (size != kIpcDescriptorSize || std::memcmp(out, data, size) != 0) std::abort();
  if (describe(d).empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(data, size);
  // Mutated bytes almost never keep a matching CRC, so each 160-byte input
  // is tried once more with its CRC recomputed: that reaches the field checks.
  if (size == kIpcDescriptorSize) {
    uint8_t sealed[kIpcDescriptorSize];
    std::memcpy(sealed, data, size);
    const uint32_t crc = crc32(sealed, 156);
    for (int i = 0; i < 4; ++i) sealed[156 + i] = static_cast<uint8_t>(crc >> (8 * i));
    check(sealed, size);
  }
  return 0;
}
