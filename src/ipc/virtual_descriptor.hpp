// The descriptor of a virtual-memory buffer shared with another process:
// the list of its physical chunks (each travels as a POSIX file descriptor
// beside it), plain bytes of a fixed layout, little-endian on every host,
// with a version and a CRC-32, checked completely before anything of it
// reaches the driver. Host-only: no CUDA.
//
// Layout (96 + 16 x chunks + 4 bytes, every integer little-endian):
//   off  0  8 bytes  magic "CUMEMVMM"
//   off  8  u16      format version (1)
//   off 10  u16      reserved, zero
//   off 12  u32      chunk count, 1 to kVirtualMaxChunks
//   off 16  u64      size: the buffer's bytes (offset + size at most the chunks' sum)
//   off 24  u64      mapped: the chunks' sum
//   off 32  u32      location type (1 device, 2 host, 3 host NUMA node)
//   off 36  i32      location id (device: the exporter's ordinal; host: 0;
//                    host NUMA: the node)
//   off 40  16 bytes device UUID (device memory: the exporter's device; else zero)
//   off 56  u32      exporter pid
//   off 60  u32      handle types (POSIX fd 1, and FABRIC 8)
//   off 64  u64      granularity of the exporter (a power of two)
//   off 72  u64      offset: where the buffer begins in the mapped chunks (0
//                    for a virtual buffer; a block of an expandable cache
//                    begins inside its first page). Reserved (zero) in
//                    earlier builds, whose decoders refuse a non-zero one.
//   off 80  16 bytes reserved, zero
//   off 96  chunks x (u64 offset, u64 size): contiguous from offset 0
//   then    u32      CRC-32 (bytes.hpp) of every byte before it
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cumem::core {

constexpr size_t kVirtualHeaderSize = 96;
constexpr size_t kVirtualChunkEntrySize = 16;
constexpr uint16_t kVirtualFormatVersion = 1;
// A sent handle's descriptor rides in at most 1024 pieces of 160 bytes (the
// transport's limit), which holds this many chunks.
constexpr uint32_t kVirtualMaxChunks = 10000;

struct VirtualChunkEntry {
  uint64_t offset = 0, size = 0;
};

// The wire's location types (its own numbering, fixed by the format;
// resources/virtual_ipc.cpp maps core::LocationType to them).
constexpr uint32_t kVirtualDevice = 1, kVirtualHost = 2, kVirtualHostNuma = 3;

struct VirtualDescriptor {
  uint64_t size = 0;
  uint32_t location_type = kVirtualDevice;  // kVirtualDevice, _Host or _HostNuma
  int32_t location_id = 0;
  std::array<uint8_t, 16> device_uuid{};
  uint32_t exporter_pid = 0;
  uint32_t handle_types = 0;
  uint64_t granularity = 0;
  uint64_t offset = 0;  // of the buffer's first byte in the mapped chunks
  std::vector<VirtualChunkEntry> chunks;

  uint64_t mapped() const noexcept;
};

// Bytes of a descriptor of `chunks` chunks.
constexpr size_t virtual_descriptor_length(size_t chunks) {
  return kVirtualHeaderSize + kVirtualChunkEntrySize * chunks + 4;
}

// The bytes of `d`, validated first by decode's rules (throws
// Error(invalid_argument) naming the field).
std::vector<uint8_t> encode_virtual(const VirtualDescriptor& d);
// Reads and validates a descriptor: magic, version, length, the CRC, then
// every field as if the CRC were absent. Throws Error(invalid_argument)
// naming the check that failed.
VirtualDescriptor decode_virtual(const uint8_t* bytes, size_t length);
// The chunk count a descriptor's first 16 bytes announce (magic and
// version checked), to know its length before all of it is read.
uint32_t virtual_chunk_count(const uint8_t* bytes, size_t length);
// "virtual buffer of 4194304 bytes (4.00 MiB) in 2 chunks of device memory
// on GPU-..., exported by pid 42": for messages.
std::string describe(const VirtualDescriptor& d);

}  // namespace cumem::core
