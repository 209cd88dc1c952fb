// Plain bytes, the same on every host: little-endian integers, the CRC-32
// that the IPC formats (descriptor, virtual descriptor, socket messages)
// are written with, and the all-zero test of their reserved and id fields.
// The one copy of each in libcumem.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cumem::core {

// `value` as sizeof(T) little-endian bytes at `p`.
template <class T>
void put_le(uint8_t* p, T value) noexcept {
  static_assert(std::is_unsigned_v<T>, "put_le writes unsigned integers");
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

// The sizeof(T) little-endian bytes at `p`.
template <class T>
T get_le(const uint8_t* p) noexcept {
  static_assert(std::is_unsigned_v<T>, "get_le reads unsigned integers");
  T value = 0;
  for (size_t i = sizeof(T); i-- > 0;) value = static_cast<T>((value << 8) | p[i]);
  return value;
}

// Whether the `n` bytes at `p` are all zero.
inline bool all_zero(const uint8_t* p, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}
template <size_t N>
bool all_zero(const std::array<uint8_t, N>& bytes) noexcept {
  return all_zero(bytes.data(), N);
}

// The table of the reflected polynomial 0xEDB88320, built at compile time.
struct Crc32Table {
  uint32_t entry[256];
  constexpr Crc32Table() : entry() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      entry[i] = c;
    }
  }
};
inline constexpr Crc32Table kCrc32Table;

// CRC-32 (IEEE 802.3, reflected, as zlib's crc32(0, data, length)).
inline uint32_t crc32(const uint8_t* data, size_t length) noexcept {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < length; ++i) c = kCrc32Table.entry[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace cumem::core
