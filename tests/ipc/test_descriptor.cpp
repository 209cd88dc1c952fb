// IPC descriptors: the byte layout (golden vectors written out by hand, so it
// can never move silently), round trips of every type, and the rejection of
// every corruption and every invalid field with its own message.
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <cumem/cumem.h>

#include "error.hpp"
#include "ipc/bytes.hpp"
#include "ipc/descriptor.hpp"

using cumem::core::decode;
using cumem::core::encode;
using cumem::core::Error;
using cumem::core::IpcDescriptor;
using cumem::core::IpcType;
using cumem::core::kIpcDescriptorSize;
using cumem::core::Status;

namespace {

using Bytes = std::vector<uint8_t>;

using cumem::core::MemoryKind;
constexpr MemoryKind kHost = MemoryKind::host, kDevice = MemoryKind::device,
                     kPinned = MemoryKind::pinned, kManaged = MemoryKind::managed;

// The memory kind as the bytes hold it: the format's own numbering (1 host,
// 2 device, 3 pinned, 4 managed; 0 is never a kind), written out here from
// the layout, whatever the core's values are.
uint32_t wire_kind(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: return 1;
    case MemoryKind::device: return 2;
    case MemoryKind::pinned: return 3;
    case MemoryKind::managed: return 4;
  }
  return 0;
}

Bytes from_hex(const char* text) {
  Bytes out;
  for (const char* p = text; *p != '\0';) {
    if (*p == ' ' || *p == '\n') {
      ++p;
      continue;
    }
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(p, 2), nullptr, 16)));
    p += 2;
  }
  return out;
}

template <size_t N>
std::array<uint8_t, N> sequence(uint8_t first, uint8_t step) {
  std::array<uint8_t, N> a{};
  for (size_t i = 0; i < N; ++i) a[i] = static_cast<uint8_t>(first + i * step);
  return a;
}

// The key golden vector 1 is signed with.
const cumem::core::IpcKey kGoldenKey = sequence<16>(0x20, 1);

// The descriptor of golden vector 1: a pool buffer of device memory whose
// size needs more than 32 bits, signed with kGoldenKey.
IpcDescriptor golden1() {
  IpcDescriptor d;
  d.type = IpcType::pool_buffer;
  d.memory_kind = kDevice;
  d.size = 0x0000000100000200ull;
  d.device_uuid = sequence<16>(0x10, 1);
  d.pool_id = sequence<16>(0xa0, 1);
  d.export_data = sequence<64>(0x01, 3);
  d.exporter_pid = 0x12345678;
  d.tag = 0xf0c2c7360401871eull;
  return d;
}

// Its bytes, field by field (tag from a SipHash-2-4 written in Python, CRC
// from zlib.crc32 over bytes 0..155).
const char* const kGolden1 =
    "43 55 4d 45 4d 49 50 43"   // magic "CUMEMIPC"
    " 02 00"                    // version 2
    " 01 00"                    // type 1: pool buffer
    " 02 00 00 00"              // memory kind 2: device
    " 00 02 00 00 01 00 00 00"  // size 0x100000200
    " 00 00 00 00 00 00 00 00"  // offset 0
    " 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f"  // device UUID
    " a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af"  // pool id
    " 01 04 07 0a 0d 10 13 16 19 1c 1f 22 25 28 2b 2e"  // export data
    " 31 34 37 3a 3d 40 43 46 49 4c 4f 52 55 58 5b 5e"
    " 61 64 67 6a 6d 70 73 76 79 7c 7f 82 85 88 8b 8e"
    " 91 94 97 9a 9d a0 a3 a6 a9 ac af b2 b5 b8 bb be"
    " 78 56 34 12"  // exporter pid 0x12345678
    " 1e 87 01 04 36 c7 c2 f0"  // tag: SipHash-2-4 of bytes 0..131 under kGoldenKey
    " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"  // no pool key in a buffer's descriptor
    " f7 12 5e 2b";  // CRC-32

// Golden vector 2: a legacy buffer at an offset inside its allocation.
IpcDescriptor golden2() {
  IpcDescriptor d;
  d.type = IpcType::legacy_buffer;
  d.memory_kind = kDevice;
  d.size = 4096;
  d.offset = 0x30000;
  d.device_uuid = sequence<16>(0xf0, 1);
  d.export_data = sequence<64>(0x40, 1);
  d.exporter_pid = 4242;
  return d;
}

