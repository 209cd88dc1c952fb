// The virtual IPC descriptor (src/ipc/virtual_descriptor.cpp), host only:
// its byte layout, round trips, and the refusal of every corrupted or
// invalid field by name, each checked as if the CRC were absent (the test
// recomputes the CRC after each change, as a forger would).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "error.hpp"
#include "ipc/bytes.hpp"
#include "ipc/descriptor.hpp"
#include "ipc/virtual_descriptor.hpp"

namespace {

using cumem::core::decode_virtual;
using cumem::core::encode_virtual;
using cumem::core::Error;
using cumem::core::crc32;
using cumem::core::Status;
using cumem::core::VirtualDescriptor;

VirtualDescriptor sample() {
  VirtualDescriptor d;
  d.size = 5 * 65536 + 7;
  d.location_type = 1;
  d.location_id = 0;
  for (int i = 0; i < 16; ++i) d.device_uuid[i] = static_cast<uint8_t>(0xA0 + i);
  d.exporter_pid = 4242;
  d.handle_types = 1;
  d.granularity = 65536;
  d.chunks = {{0, 2 * 65536}, {2 * 65536, 2 * 65536}, {4 * 65536, 2 * 65536}};
  return d;
}

void put(std::vector<uint8_t>& b, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void reseal(std::vector<uint8_t>& b) {
  const size_t at = b.size() - 4;
  put(b, at, crc32(b.data(), at), 4);
}

std::string refusal(const std::vector<uint8_t>& b) {
  try {
    decode_virtual(b.data(), b.size());
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument) << e.what();
    return e.what();
  }
  return "";
}

TEST(VirtualDescriptor, LayoutIsFixed) {
  const std::vector<uint8_t> b = encode_virtual(sample());
  ASSERT_EQ(b.size(), 96u + 3 * 16 + 4);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "CUMEMVMM");
  EXPECT_EQ(b[8], 1);   // version
  EXPECT_EQ(b[12], 3);  // chunks
  EXPECT_EQ(b[16], 7);  // size, little-endian
  EXPECT_EQ(b[18], 5);
  EXPECT_EQ(b[26], 6);  // mapped: 6 x 65536
  EXPECT_EQ(b[32], 1);  // device
  EXPECT_EQ(b[40], 0xA0);
  EXPECT_EQ(b[56], 4242 & 0xFF);
  EXPECT_EQ(b[60], 1);
  EXPECT_EQ(b[66], 1);  // granularity 65536 = 0x10000
  EXPECT_EQ(b[96 + 16 + 10], 2);  // chunk 1 offset 0x20000
  const uint32_t crc = b[b.size() - 4] | b[b.size() - 3] << 8 | b[b.size() - 2] << 16 |
                       uint32_t(b[b.size() - 1]) << 24;
  EXPECT_EQ(crc, crc32(b.data(), b.size() - 4));
}

TEST(VirtualDescriptor, RoundTrips) {
  const VirtualDescriptor d = sample();
  const VirtualDescriptor back = [&] {
    const std::vector<uint8_t> b = encode_virtual(d);
    return decode_virtual(b.data(), b.size());
  }();
  EXPECT_EQ(back.size, d.size);
  EXPECT_EQ(back.mapped(), 6u * 65536);
  EXPECT_EQ(back.device_uuid, d.device_uuid);
  EXPECT_EQ(back.exporter_pid, d.exporter_pid);
  ASSERT_EQ(back.chunks.size(), 3u);
  EXPECT_EQ(back.chunks[2].offset, 4u * 65536);
  VirtualDescriptor host = d;
  host.location_type = 3;
  host.location_id = 1;
  host.device_uuid = {};
  const std::vector<uint8_t> b = encode_virtual(host);
  EXPECT_EQ(decode_virtual(b.data(), b.size()).location_id, 1);
  EXPECT_NE(describe(host).find("host NUMA memory (node 1)"), std::string::npos) << describe(host);
}

// A block of an expandable cache begins inside its first page: the offset
// travels, and offset + size must fit the chunks.
TEST(VirtualDescriptor, AnOffsetIntoTheChunksRoundTrips) {
  VirtualDescriptor d = sample();
  d.offset = 4096;
  d.size = d.mapped() - 4096;
  const std::vector<uint8_t> b = encode_virtual(d);
  const VirtualDescriptor back = decode_virtual(b.data(), b.size());
  EXPECT_EQ(back.offset, 4096u);
  EXPECT_EQ(back.size, d.size);
  EXPECT_NE(describe(back).find("at offset 4096"), std::string::npos) << describe(back);
  d.size += 1;
  try {
    encode_virtual(d);
    ADD_FAILURE() << "an offset and size past the chunks were encoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ends past its chunks'"), std::string::npos) << e.what();
  }
}

