// The struct_size rules of cumem.h, through the public C functions that
// need no GPU: host resource options, resource properties and statistics,
// buffer info of a host buffer, and pool attributes on a host resource
// (their struct_size is checked before the resource says it is no pool).
// Offsets below are written out from cumem.h by hand, on purpose: they do
// not come from the library's own field lists.
#include <cstdint>
#include <cstring>
#include <string>

#include "test_util.hpp"

namespace {

const std::string version = std::to_string(CUMEM_VERSION_MAJOR) + "." +
                            std::to_string(CUMEM_VERSION_MINOR) + "." +
                            std::to_string(CUMEM_VERSION_PATCH);

bool message_has(const std::string& fragment) {
  return std::string(cumem_last_error_message()).find(fragment) != std::string::npos;
}

// A struct with room after it, as a caller built with a newer, larger
// version of the struct has.
template <class T>
struct Newer {
  T known;
  uint64_t extra[2];
};

class StructSizeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &resource));
    CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 100, nullptr, &buffer));
  }
  void TearDown() override {
    cumem_buffer_release(buffer);
    cumem_resource_release(resource);
  }
  cumem_resource_t* resource = nullptr;
  cumem_buffer_t* buffer = nullptr;
};

// --- options: cumem_host_resource_options_t (struct_size 0..3, reserved0
// 4..7, alignment 8..15; sizeof 16) ---------------------------------------

TEST(HostResourceOptions, SizeEndingInsideAFieldIsRejectedNamingIt) {
  cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  o.struct_size = 9;  // ends inside alignment
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "argument 'options'");
  EXPECT_TRUE(message_has("struct_size 9")) << cumem_last_error_message();
  EXPECT_TRUE(message_has("'alignment' (bytes 8..15)")) << cumem_last_error_message();
  EXPECT_EQ(r, nullptr);
  o.struct_size = 6;  // ends inside reserved0
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'reserved0'");
}

TEST(HostResourceOptions, OlderSmallerStructKeepsTheDefaultsPastIt) {
  cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  o.struct_size = 8;  // an older caller without alignment
  o.alignment = 3;    // invalid if it were read
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&o, &r));
  cumem_resource_release(r);
  o.struct_size = 4;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&o, &r));
  cumem_resource_release(r);
  o.struct_size = 16;  // the whole struct: now alignment is read
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "alignment 3");
}

TEST(HostResourceOptions, NewerLargerStructNeedsAZeroTail) {
  Newer<cumem_host_resource_options_t> o{};
  cumem_host_resource_options_init(&o.known);
  o.known.struct_size = 32;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&o.known, &r));  // unknown options all zero
  cumem_resource_release(r);
  r = nullptr;

  o.extra[1] = 1;  // byte 24: an option this library does not know
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o.known, &r), CUMEM_ERROR_NOT_SUPPORTED,
                     "argument 'options'");
  EXPECT_TRUE(message_has("struct_size 32, larger than this library's 16")) << cumem_last_error_message();
  EXPECT_TRUE(message_has("bytes 16..31 are not all zero")) << cumem_last_error_message();
  EXPECT_TRUE(message_has("libcumem (version " + version + ") does not know"))
      << cumem_last_error_message();
  EXPECT_EQ(r, nullptr);

  o.known.struct_size = 24;  // the non-zero byte lies past this caller's struct
  CUMEM_ASSERT_OK(cumem_host_resource_create(&o.known, &r));
  cumem_resource_release(r);
}

TEST(HostResourceOptions, TinyAndAbsurdSizesAreRejected) {
  cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  cumem_resource_t* r = nullptr;
  o.struct_size = 0;  // what a zero-filled (FFI) struct has
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "struct_size 0");
  o.struct_size = 3;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "struct_size 3");
  // Only 16 bytes exist: an absurd size must be refused before any is read.
  o.struct_size = 100000;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "above 4096");
  EXPECT_EQ(r, nullptr);
}

// --- out: cumem_resource_properties_t (4-byte fields: struct_size, kind,
// device_accessible, host_accessible, device_id, ...; sizeof 32) ----------

