#include "descriptor.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "../error.hpp"
#include "bytes.hpp"

namespace cumem::core {
namespace {

constexpr char kMagic[8] = {'C', 'U', 'M', 'E', 'M', 'I', 'P', 'C'};

// Offsets of the fields (see descriptor.hpp).
constexpr size_t kOffVersion = 8, kOffType = 10, kOffKind = 12, kOffSize = 16, kOffOffset = 24,
                 kOffUuid = 32, kOffPoolId = 48, kOffExport = 64, kOffPid = 128, kOffTag = 132,
                 kOffKey = 140, kOffCrc = 156;
static_assert(kOffCrc + 4 == kIpcDescriptorSize, "the CRC ends the descriptor");

// The memory kinds in the descriptor's bytes: its own numbering, fixed by
// the format (0 is never a kind), whatever core::MemoryKind's values are.
constexpr uint32_t kHost = 1, kDevice = 2, kPinned = 3, kManaged = 4;

uint32_t wire_kind(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: return kHost;
    case MemoryKind::device: return kDevice;
    case MemoryKind::pinned: return kPinned;
    case MemoryKind::managed: return kManaged;
  }
  return 0;  // not a kind: validate() rejects it
}

// Only for a value validate() accepted.
MemoryKind core_kind(uint32_t wire) {
  switch (wire) {
    case kDevice: return MemoryKind::device;
    case kPinned: return MemoryKind::pinned;
    case kManaged: return MemoryKind::managed;
    default: return MemoryKind::host;
  }
}

const char* type_name(IpcType type) {
  switch (type) {
    case IpcType::pool_buffer: return "pool buffer";
    case IpcType::legacy_buffer: return "legacy buffer";
    case IpcType::host_shared_buffer: return "host shared buffer";
    case IpcType::pool: return "pool";
  }
  return "unknown type";
}

// The name of a kind as the bytes hold it.
const char* kind_name(uint32_t kind) {
  return kind >= kHost && kind <= kManaged ? memory_kind_name(core_kind(kind)) : "unknown";
}

std::string hex(const uint8_t* bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

// NVIDIA's spelling of a device UUID: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
std::string uuid_string(const std::array<uint8_t, 16>& u) {
  const uint8_t* p = u.data();
  return "GPU-" + hex(p, 4) + "-" + hex(p + 4, 2) + "-" + hex(p + 6, 2) + "-" + hex(p + 8, 2) +
         "-" + hex(p + 10, 6);
}

// Fills `n` bytes from getrandom(2); false with `error` set if it cannot.
bool fill_from_getrandom(uint8_t* out, size_t n, int& error) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out + got, n - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
    else if (r < 0 && errno != EINTR) {
      error = errno;
      return false;
    }
  }
  return true;
}

// Fills `n` bytes from /dev/urandom; false with `error` set if it cannot.
bool fill_from_urandom(uint8_t* out, size_t n, int& error) {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = errno;
    return false;
  }
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r > 0) got += static_cast<size_t>(r);
    else if (r == 0 || errno != EINTR) {
      error = r == 0 ? EIO : errno;
      break;
    }
  }
  ::close(fd);
  return got == n;
}

[[noreturn]] void reject(const std::string& what) {
  fail(Status::invalid_argument, "IPC descriptor " + what);
}

