#include "virtual_descriptor.hpp"

#include <cstdio>
#include <cstring>

#include "../error.hpp"
#include "bytes.hpp"

namespace cumem::core {
namespace {

constexpr char kMagic[8] = {'C', 'U', 'M', 'E', 'M', 'V', 'M', 'M'};
constexpr size_t kOffVersion = 8, kOffReserved0 = 10, kOffCount = 12, kOffSize = 16,
                 kOffMapped = 24, kOffLocationType = 32, kOffLocationId = 36, kOffUuid = 40,
                 kOffPid = 56, kOffHandleTypes = 60, kOffGranularity = 64, kOffOffset = 72,
                 kOffReserved1 = 80;
static_assert(kOffReserved1 + 16 == kVirtualHeaderSize, "the chunks follow the header");

constexpr uint32_t kPosixFd = 0x1, kFabric = 0x8;

[[noreturn]] void reject(const std::string& what) {
  fail(Status::invalid_argument, "virtual IPC descriptor " + what);
}

const char* location_name(uint32_t type) {
  switch (type) {
    case kVirtualDevice: return "device";
    case kVirtualHost: return "host";
    case kVirtualHostNuma: return "host NUMA";
  }
  return "unknown";
}

void validate(const VirtualDescriptor& d) {
  const size_t n = d.chunks.size();
  if (n == 0 || n > kVirtualMaxChunks)
    reject("has " + std::to_string(n) + " chunks; it must have 1 to " +
           std::to_string(kVirtualMaxChunks));
  const uint64_t g = d.granularity;
  if (g < 4096 || (g & (g - 1)) != 0 || g > (uint64_t{1} << 32))
    reject("has granularity " + std::to_string(g) +
           "; it must be a power of two from 4096 to 4 GiB");
  uint64_t expected = 0;
  for (size_t i = 0; i < n; ++i) {
    const VirtualChunkEntry& c = d.chunks[i];
    const std::string which = "chunk " + std::to_string(i) + " ";
    if (c.offset != expected)
      reject(which + "starts at offset " + std::to_string(c.offset) + "; the chunks must follow "
             "each other from offset 0 (expected " + std::to_string(expected) + ")");
    if (c.size == 0 || c.size % g != 0)
      reject(which + "has size " + std::to_string(c.size) +
             ", not a non-zero multiple of the granularity " + std::to_string(g));
    if (c.size > UINT64_MAX - expected) reject(which + "ends past 2^64 bytes");
    expected += c.size;
  }
  if (d.size == 0) reject("has size 0");
  if (d.offset >= expected || d.size > expected - d.offset)
    reject("has size " + std::to_string(d.size) + " at offset " + std::to_string(d.offset) +
           ", which ends past its chunks' " + std::to_string(expected) + " bytes");
  switch (d.location_type) {
    case kVirtualDevice:
    case kVirtualHostNuma:
      if (d.location_id < 0)
        reject("has location id " + std::to_string(d.location_id) + " for " +
               location_name(d.location_type) + " memory; it must be >= 0");
      break;
    case kVirtualHost:
      if (d.location_id != 0)
        reject("has location id " + std::to_string(d.location_id) + " for host memory; it must be 0");
      break;
    default:
      reject("has location type " + std::to_string(d.location_type) +
             "; it must be 1 (device), 2 (host) or 3 (host NUMA node)");
  }
  const bool zero_uuid = all_zero(d.device_uuid);
  if (d.location_type == kVirtualDevice && zero_uuid)
    reject("of device memory has an all-zero device UUID; it must name the exporter's device");
  if (d.location_type != kVirtualDevice && !zero_uuid)
    reject("of host memory has a device UUID; it must be all zero");
  if (!(d.handle_types & kPosixFd) || (d.handle_types & ~(kPosixFd | kFabric)))
    reject("has handle types " + std::to_string(d.handle_types) +
           "; they must include the POSIX fd (1) and may add only FABRIC (8)");
  if (d.exporter_pid == 0 || d.exporter_pid > INT32_MAX)
    reject("has exporter pid " + std::to_string(d.exporter_pid) + ", which is not a process id");
}

}  // namespace

uint64_t VirtualDescriptor::mapped() const noexcept {
  uint64_t sum = 0;
  for (const VirtualChunkEntry& c : chunks) sum += c.size;
  return sum;
}

std::vector<uint8_t> encode_virtual(const VirtualDescriptor& d) {
  validate(d);
  const size_t n = d.chunks.size();
  std::vector<uint8_t> b(virtual_descriptor_length(n), 0);  // reserved bytes stay zero
  std::memcpy(b.data(), kMagic, sizeof kMagic);
  put_le<uint16_t>(b.data() + kOffVersion, kVirtualFormatVersion);
  put_le<uint32_t>(b.data() + kOffCount, n);
  put_le<uint64_t>(b.data() + kOffSize, d.size);
  put_le<uint64_t>(b.data() + kOffMapped, d.mapped());
  put_le<uint32_t>(b.data() + kOffLocationType, d.location_type);
  put_le<uint32_t>(b.data() + kOffLocationId, static_cast<uint32_t>(d.location_id));
  std::memcpy(b.data() + kOffUuid, d.device_uuid.data(), 16);
  put_le<uint32_t>(b.data() + kOffPid, d.exporter_pid);
  put_le<uint32_t>(b.data() + kOffHandleTypes, d.handle_types);
  put_le<uint64_t>(b.data() + kOffGranularity, d.granularity);
  put_le<uint64_t>(b.data() + kOffOffset, d.offset);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* entry = b.data() + kVirtualHeaderSize + i * kVirtualChunkEntrySize;
    put_le<uint64_t>(entry, d.chunks[i].offset);
    put_le<uint64_t>(entry + 8, d.chunks[i].size);
  }
  const size_t crc_at = b.size() - 4;
  put_le<uint32_t>(b.data() + crc_at, crc32(b.data(), crc_at));
  return b;
}

