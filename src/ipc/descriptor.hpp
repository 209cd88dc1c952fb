// The IPC descriptor: what one process sends another so that it can import a
// pool or a buffer. Plain bytes of a fixed size and layout, little-endian on
// every host, with a version and a CRC, so that it can travel through any
// channel (a socket, a file, a pipe, a Python bytes object) and be checked
// completely before anything of it reaches the driver. Host-only: no CUDA.
//
// Layout (160 bytes, every integer little-endian):
//   off   0  8 bytes  magic "CUMEMIPC"
//   off   8  u16      format version (1)
//   off  10  u16      type (IpcType)
//   off  12  u32      memory kind (1 host, 2 device, 3 pinned, 4 managed:
//                     the descriptor's own numbering, in which 0 is never a
//                     kind; descriptor.cpp maps core::MemoryKind to it)
//   off  16  u64      size: bytes of the buffer; for a pool, bytes of the
//                     arena of a host shared pool, else 0
//   off  24  u64      offset: of a host shared buffer in the shared file, of
//                     a legacy buffer inside its driver allocation; else 0
//   off  32  16 bytes device UUID (all zero for host memory)
//   off  48  16 bytes pool id (random, chosen by the exporter for each pool;
//                     all zero for a legacy buffer)
//   off  64  64 bytes export data (CUmemPoolPtrExportData for a pool buffer,
//                     CUipcMemHandle for a legacy buffer; else all zero)
//   off 128  u32      exporter pid
//   off 132  u64      authentication tag of a pool buffer or host shared
//                     buffer: SipHash-2-4 of bytes 0..131 under the pool's
//                     key; 0 for legacy buffers and pools
//   off 140  16 bytes the pool's key (random, chosen by the exporter for
//                     each pool) in a pool descriptor, which travels with
//                     the pool's file descriptor; all zero in buffer
//                     descriptors, which never carry it
//   off 156  u32      CRC-32 (bytes.hpp: IEEE 802.3, as zlib's crc32) of bytes 0..155
//
// The CRC catches corruption; the tag is what makes a buffer descriptor
// trustworthy: only a process that holds the pool (and so its key) can make
// one that passes, and an importer checks it before any field reaches the
// driver (the driver does not validate export data: forged export data
// crashed the H200's driver 580.159 in cuMemPoolImportPointer).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../memory_kind.hpp"

namespace cumem::core {

enum class IpcType : uint16_t {
  pool_buffer = 1,         // a buffer of an IPC-enabled cuMemPool (cuMemPoolExportPointer)
  legacy_buffer = 2,       // a cuMemAlloc buffer (cuIpcGetMemHandle)
  host_shared_buffer = 3,  // a buffer in a host shared arena (memfd + offset)
  pool = 4,                // an exported pool or host shared arena; travels with its fd
};

constexpr size_t kIpcDescriptorSize = 160;
// 2 since libcumem 1.1 (the tag and the pool key); version 1 is refused.
constexpr uint16_t kIpcFormatVersion = 2;

using IpcKey = std::array<uint8_t, 16>;

struct IpcDescriptor {
  IpcType type = IpcType::pool_buffer;
  MemoryKind memory_kind = MemoryKind::host;
  uint64_t size = 0, offset = 0;
  std::array<uint8_t, 16> device_uuid{}, pool_id{};
  std::array<uint8_t, 64> export_data{};
  uint32_t exporter_pid = 0;
  uint64_t tag = 0;   // pool and host shared buffers: sign() sets it
  IpcKey pool_key{};  // pool descriptors only
};

// Sets d.tag for a buffer of the pool whose key is `key`.
void sign(IpcDescriptor& d, const IpcKey& key);
// Whether d.tag is the one `key` gives (compared in constant time).
bool authentic(const IpcDescriptor& d, const IpcKey& key);
// SipHash-2-4 (64-bit) of `length` bytes under a 128-bit key.
uint64_t siphash24(const IpcKey& key, const uint8_t* data, size_t length);

// Writes the 160 bytes of `d`. Validates `d` first by the rules decode()
// applies (throws Error(invalid_argument), `out` untouched), so an invalid
// descriptor fails in the exporter, not later in the importer.
void encode(const IpcDescriptor& d, uint8_t (&out)[kIpcDescriptorSize]);

// Reads and validates a descriptor: length, magic and version first, then the
// CRC (a corrupted descriptor says so), then every field. Throws
// Error(invalid_argument) naming the check that failed.
IpcDescriptor decode(const uint8_t* bytes, size_t length);

// "pool buffer of 4096 bytes (4.00 KiB) of device memory on GPU-..., pool
// 0123..., exported by pid 42": for messages.
std::string describe(const IpcDescriptor& d);

// A new random pool id or key (getrandom(2), else /dev/urandom); never all
// zero.
std::array<uint8_t, 16> random_pool_id();
inline IpcKey random_pool_key() { return random_pool_id(); }

}  // namespace cumem::core