// The field rules, shared by encode() and decode(), with the memory kind as
// its bytes hold it (`kind`). Each rule says which field is wrong and what it
// should be.
void validate(const IpcDescriptor& d, uint32_t kind) {
  const uint16_t type = static_cast<uint16_t>(d.type);
  if (type < 1 || type > 4)
    reject("type " + std::to_string(type) +
           " is unknown (1 pool buffer, 2 legacy buffer, 3 host shared buffer, 4 pool)");
  const std::string of = std::string("of a ") + type_name(d.type) + " ";
  const bool is_buffer = d.type != IpcType::pool;

  // Which memory each type can describe: the driver exports pool buffers of
  // device and pinned pools, legacy handles of cuMemAlloc (device) memory;
  // host shared memory is host memory; pools are device, pinned or host.
  const char* allowed = nullptr;
  bool kind_ok = false;
  switch (d.type) {
    case IpcType::pool_buffer:
      allowed = "device or pinned";
      kind_ok = kind == kDevice || kind == kPinned;
      break;
    case IpcType::legacy_buffer:
      allowed = "device";
      kind_ok = kind == kDevice;
      break;
    case IpcType::host_shared_buffer:
      allowed = "host";
      kind_ok = kind == kHost;
      break;
    case IpcType::pool:
      allowed = "host, device or pinned";
      kind_ok = kind == kHost || kind == kDevice || kind == kPinned;
      break;
  }
  if (!kind_ok)
    reject(of + "cannot hold memory kind " + std::to_string(kind) + " (" +
           kind_name(kind) + "); it must be " + allowed);
  const bool host = kind == kHost;

  if (is_buffer && d.size == 0) reject(of + "has size 0");
  if (d.type == IpcType::pool && host && d.size == 0)
    reject("of a host shared pool has arena size 0");
  if (d.type == IpcType::pool && !host && d.size != 0)
    reject("of a " + std::string(kind_name(kind)) + " pool has size " +
           std::to_string(d.size) + "; only a host shared pool records a size (its arena's)");

  const bool has_offset =
      d.type == IpcType::legacy_buffer || d.type == IpcType::host_shared_buffer;
  if (!has_offset && d.offset != 0)
    reject(of + "has offset " + std::to_string(d.offset) +
           "; only legacy and host shared buffers have an offset");
  if (d.offset > UINT64_MAX - d.size)
    reject(of + "has offset " + std::to_string(d.offset) + " + size " + std::to_string(d.size) +
           ", which overflows 64 bits");

  if (host && !all_zero(d.device_uuid))
    reject(of + "has a device UUID (" + uuid_string(d.device_uuid) +
           ") for host memory; it must be all zero");
  if (!host && all_zero(d.device_uuid))
    reject(of + "has an all-zero device UUID for " + kind_name(kind) +
           " memory; it must name the exporter's device");

  if (d.type == IpcType::legacy_buffer && !all_zero(d.pool_id))
    reject(of + "has a pool id; a legacy buffer belongs to no pool, so it must be all zero");
  if (d.type != IpcType::legacy_buffer && all_zero(d.pool_id))
    reject(of + "has an all-zero pool id; the exporter gives every pool a random id");

  if ((d.type == IpcType::host_shared_buffer || d.type == IpcType::pool) &&
      !all_zero(d.export_data))
    reject(of + "has export data; only pool and legacy buffers carry driver export data");

  if (d.exporter_pid == 0 || d.exporter_pid > INT32_MAX)
    reject(of + "has exporter pid " + std::to_string(d.exporter_pid) +
           ", which is not a process id");

  // Pools carry their key (it travels with the pool's file descriptor);
  // buffers of pools carry a tag made with it, and never the key.
  if (d.type == IpcType::pool && all_zero(d.pool_key))
    reject(of + "has an all-zero key; the exporter gives every pool a random key");
  if (d.type != IpcType::pool && !all_zero(d.pool_key))
    reject(of + "carries a pool key; only a pool's own descriptor does");
  if ((d.type == IpcType::pool || d.type == IpcType::legacy_buffer) && d.tag != 0)
    reject(of + "has an authentication tag; only buffers of pools carry one");
}

// Bytes 0..kOffTag of `d` (what its tag covers), in `b`.
void encode_fields(const IpcDescriptor& d, uint8_t* b) {
  std::memcpy(b, kMagic, sizeof kMagic);
  put_le<uint16_t>(b + kOffVersion, kIpcFormatVersion);
  put_le<uint16_t>(b + kOffType, static_cast<uint16_t>(d.type));
  put_le<uint32_t>(b + kOffKind, wire_kind(d.memory_kind));
  put_le<uint64_t>(b + kOffSize, d.size);
  put_le<uint64_t>(b + kOffOffset, d.offset);
  std::memcpy(b + kOffUuid, d.device_uuid.data(), 16);
  std::memcpy(b + kOffPoolId, d.pool_id.data(), 16);
  std::memcpy(b + kOffExport, d.export_data.data(), 64);
  put_le<uint32_t>(b + kOffPid, d.exporter_pid);
}

uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

void sip_round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
  v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
  v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
  v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
}

}  // namespace