uint32_t virtual_chunk_count(const uint8_t* bytes, size_t length) {
  if (bytes == nullptr && length != 0) reject("is NULL");
  if (length < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    fail(Status::invalid_argument,
         "not a libcumem virtual IPC descriptor: it does not begin with \"CUMEMVMM\"");
  if (length < kOffCount + 4) reject("truncated: " + std::to_string(length) + " bytes");
  const uint64_t version = get_le<uint16_t>(bytes + kOffVersion);
  if (version != kVirtualFormatVersion)
    reject("format version " + std::to_string(version) + "; this libcumem reads version " +
           std::to_string(kVirtualFormatVersion));
  const uint32_t n = get_le<uint32_t>(bytes + kOffCount);
  if (n == 0 || n > kVirtualMaxChunks)
    reject("announces " + std::to_string(n) + " chunks; it must have 1 to " +
           std::to_string(kVirtualMaxChunks));
  return n;
}

VirtualDescriptor decode_virtual(const uint8_t* bytes, size_t length) {
  const uint32_t n = virtual_chunk_count(bytes, length);
  const size_t expected = virtual_descriptor_length(n);
  if (length != expected)
    reject(std::string(length < expected ? "truncated" : "too long") + ": " +
           std::to_string(length) + " bytes; a descriptor of " + std::to_string(n) +
           " chunks has exactly " + std::to_string(expected));
  const size_t crc_at = length - 4;
  const uint32_t stored = get_le<uint32_t>(bytes + crc_at);
  const uint32_t computed = crc32(bytes, crc_at);
  if (stored != computed) {
    char crcs[64];
    std::snprintf(crcs, sizeof crcs, " (CRC-32 0x%08x stored, 0x%08x computed)", stored, computed);
    reject(std::string("integrity check failed: the descriptor was corrupted") + crcs);
  }
  // Every field on its own, as if there were no CRC (a forger can compute one).
  if (!all_zero(bytes + kOffReserved0, 2) || !all_zero(bytes + kOffReserved1, 16))
    reject("has non-zero reserved bytes; they must be zero in version 1");
  VirtualDescriptor d;
  d.size = get_le<uint64_t>(bytes + kOffSize);
  d.location_type = get_le<uint32_t>(bytes + kOffLocationType);
  d.location_id = static_cast<int32_t>(get_le<uint32_t>(bytes + kOffLocationId));
  std::memcpy(d.device_uuid.data(), bytes + kOffUuid, 16);
  d.exporter_pid = get_le<uint32_t>(bytes + kOffPid);
  d.handle_types = get_le<uint32_t>(bytes + kOffHandleTypes);
  d.granularity = get_le<uint64_t>(bytes + kOffGranularity);
  d.offset = get_le<uint64_t>(bytes + kOffOffset);
  d.chunks.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* entry = bytes + kVirtualHeaderSize + i * kVirtualChunkEntrySize;
    d.chunks[i].offset = get_le<uint64_t>(entry);
    d.chunks[i].size = get_le<uint64_t>(entry + 8);
  }
  validate(d);
  const uint64_t mapped = get_le<uint64_t>(bytes + kOffMapped);
  if (mapped != d.mapped())
    reject("says its chunks map " + std::to_string(mapped) + " bytes, but they add up to " +
           std::to_string(d.mapped()));
  return d;
}

std::string describe(const VirtualDescriptor& d) {
  std::string out = "virtual buffer of " + describe_bytes(d.size) +
                    (d.offset ? " at offset " + std::to_string(d.offset) : std::string()) + " in " +
                    std::to_string(d.chunks.size()) + " chunk" +
                    (d.chunks.size() == 1 ? "" : "s") + " of " + location_name(d.location_type) +
                    " memory";
  if (d.location_type == kVirtualHostNuma) out += " (node " + std::to_string(d.location_id) + ")";
  return out + ", exported by pid " + std::to_string(d.exporter_pid);
}

}  // namespace cumem::core