const char* const kGolden2 =
    "43 55 4d 45 4d 49 50 43 02 00"
    " 02 00"                    // type 2: legacy buffer
    " 02 00 00 00"              // device
    " 00 10 00 00 00 00 00 00"  // size 4096
    " 00 00 03 00 00 00 00 00"  // offset 0x30000
    " f0 f1 f2 f3 f4 f5 f6 f7 f8 f9 fa fb fc fd fe ff"  // device UUID
    " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"  // no pool
    " 40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f"  // export data
    " 50 51 52 53 54 55 56 57 58 59 5a 5b 5c 5d 5e 5f"
    " 60 61 62 63 64 65 66 67 68 69 6a 6b 6c 6d 6e 6f"
    " 70 71 72 73 74 75 76 77 78 79 7a 7b 7c 7d 7e 7f"
    " 92 10 00 00"  // pid 4242
    " 00 00 00 00 00 00 00 00"  // no tag: legacy buffers belong to no pool
    " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"  // no key
    " cf 91 7c 78";

// One valid descriptor of each type and memory kind the format allows.
std::vector<IpcDescriptor> valid_descriptors() {
  std::vector<IpcDescriptor> all;
  IpcDescriptor d = golden1();
  all.push_back(d);  // pool buffer, device
  d.memory_kind = kPinned;
  d.size = 1;
  all.push_back(d);  // pool buffer, pinned
  all.push_back(golden2());
  IpcDescriptor h;
  h.type = IpcType::host_shared_buffer;
  h.memory_kind = kHost;
  h.size = 1 << 20;
  h.offset = 3 << 20;
  h.pool_id = sequence<16>(0x55, 7);
  h.exporter_pid = 1;
  h.tag = 0x8000000000000001ull;
  all.push_back(h);
  IpcDescriptor p = h;  // host shared pool: the arena's size, no offset, its key
  p.type = IpcType::pool;
  p.size = 64 << 20;
  p.offset = 0;
  p.exporter_pid = 0x7fffffff;
  p.tag = 0;
  p.pool_key = sequence<16>(0x91, 3);
  all.push_back(p);
  for (MemoryKind kind : {kDevice, kPinned}) {  // exported driver pools: no size
    IpcDescriptor q = p;
    q.memory_kind = kind;
    q.size = 0;
    q.device_uuid = sequence<16>(0x80, 5);
    all.push_back(q);
  }
  return all;
}

// The test's own encoder, written from the layout and validating nothing, so
// the decoder can be fed every invalid field with a correct CRC.
Bytes raw_encode(const IpcDescriptor& d) {
  Bytes b(kIpcDescriptorSize, 0);
  std::memcpy(b.data(), "CUMEMIPC", 8);
  auto put = [&](size_t off, uint64_t v, int width) {
    for (int i = 0; i < width; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  put(8, 2, 2);
  put(10, static_cast<uint16_t>(d.type), 2);
  put(12, wire_kind(d.memory_kind), 4);
  put(16, d.size, 8);
  put(24, d.offset, 8);
  std::memcpy(&b[32], d.device_uuid.data(), 16);
  std::memcpy(&b[48], d.pool_id.data(), 16);
  std::memcpy(&b[64], d.export_data.data(), 64);
  put(128, d.exporter_pid, 4);
  put(132, d.tag, 8);
  std::memcpy(&b[140], d.pool_key.data(), 16);
  put(156, cumem::core::crc32(b.data(), 156), 4);
  return b;
}

void reseal(Bytes& b) {
  const uint32_t crc = cumem::core::crc32(b.data(), 156);
  for (int i = 0; i < 4; ++i) b[156 + i] = static_cast<uint8_t>(crc >> (8 * i));
}

Bytes encoded(const IpcDescriptor& d) {
  uint8_t out[kIpcDescriptorSize];
  encode(d, out);
  return Bytes(out, out + kIpcDescriptorSize);
}

// The message of the Error that `f` throws; fails the test if it throws
// none, or one of another status.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

std::string decode_error(const Bytes& b, size_t length) {
  return error_of([&] { decode(b.data(), length); });
}
std::string decode_error(const Bytes& b) { return decode_error(b, b.size()); }

#define EXPECT_HAS(text, fragment) \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) << "message: " << (text)

void expect_equal(const IpcDescriptor& a, const IpcDescriptor& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.memory_kind, b.memory_kind);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.device_uuid, b.device_uuid);
  EXPECT_EQ(a.pool_id, b.pool_id);
  EXPECT_EQ(a.export_data, b.export_data);
  EXPECT_EQ(a.exporter_pid, b.exporter_pid);
  EXPECT_EQ(a.tag, b.tag);
  EXPECT_EQ(a.pool_key, b.pool_key);
}