uint64_t siphash24(const IpcKey& key, const uint8_t* data, size_t length) {
  const uint64_t k0 = get_le<uint64_t>(key.data()), k1 = get_le<uint64_t>(key.data() + 8);
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  const size_t whole = length - length % 8;
  for (size_t i = 0; i < whole; i += 8) {
    const uint64_t m = get_le<uint64_t>(data + i);
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(length) << 56;
  for (size_t i = whole; i < length; ++i) last |= static_cast<uint64_t>(data[i]) << (8 * (i - whole));
  v3 ^= last;
  sip_round(v0, v1, v2, v3);
  sip_round(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) sip_round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

void sign(IpcDescriptor& d, const IpcKey& key) {
  uint8_t b[kOffTag];
  encode_fields(d, b);
  d.tag = siphash24(key, b, sizeof b);
}

bool authentic(const IpcDescriptor& d, const IpcKey& key) {
  uint8_t b[kOffTag];
  encode_fields(d, b);
  const uint64_t diff = siphash24(key, b, sizeof b) ^ d.tag;
  uint8_t any = 0;
  for (int i = 0; i < 8; ++i) any |= static_cast<uint8_t>(diff >> (8 * i));
  return any == 0;
}

void encode(const IpcDescriptor& d, uint8_t (&out)[kIpcDescriptorSize]) {
  validate(d, wire_kind(d.memory_kind));
  uint8_t b[kIpcDescriptorSize] = {};
  encode_fields(d, b);
  put_le<uint64_t>(b + kOffTag, d.tag);
  std::memcpy(b + kOffKey, d.pool_key.data(), 16);
  put_le<uint32_t>(b + kOffCrc, crc32(b, kOffCrc));
  std::memcpy(out, b, sizeof b);
}

IpcDescriptor decode(const uint8_t* bytes, size_t length) {
  if (bytes == nullptr && length != 0) fail(Status::invalid_argument, "IPC descriptor is NULL");
  // Magic and version come before the length, where there are bytes enough
  // to read them: a foreign blob says it is foreign, and a descriptor of a
  // newer format (perhaps of another length) names its version.
  const size_t magic_bytes = length < sizeof kMagic ? length : sizeof kMagic;
  if (magic_bytes != 0 && std::memcmp(bytes, kMagic, magic_bytes) != 0)
    fail(Status::invalid_argument,
         "not a libcumem IPC descriptor: it does not begin with \"CUMEMIPC\"");
  if (length >= kOffVersion + 2 && get_le<uint16_t>(bytes + kOffVersion) != kIpcFormatVersion)
    reject("format version " + std::to_string(get_le<uint16_t>(bytes + kOffVersion)) +
           "; this libcumem reads version " + std::to_string(kIpcFormatVersion) +
           (get_le<uint16_t>(bytes + kOffVersion) == 1
                ? " (version 1, of libcumem 1.0, had no authentication tag: export the buffer "
                  "again with this libcumem)"
                : ""));
  if (length < kIpcDescriptorSize)
    reject("truncated: " + std::to_string(length) + " of " + std::to_string(kIpcDescriptorSize) +
           " bytes");
  if (length > kIpcDescriptorSize)
    reject("too long: " + std::to_string(length) + " bytes; a version " +
           std::to_string(kIpcFormatVersion) + " descriptor has exactly " +
           std::to_string(kIpcDescriptorSize));

  const uint32_t stored = get_le<uint32_t>(bytes + kOffCrc), computed = crc32(bytes, kOffCrc);
  if (stored != computed) {
    char crcs[64];
    std::snprintf(crcs, sizeof crcs, " (CRC-32 0x%08x stored, 0x%08x computed)", stored, computed);
    reject(std::string("integrity check failed: the descriptor was corrupted") + crcs);
  }

  IpcDescriptor d;
  d.type = static_cast<IpcType>(get_le<uint16_t>(bytes + kOffType));
  const uint32_t kind = get_le<uint32_t>(bytes + kOffKind);
  d.size = get_le<uint64_t>(bytes + kOffSize);
  d.offset = get_le<uint64_t>(bytes + kOffOffset);
  std::memcpy(d.device_uuid.data(), bytes + kOffUuid, 16);
  std::memcpy(d.pool_id.data(), bytes + kOffPoolId, 16);
  std::memcpy(d.export_data.data(), bytes + kOffExport, 64);
  d.exporter_pid = get_le<uint32_t>(bytes + kOffPid);
  d.tag = get_le<uint64_t>(bytes + kOffTag);
  std::memcpy(d.pool_key.data(), bytes + kOffKey, 16);
  validate(d, kind);
  d.memory_kind = core_kind(kind);
  return d;
}

std::string describe(const IpcDescriptor& d) {
  std::string out;
  if (d.type == IpcType::pool) {
    out = std::string(d.memory_kind == MemoryKind::host ? "host shared"
                                                        : memory_kind_name(d.memory_kind)) +
          " pool";
    if (d.size != 0) out += " with an arena of " + describe_bytes(d.size);
  } else {
    out = std::string(type_name(d.type)) + " of " + describe_bytes(d.size) + " of " +
          memory_kind_name(d.memory_kind) + " memory";
    if (d.offset != 0) out += " at offset " + std::to_string(d.offset);
  }
  if (!all_zero(d.device_uuid)) out += " on " + uuid_string(d.device_uuid);
  if (!all_zero(d.pool_id)) out += ", pool " + hex(d.pool_id.data(), 16);
  out += ", exported by pid " + std::to_string(d.exporter_pid);
  return out;
}

std::array<uint8_t, 16> random_pool_id() {
  std::array<uint8_t, 16> id{};
  // All zero means "no pool" in a descriptor, so draw again (1 in 2^128).
  while (all_zero(id)) {
    int getrandom_error = 0, urandom_error = 0;
    if (fill_from_getrandom(id.data(), id.size(), getrandom_error)) continue;
    // No getrandom (a kernel before 3.17, or a seccomp filter): /dev/urandom.
    if (fill_from_urandom(id.data(), id.size(), urandom_error)) continue;
    fail(Status::not_supported, std::string("no random bytes for a pool id: getrandom failed (") +
                                    std::strerror(getrandom_error) +
                                    ") and /dev/urandom could not be read (" +
                                    std::strerror(urandom_error) + ")");
  }
  return id;
}

}  // namespace cumem::core