TEST_F(StructSizeApi, PropertiesWriteOnlyTheCoveredFields) {
  cumem_resource_properties_t p;
  std::memset(&p, 0xEE, sizeof p);
  p.struct_size = 12;  // struct_size, kind, device_accessible
  CUMEM_ASSERT_OK(cumem_resource_get_properties(resource, &p));
  EXPECT_EQ(p.struct_size, 12u);
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_HOST);
  EXPECT_EQ(p.device_accessible, CUMEM_FALSE);
  EXPECT_EQ(p.host_accessible, 0xEEEEEEEEu) << "past struct_size: must stay untouched";
}

TEST_F(StructSizeApi, PropertiesSizeInsideAFieldIsRejectedWritingNothing) {
  cumem_resource_properties_t p;
  std::memset(&p, 0xEE, sizeof p);
  p.struct_size = 6;  // ends inside kind (4..7)
  CUMEM_EXPECT_ERROR(cumem_resource_get_properties(resource, &p), CUMEM_ERROR_INVALID_ARGUMENT,
                     "argument 'props'");
  EXPECT_TRUE(message_has("struct_size 6")) << cumem_last_error_message();
  EXPECT_TRUE(message_has("'kind'")) << cumem_last_error_message();
  EXPECT_EQ(p.struct_size, 6u);
  uint32_t kind = 0;  // read as bytes: 0xEEEEEEEE is no cumem_resource_kind_t value
  std::memcpy(&kind, &p.kind, sizeof kind);
  EXPECT_EQ(kind, 0xEEEEEEEEu);
}

TEST_F(StructSizeApi, NewerLargerPropertiesGetTheLibrarySizeBack) {
  Newer<cumem_resource_properties_t> p;
  std::memset(&p, 0xEE, sizeof p);
  p.known.struct_size = sizeof p;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(resource, &p.known));
  EXPECT_EQ(p.known.struct_size, sizeof(cumem_resource_properties_t))
      << "the caller must learn which fields were written";
  EXPECT_EQ(p.known.kind, CUMEM_RESOURCE_HOST);
  EXPECT_EQ(p.known.ipc_enabled, CUMEM_FALSE);
  EXPECT_EQ(p.extra[0], 0xEEEEEEEEEEEEEEEEu) << "past the library's struct: untouched";
  EXPECT_EQ(p.extra[1], 0xEEEEEEEEEEEEEEEEu);
}

TEST_F(StructSizeApi, AbsurdOutSizeIsRejected) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  p.struct_size = 5000;
  CUMEM_EXPECT_ERROR(cumem_resource_get_properties(resource, &p), CUMEM_ERROR_INVALID_ARGUMENT,
                     "above 4096");
  p.struct_size = 2;
  CUMEM_EXPECT_ERROR(cumem_resource_get_properties(resource, &p), CUMEM_ERROR_INVALID_ARGUMENT,
                     "struct_size 2");
}

// --- out: cumem_resource_statistics_t (struct_size 0..3, reserved0 4..7,
// bytes_in_use 8..15, peak_bytes_in_use 16..23, ...; sizeof 40) -----------