TEST(VirtualDescriptor, EveryCorruptionIsRefusedByName) {
  const std::vector<uint8_t> good = encode_virtual(sample());
  struct Case {
    const char* what;
    void (*change)(std::vector<uint8_t>&);
    bool reseal;
    const char* says;
  };
  const Case cases[] = {
      {"magic", [](std::vector<uint8_t>& b) { b[0] = 'X'; }, true, "does not begin with \"CUMEMVMM\""},
      {"version", [](std::vector<uint8_t>& b) { b[8] = 2; }, true, "format version 2"},
      {"crc", [](std::vector<uint8_t>& b) { b[20] ^= 1; }, false, "integrity check failed"},
      {"reserved0", [](std::vector<uint8_t>& b) { b[10] = 1; }, true, "reserved bytes"},
      {"reserved1", [](std::vector<uint8_t>& b) { b[80] = 1; }, true, "reserved bytes"},
      {"count 0", [](std::vector<uint8_t>& b) { put(b, 12, 0, 4); }, true, "announces 0 chunks"},
      {"count huge", [](std::vector<uint8_t>& b) { put(b, 12, 1u << 30, 4); }, true, "announces"},
      {"count 4", [](std::vector<uint8_t>& b) { put(b, 12, 4, 4); }, true, "truncated"},
      {"count 2", [](std::vector<uint8_t>& b) { put(b, 12, 2, 4); }, true, "too long"},
      {"size 0", [](std::vector<uint8_t>& b) { put(b, 16, 0, 8); }, true, "has size 0"},
      {"size past the chunks", [](std::vector<uint8_t>& b) { put(b, 16, 6 * 65536 + 1, 8); }, true,
       "ends past its chunks'"},
      {"offset past the chunks", [](std::vector<uint8_t>& b) { put(b, 72, 6 * 65536, 8); }, true,
       "at offset 393216, which ends past"},
      {"offset and size past the chunks",
       [](std::vector<uint8_t>& b) { put(b, 72, 4096, 8); put(b, 16, 6 * 65536 - 4095, 8); }, true,
       "at offset 4096, which ends past"},
      {"mapped", [](std::vector<uint8_t>& b) { put(b, 24, 7 * 65536, 8); }, true, "add up to"},
      {"location type", [](std::vector<uint8_t>& b) { put(b, 32, 9, 4); }, true, "location type 9"},
      {"device id", [](std::vector<uint8_t>& b) { put(b, 36, 0xFFFFFFFF, 4); }, true, "location id -1"},
      {"uuid zero", [](std::vector<uint8_t>& b) { std::memset(&b[40], 0, 16); }, true, "all-zero device UUID"},
      {"host with uuid", [](std::vector<uint8_t>& b) { put(b, 32, 2, 4); }, true, "has a device UUID"},
      {"pid", [](std::vector<uint8_t>& b) { put(b, 56, 0, 4); }, true, "exporter pid 0"},
      {"handle types", [](std::vector<uint8_t>& b) { put(b, 60, 8, 4); }, true, "must include the POSIX fd"},
      {"granularity", [](std::vector<uint8_t>& b) { put(b, 64, 65537, 8); }, true, "granularity 65537"},
      {"chunk gap", [](std::vector<uint8_t>& b) { put(b, 96 + 16, 3 * 65536, 8); }, true,
       "chunk 1 starts at offset"},
      {"chunk size", [](std::vector<uint8_t>& b) { put(b, 96 + 8, 100, 8); }, true,
       "chunk 0 has size 100"},
      {"chunk overflow", [](std::vector<uint8_t>& b) { put(b, 96 + 40, ~uint64_t{0} - 65535, 8); }, true,
       "chunk 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> b = good;
    c.change(b);
    if (c.reseal) reseal(b);
    const std::string why = refusal(b);
    EXPECT_NE(why.find(c.says), std::string::npos) << why;
  }
  EXPECT_NE(refusal({}).find("CUMEMVMM"), std::string::npos);
  std::vector<uint8_t> cut(good.begin(), good.begin() + 50);
  EXPECT_NE(refusal(cut).find("truncated"), std::string::npos);
  // The exporter cannot write an invalid one either.
  VirtualDescriptor bad = sample();
  bad.chunks.clear();
  EXPECT_THROW(encode_virtual(bad), Error);
}

// Random bytes changed in a valid descriptor, the CRC recomputed: decoding
// either refuses (invalid_argument) or gives a descriptor whose rules hold.
TEST(VirtualDescriptor, RandomForgeriesNeverPassTheRules) {
  const std::vector<uint8_t> good = encode_virtual(sample());
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> b = good;
    const int changes = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < changes; ++k) b[rng() % (b.size() - 4)] = static_cast<uint8_t>(rng());
    if (rng() % 8 == 0) b.resize(rng() % (b.size() + 40));
    if (b.size() >= 4 && rng() % 4 != 0) reseal(b);
    try {
      const VirtualDescriptor d = decode_virtual(b.data(), b.size());
      uint64_t at = 0;
      for (const auto& c : d.chunks) {
        ASSERT_EQ(c.offset, at);
        ASSERT_EQ(c.size % d.granularity, 0u);
        at += c.size;
      }
      ASSERT_LE(d.size, at);
    } catch (const Error& e) {
      ASSERT_EQ(e.status(), Status::invalid_argument) << e.what();
    }
  }
}

}  // namespace