TEST(IpcCrc, MatchesTheStandardCheckValue) {
  const char* check = "123456789";
  EXPECT_EQ(cumem::core::crc32(reinterpret_cast<const uint8_t*>(check), 9), 0xCBF43926u);
  EXPECT_EQ(cumem::core::crc32(nullptr, 0), 0u);
}

// SipHash-2-4's reference vectors (key 00..0f, message 00..n-1).
TEST(IpcTag, SipHashMatchesTheReferenceVectors) {
  const cumem::core::IpcKey key = sequence<16>(0, 1);
  const std::array<uint8_t, 64> message = sequence<64>(0, 1);
  EXPECT_EQ(cumem::core::siphash24(key, message.data(), 0), 0x726fdb47dd0e0e31ull);
  EXPECT_EQ(cumem::core::siphash24(key, message.data(), 1), 0x74f839c593dc67fdull);
  EXPECT_EQ(cumem::core::siphash24(key, message.data(), 15), 0xa129ca6149be45e5ull);
  EXPECT_EQ(cumem::core::siphash24(key, message.data(), 63), 0x958a324ceb064572ull);
}

// A descriptor signed with its pool's key is authentic under that key only,
// and any change of a field it covers makes it unauthentic: a peer that
// recomputes the CRC after a change (the CRC is no authentication) cannot
// make a tag without the key.
TEST(IpcTag, SignedDescriptorsAreAuthenticOnlyUnchangedAndUnderTheirKey) {
  IpcDescriptor d = golden1();
  d.tag = 0;
  cumem::core::sign(d, kGoldenKey);
  EXPECT_EQ(d.tag, golden1().tag) << "sign() agrees with the Python SipHash of the golden vector";
  EXPECT_TRUE(cumem::core::authentic(d, kGoldenKey));
  cumem::core::IpcKey other = kGoldenKey;
  other[7] ^= 1;
  EXPECT_FALSE(cumem::core::authentic(d, other));
  const std::vector<std::function<void(IpcDescriptor&)>> changes = {
      [](IpcDescriptor& x) { x.size += 1; },
      [](IpcDescriptor& x) { x.size = UINT64_MAX; },
      [](IpcDescriptor& x) { x.offset = 1; },
      [](IpcDescriptor& x) { x.memory_kind = kPinned; },
      [](IpcDescriptor& x) { x.device_uuid[9] ^= 0x40; },
      [](IpcDescriptor& x) { x.pool_id[0] ^= 1; },
      [](IpcDescriptor& x) { x.export_data[39] ^= 0x2f; },
      [](IpcDescriptor& x) { x.exporter_pid += 1; },
      [](IpcDescriptor& x) { x.tag ^= 1; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    IpcDescriptor x = d;
    changes[i](x);
    EXPECT_FALSE(cumem::core::authentic(x, kGoldenKey)) << "change " << i;
  }
}

TEST(IpcDescriptor, GoldenVectorsEncodeAndDecode) {
  const Bytes g1 = from_hex(kGolden1), g2 = from_hex(kGolden2);
  ASSERT_EQ(g1.size(), kIpcDescriptorSize);
  ASSERT_EQ(g2.size(), kIpcDescriptorSize);
  EXPECT_EQ(encoded(golden1()), g1);
  EXPECT_EQ(encoded(golden2()), g2);
  EXPECT_EQ(raw_encode(golden1()), g1);  // the test's encoder agrees
  expect_equal(decode(g1.data(), g1.size()), golden1());
  expect_equal(decode(g2.data(), g2.size()), golden2());
}

TEST(IpcDescriptor, EveryTypeRoundTrips) {
  std::set<IpcType> types;
  for (const IpcDescriptor& d : valid_descriptors()) {
    const Bytes b = encoded(d);
    EXPECT_EQ(b, raw_encode(d));
    const IpcDescriptor back = decode(b.data(), b.size());
    expect_equal(back, d);
    EXPECT_EQ(encoded(back), b);
    types.insert(d.type);
  }
  EXPECT_EQ(types.size(), 4u);
}

TEST(IpcDescriptor, EverySingleBitFlipIsRejected) {
  for (const IpcDescriptor& d : valid_descriptors()) {
    const Bytes good = encoded(d);
    for (size_t i = 0; i < kIpcDescriptorSize; ++i) {
      for (int bit : {0, 1, 3, 6, 7}) {
        Bytes b = good;
        b[i] ^= static_cast<uint8_t>(1u << bit);
        const std::string m = decode_error(b);
        // The earliest check that can see the flip names it.
        const char* expected = i < 8    ? "not a libcumem IPC descriptor"
                               : i < 10 ? "format version"
                                        : "integrity check failed: the descriptor was corrupted";
        EXPECT_HAS(m, expected) << " byte " << i << " bit " << bit;
      }
    }
  }
}

TEST(IpcDescriptor, CorruptionIsReportedBeforeFieldChecks) {
  Bytes b = encoded(golden1());
  b[10] = 9;  // an unknown type, but the CRC no longer matches
  EXPECT_HAS(decode_error(b), "integrity check failed: the descriptor was corrupted");
  reseal(b);
  EXPECT_HAS(decode_error(b), "type 9 is unknown");
}

TEST(IpcDescriptor, WrongLengthsAreRejected) {
  const Bytes good = encoded(golden1());
  for (size_t n = 0; n < kIpcDescriptorSize; ++n)
    EXPECT_HAS(decode_error(good, n), "truncated: " + std::to_string(n) + " of 160 bytes");
  Bytes longer = good;
  longer.push_back(0);
  EXPECT_HAS(decode_error(longer), "too long: 161 bytes");
  EXPECT_HAS(error_of([] { decode(nullptr, 160); }), "NULL");
}

TEST(IpcDescriptor, ForeignBytesAreNotADescriptor) {
  const Bytes pdf = {'%', 'P', 'D', 'F', '-', '1', '.', '7', 1, 0};
  EXPECT_HAS(decode_error(pdf), "not a libcumem IPC descriptor");
  EXPECT_HAS(decode_error(Bytes{'C', 'U', 'X'}), "not a libcumem IPC descriptor");
  EXPECT_HAS(decode_error(Bytes(160, 0)), "not a libcumem IPC descriptor");
}

TEST(IpcDescriptor, ForeignVersionsAreNamed) {
  for (uint16_t version : {0, 1, 3, 7, 0x100, 0xffff}) {
    Bytes b = encoded(golden1());
    b[8] = static_cast<uint8_t>(version);
    b[9] = static_cast<uint8_t>(version >> 8);
    const std::string expected =
        "format version " + std::to_string(version) + "; this libcumem reads version 2";
    if (version == 1) {
      EXPECT_HAS(decode_error(b), "had no authentication tag");
    }
    EXPECT_HAS(decode_error(b), expected);  // before the CRC is looked at
    reseal(b);
    EXPECT_HAS(decode_error(b), expected);
    // A newer format may have another length; its version is still named.
    Bytes longer = b;
    longer.resize(200, 0);
    EXPECT_HAS(decode_error(longer), expected);
  }
}

struct FieldCase {
  const char* name;
  IpcDescriptor descriptor;
  const char* fragment;
};

// Each rule broken once, from a valid descriptor of the type concerned.
std::vector<FieldCase> field_cases() {
  const std::vector<IpcDescriptor> v = valid_descriptors();
  const IpcDescriptor pool_buffer = v[0], legacy = v[2], host_buffer = v[3], host_pool = v[4],
                      device_pool = v[5];
  std::vector<FieldCase> cases;
  auto add = [&](const char* name, IpcDescriptor d, const std::function<void(IpcDescriptor&)>& f,
                 const char* fragment) {
    f(d);
    cases.push_back({name, d, fragment});
  };
  for (uint16_t t : {0, 5, 0xffff})
    add("unknown type", pool_buffer, [t](IpcDescriptor& d) { d.type = static_cast<IpcType>(t); },
        t == 0 ? "type 0 is unknown" : t == 5 ? "type 5 is unknown" : "type 65535 is unknown");
  add("host pool buffer", pool_buffer, [](IpcDescriptor& d) { d.memory_kind = kHost; },
      "pool buffer cannot hold memory kind 1 (host); it must be device or pinned");
  add("managed pool buffer", pool_buffer, [](IpcDescriptor& d) { d.memory_kind = kManaged; },
      "pool buffer cannot hold memory kind 4 (managed); it must be device or pinned");
  add("pinned legacy", legacy, [](IpcDescriptor& d) { d.memory_kind = kPinned; },
      "legacy buffer cannot hold memory kind 3 (pinned); it must be device");
  add("device host buffer", host_buffer, [](IpcDescriptor& d) { d.memory_kind = kDevice; },
      "host shared buffer cannot hold memory kind 2 (device); it must be host");
  add("managed pool", device_pool, [](IpcDescriptor& d) { d.memory_kind = kManaged; },
      "pool cannot hold memory kind 4 (managed)");
  add("empty pool buffer", pool_buffer, [](IpcDescriptor& d) { d.size = 0; },
      "of a pool buffer has size 0");
  add("empty legacy", legacy, [](IpcDescriptor& d) { d.size = 0; },
      "of a legacy buffer has size 0");
  add("empty host buffer", host_buffer, [](IpcDescriptor& d) { d.size = 0; },
      "of a host shared buffer has size 0");
  add("empty arena", host_pool, [](IpcDescriptor& d) { d.size = 0; },
      "of a host shared pool has arena size 0");
  add("sized device pool", device_pool, [](IpcDescriptor& d) { d.size = 4096; },
      "of a device pool has size 4096; only a host shared pool records a size");
  add("offset pool buffer", pool_buffer, [](IpcDescriptor& d) { d.offset = 16; },
      "of a pool buffer has offset 16; only legacy and host shared buffers have an offset");
  add("offset pool", host_pool, [](IpcDescriptor& d) { d.offset = 1; },
      "of a pool has offset 1; only legacy");
  add("overflow host buffer", host_buffer, [](IpcDescriptor& d) { d.offset = ~0ull - 10; },
      "which overflows 64 bits");
  add("overflow legacy", legacy, [](IpcDescriptor& d) { d.offset = 1ull << 63, d.size = 1ull << 63; },
      "has offset 9223372036854775808 + size 9223372036854775808, which overflows 64 bits");
  add("uuid on host", host_buffer, [](IpcDescriptor& d) { d.device_uuid[15] = 1; },
      "has a device UUID (GPU-00000000-0000-0000-0000-000000000001) for host memory");
  add("uuid on host pool", host_pool, [](IpcDescriptor& d) { d.device_uuid[0] = 1; },
      "for host memory; it must be all zero");
  add("no uuid", pool_buffer, [](IpcDescriptor& d) { d.device_uuid = {}; },
      "has an all-zero device UUID for device memory");
  add("no uuid pinned pool", v[6], [](IpcDescriptor& d) { d.device_uuid = {}; },
      "has an all-zero device UUID for pinned memory");
  add("no pool id", pool_buffer, [](IpcDescriptor& d) { d.pool_id = {}; },
      "of a pool buffer has an all-zero pool id");
  add("no arena id", host_buffer, [](IpcDescriptor& d) { d.pool_id = {}; },
      "of a host shared buffer has an all-zero pool id");
  add("no pool id for pool", device_pool, [](IpcDescriptor& d) { d.pool_id = {}; },
      "of a pool has an all-zero pool id");
  add("legacy pool id", legacy, [](IpcDescriptor& d) { d.pool_id[3] = 9; },
      "a legacy buffer belongs to no pool, so it must be all zero");
  add("export data host", host_buffer, [](IpcDescriptor& d) { d.export_data[63] = 1; },
      "of a host shared buffer has export data");
  add("export data pool", device_pool, [](IpcDescriptor& d) { d.export_data[0] = 1; },
      "of a pool has export data");
  add("pid 0", legacy, [](IpcDescriptor& d) { d.exporter_pid = 0; },
      "has exporter pid 0, which is not a process id");
  add("pid 2^31", pool_buffer, [](IpcDescriptor& d) { d.exporter_pid = 0x80000000u; },
      "has exporter pid 2147483648, which is not a process id");
  add("key in a buffer", pool_buffer, [](IpcDescriptor& d) { d.pool_key[5] = 1; },
      "of a pool buffer carries a pool key; only a pool's own descriptor does");
  add("key in a legacy buffer", legacy, [](IpcDescriptor& d) { d.pool_key[15] = 1; },
      "carries a pool key");
  add("pool without a key", device_pool, [](IpcDescriptor& d) { d.pool_key = {}; },
      "of a pool has an all-zero key");
  add("tag on a pool", host_pool, [](IpcDescriptor& d) { d.tag = 1; },
      "of a pool has an authentication tag; only buffers of pools carry one");
  add("tag on a legacy buffer", legacy, [](IpcDescriptor& d) { d.tag = 7; },
      "of a legacy buffer has an authentication tag");
  return cases;
}

TEST(IpcDescriptor, EveryFieldRuleIsCheckedByDecodeAndEncode) {
  for (const FieldCase& c : field_cases()) {
    SCOPED_TRACE(c.name);
    const Bytes b = raw_encode(c.descriptor);  // correct CRC: the field check must catch it
    EXPECT_HAS(decode_error(b), c.fragment);
    uint8_t out[kIpcDescriptorSize];
    std::memset(out, 0xee, sizeof out);
    EXPECT_HAS(error_of([&] { encode(c.descriptor, out); }), c.fragment);
    for (uint8_t byte : out) ASSERT_EQ(byte, 0xee) << "encode wrote a rejected descriptor";
  }
}

// A kind that the bytes hold but the format does not know (the core's
// MemoryKind cannot name one) is refused by decode; encode refuses a
// MemoryKind value that is none of the kinds.
TEST(IpcDescriptor, UnknownMemoryKindsAreRejected) {
  const std::vector<IpcDescriptor> v = valid_descriptors();
  const struct {
    uint32_t kind;
    IpcDescriptor base;
    const char* fragment;
  } cases[] = {
      {0, v[0], "pool buffer cannot hold memory kind 0 (unknown); it must be device or pinned"},
      {5, v[2], "legacy buffer cannot hold memory kind 5 (unknown); it must be device"},
      {99, v[5], "pool cannot hold memory kind 99 (unknown); it must be host, device or pinned"},
      {0xffffffffu, v[3], "memory kind 4294967295 (unknown)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.kind);
    Bytes b = raw_encode(c.base);
    for (int i = 0; i < 4; ++i) b[12 + i] = static_cast<uint8_t>(c.kind >> (8 * i));
    reseal(b);
    EXPECT_HAS(decode_error(b), c.fragment);
  }
  IpcDescriptor d = v[0];
  d.memory_kind = static_cast<MemoryKind>(7);
  uint8_t out[kIpcDescriptorSize];
  EXPECT_HAS(error_of([&] { encode(d, out); }), "memory kind 0 (unknown)");
}

// The fuzzer's seeds (tests/ipc/make_corpus.py, which builds them with
// Python's struct and zlib): valid_* decode and encode back to the same
// bytes, near_* are rejected. Keeps the seeds meaningful and cross-checks the
// layout against a second encoder.
TEST(IpcDescriptor, SeedCorpusDecodesAsNamed) {
  const char* dir_name = std::getenv("CUMEM_IPC_CORPUS");
  if (dir_name == nullptr) GTEST_SKIP() << "CUMEM_IPC_CORPUS is not set (meson test sets it)";
  DIR* dir = opendir(dir_name);
  ASSERT_NE(dir, nullptr) << dir_name;
  int valid = 0, near = 0;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name[0] == '.') continue;
    std::ifstream file(std::string(dir_name) + "/" + name, std::ios::binary);
    const Bytes b((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(name);
    if (name.rfind("valid_", 0) == 0) {
      ++valid;
      EXPECT_EQ(encoded(decode(b.data(), b.size())), b);
    } else {
      ASSERT_EQ(name.rfind("near_", 0), 0u) << "a seed is named valid_* or near_*";
      ++near;
      EXPECT_NE(decode_error(b), "");
    }
  }
  closedir(dir);
  EXPECT_EQ(valid, 7);
  EXPECT_GE(near, 10);
}

TEST(IpcDescriptor, DescribeNamesWhatMatters) {
  const std::string s = cumem::core::describe(golden1());
  EXPECT_HAS(s, "pool buffer of 4294967808 bytes (4.00 GiB) of device memory");
  EXPECT_HAS(s, "on GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_HAS(s, "pool a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  EXPECT_HAS(s, "exported by pid 305419896");
  const std::vector<IpcDescriptor> v = valid_descriptors();
  EXPECT_HAS(cumem::core::describe(v[2]), "legacy buffer of 4096 bytes (4.00 KiB) of device memory at offset 196608");
  EXPECT_HAS(cumem::core::describe(v[4]), "host shared pool with an arena of 67108864 bytes (64.00 MiB), pool ");
  EXPECT_HAS(cumem::core::describe(v[6]), "pinned pool on GPU-80858a8f-9499-9ea3-a8ad-b2b7bcc1c6cb, pool ");
}

TEST(IpcDescriptor, RandomPoolIdsAreNonZeroAndDistinct) {
  std::set<std::array<uint8_t, 16>> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::array<uint8_t, 16> id = cumem::core::random_pool_id();
    EXPECT_NE(id, (std::array<uint8_t, 16>{}));
    EXPECT_TRUE(seen.insert(id).second) << "a pool id came twice";
  }
}

}  // namespace