TEST_F(StructSizeApi, StatisticsSizeInsideA64BitFieldIsRejected) {
  cumem_resource_statistics_t s;
  std::memset(&s, 0xEE, sizeof s);
  s.struct_size = 12;
  CUMEM_EXPECT_ERROR(cumem_resource_get_statistics(resource, &s), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'bytes_in_use' (bytes 8..15)");
  EXPECT_EQ(s.bytes_in_use, 0xEEEEEEEEEEEEEEEEu);

  s.struct_size = 16;
  CUMEM_ASSERT_OK(cumem_resource_get_statistics(resource, &s));
  EXPECT_EQ(s.struct_size, 16u);
  EXPECT_EQ(s.bytes_in_use, 100u);
  EXPECT_EQ(s.peak_bytes_in_use, 0xEEEEEEEEEEEEEEEEu);
}

// --- out: cumem_buffer_info_t (..., is_slice 36..39, owns_memory 40..43,
// reserved0 44..47; sizeof 48, no padding) ------------------------------

TEST_F(StructSizeApi, BufferInfoWithoutTheReservedFieldIsFine) {
  unsigned char bytes[sizeof(cumem_buffer_info_t)];
  std::memset(bytes, 0xEE, sizeof bytes);
  auto* info = reinterpret_cast<cumem_buffer_info_t*>(bytes);
  info->struct_size = 44;  // ends at owns_memory's end, before reserved0
  CUMEM_ASSERT_OK(cumem_buffer_get_info(buffer, info));
  EXPECT_EQ(info->struct_size, 44u);
  EXPECT_EQ(info->size, 100u);
  EXPECT_EQ(info->owns_memory, CUMEM_TRUE);
  for (size_t i = 44; i < sizeof bytes; ++i)
    EXPECT_EQ(bytes[i], 0xEE) << "byte " << i << " lies past the fields written";

  info->struct_size = 46;  // ends inside reserved0 (there is no tail padding)
  CUMEM_EXPECT_ERROR(cumem_buffer_get_info(buffer, info), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'reserved0'");
  info->struct_size = sizeof(cumem_buffer_info_t);
  CUMEM_ASSERT_OK(cumem_buffer_get_info(buffer, info));
  EXPECT_EQ(info->reserved0, 0u) << "out structs' reserved fields are written as 0";
}

TEST_F(StructSizeApi, BufferInfoCutsAreRejectedAndLargerGetsLibrarySize) {
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  info.struct_size = 12;  // ends inside ptr (8..15)
  CUMEM_EXPECT_ERROR(cumem_buffer_get_info(buffer, &info), CUMEM_ERROR_INVALID_ARGUMENT,
                     "argument 'info' (cumem_buffer_info_t) has struct_size 12");
  EXPECT_TRUE(message_has("'ptr'")) << cumem_last_error_message();
  info.struct_size = 42;  // ends inside owns_memory (40..43)
  CUMEM_EXPECT_ERROR(cumem_buffer_get_info(buffer, &info), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'owns_memory'");

  Newer<cumem_buffer_info_t> newer;
  std::memset(&newer, 0xEE, sizeof newer);
  newer.known.struct_size = sizeof newer;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(buffer, &newer.known));
  EXPECT_EQ(newer.known.struct_size, sizeof(cumem_buffer_info_t));
  EXPECT_EQ(newer.extra[0], 0xEEEEEEEEEEEEEEEEu);
}

// --- pool attributes (in for _set_, out for _get_) on a host resource:
// struct_size is checked first, then the resource says it is no pool ------

TEST_F(StructSizeApi, PoolAttributesFollowTheRulesBeforeThePoolCheck) {
  cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
  a.struct_size = 10;  // ends inside reuse_allow_opportunistic (8..11)
  CUMEM_EXPECT_ERROR(cumem_resource_pool_set_attributes(resource, &a),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'reuse_allow_opportunistic'");
  CUMEM_EXPECT_ERROR(cumem_resource_pool_get_attributes(resource, &a),
                     CUMEM_ERROR_INVALID_ARGUMENT, "argument 'attributes'");

  Newer<cumem_pool_attributes_t> newer{};
  newer.known = CUMEM_POOL_ATTRIBUTES_INIT;
  newer.known.struct_size = sizeof newer;
  newer.extra[0] = 7;
  CUMEM_EXPECT_ERROR(cumem_resource_pool_set_attributes(resource, &newer.known),
                     CUMEM_ERROR_NOT_SUPPORTED, "bytes 56..71 are not all zero");
  newer.extra[0] = 0;
  CUMEM_EXPECT_ERROR(cumem_resource_pool_set_attributes(resource, &newer.known),
                     CUMEM_ERROR_NOT_SUPPORTED, "pool");  // now the pool check speaks
  EXPECT_FALSE(message_has("struct_size")) << cumem_last_error_message();
}

}  // namespace
