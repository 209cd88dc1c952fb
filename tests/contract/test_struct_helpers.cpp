// The struct_size helpers of capi/capi.hpp (read_options, check_out_struct,
// write_out_struct), for every options and out struct of cumem.h.
// The first test's cases are written out from cumem.h by hand; the typed
// tests walk every struct_size of every struct.
#include "../../capi/capi.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using cumem::capi::Field;
using cumem::capi::layout_of;
using cumem::capi::StructLayout;
using cumem::core::Error;
using cumem::core::Status;

namespace {

// The outcome of a helper call: "" for success, else the status and message.
struct Outcome {
  bool ok = true;
  Status status = Status::success;
  std::string message;
};

// A caller's struct in a zeroed buffer with room after it (for sizes past
// ours), aligned as T is.
template <class T>
struct Caller {
  alignas(T) unsigned char bytes[sizeof(T) + 64] = {};
  T* get() { return reinterpret_cast<T*>(bytes); }
  void set_size(uint32_t size) { std::memcpy(bytes, &size, sizeof size); }
};

template <class T>
Outcome read_with_size(uint32_t size) {
  Caller<T> c;
  c.set_size(size);
  try {
    cumem::capi::read_options(c.get(), T{}, "options");
    return {};
  } catch (const Error& e) {
    return {false, e.status(), e.what()};
  }
}

template <class T>
Outcome check_out_with_size(uint32_t size) {
  Caller<T> c;
  c.set_size(size);
  try {
    cumem::capi::check_out_struct(c.get(), "out");
    return {};
  } catch (const Error& e) {
    return {false, e.status(), e.what()};
  }
}

struct Case {
  const char* type;
  uint32_t size;
  const char* cut;  // the field the size ends inside, or nullptr: accepted
  Outcome (*in)(uint32_t);
  Outcome (*out)(uint32_t);
};
#define CUMEM_CASE(T, size, cut) \
  Case { #T, size, cut, &read_with_size<T>, &check_out_with_size<T> }

// Offsets from cumem.h: sizes that end in a field or at its end (no struct
// has padding).
const Case hand_cases[] = {
    CUMEM_CASE(cumem_stream_options_t, 5, "blocking"),
    CUMEM_CASE(cumem_stream_options_t, 8, nullptr),
    CUMEM_CASE(cumem_stream_options_t, 15, "priority_mode"),
    CUMEM_CASE(cumem_stream_options_t, 16, nullptr),
    CUMEM_CASE(cumem_event_options_t, 9, "blocking_sync"),
    CUMEM_CASE(cumem_event_options_t, 12, nullptr),
    CUMEM_CASE(cumem_host_resource_options_t, 8, nullptr),
    CUMEM_CASE(cumem_host_resource_options_t, 9, "alignment"),
    CUMEM_CASE(cumem_pool_options_t, 12, "release_threshold"),
    CUMEM_CASE(cumem_pool_options_t, 28, nullptr),
    CUMEM_CASE(cumem_pool_options_t, 30, "release_all_unused"),
    CUMEM_CASE(cumem_pool_options_t, 38, "host_numa_id"),
    CUMEM_CASE(cumem_pool_options_t, 40, nullptr),
    CUMEM_CASE(cumem_managed_resource_options_t, 8, "preferred_location"),
    CUMEM_CASE(cumem_managed_resource_options_t, 12, nullptr),
    CUMEM_CASE(cumem_program_options_t, 27, "name_expressions"),
    CUMEM_CASE(cumem_program_options_t, 32, nullptr),
    CUMEM_CASE(cumem_program_options_t, 42, "num_options"),
    CUMEM_CASE(cumem_program_options_t, 46, "num_name_expressions"),
    CUMEM_CASE(cumem_program_options_t, 48, nullptr),
    CUMEM_CASE(cumem_launch_config_t, 10, "grid"),
    CUMEM_CASE(cumem_launch_config_t, 28, nullptr),
    CUMEM_CASE(cumem_launch_config_t, 30, "shared_memory_bytes"),
    CUMEM_CASE(cumem_launch_config_t, 43, "cluster"),
    CUMEM_CASE(cumem_pool_attributes_t, 20, "release_threshold"),
    CUMEM_CASE(cumem_pool_attributes_t, 24, nullptr),
    CUMEM_CASE(cumem_device_properties_t, 100, "name"),
    CUMEM_CASE(cumem_device_properties_t, 270, "uuid"),  // uuid is 264..279
    CUMEM_CASE(cumem_device_properties_t, 347, "cluster_launch"),
    CUMEM_CASE(cumem_device_properties_t, 348, nullptr),
    CUMEM_CASE(cumem_device_properties_t, 351, "reserved0"),  // no tail padding
    CUMEM_CASE(cumem_resource_properties_t, 6, "kind"),
    CUMEM_CASE(cumem_resource_properties_t, 20, nullptr),
    CUMEM_CASE(cumem_resource_statistics_t, 8, nullptr),
    CUMEM_CASE(cumem_resource_statistics_t, 12, "bytes_in_use"),
    CUMEM_CASE(cumem_buffer_info_t, 12, "ptr"),
    CUMEM_CASE(cumem_buffer_info_t, 42, "owns_memory"),
    CUMEM_CASE(cumem_buffer_info_t, 44, nullptr),
    CUMEM_CASE(cumem_buffer_info_t, 46, "reserved0"),  // no tail padding
    CUMEM_CASE(cumem_kernel_attributes_t, 35, "max_dynamic_shared_size_bytes"),
    CUMEM_CASE(cumem_kernel_attributes_t, 32, nullptr),
};

TEST(StructSizeHelpers, HandWrittenCasesFromTheHeader) {
  for (const Case& c : hand_cases) {
    SCOPED_TRACE(std::string(c.type) + " struct_size " + std::to_string(c.size));
    for (const Outcome& o : {c.in(c.size), c.out(c.size)}) {
      if (!c.cut) {
        EXPECT_TRUE(o.ok) << o.message;
        continue;
      }
      ASSERT_FALSE(o.ok);
      EXPECT_EQ(o.status, Status::invalid_argument);
      EXPECT_NE(o.message.find(std::string("(") + c.type + ") has struct_size " +
                               std::to_string(c.size) + ", which ends inside its field '" +
                               c.cut + "'"),
                std::string::npos)
          << o.message;
    }
  }
}

// The field a size ends inside of, from the layout, or nullptr.
const Field* field_cut_by(const StructLayout& l, size_t size) {
  for (size_t i = 0; i < l.count; ++i)
    if (l.fields[i].offset < size && size < l.fields[i].end()) return &l.fields[i];
  return nullptr;
}

// The end of the last field lying wholly within `size`.
size_t covered_end(const StructLayout& l, size_t size) {
  size_t end = 0;
  for (size_t i = 0; i < l.count; ++i)
    if (l.fields[i].end() <= size) end = l.fields[i].end();
  return end;
}

template <class T>
class EveryStruct : public ::testing::Test {};
using AllStructs =
    ::testing::Types<cumem_stream_options_t, cumem_event_options_t, cumem_host_resource_options_t,
                     cumem_pool_options_t, cumem_managed_resource_options_t,
                     cumem_program_options_t, cumem_launch_config_t, cumem_pool_attributes_t,
                     cumem_device_properties_t, cumem_resource_properties_t,
                     cumem_resource_statistics_t, cumem_buffer_info_t,
                     cumem_kernel_attributes_t>;
TYPED_TEST_SUITE(EveryStruct, AllStructs);

TYPED_TEST(EveryStruct, EverySizeUpToTheStructIsCheckedByItsFields) {
  using T = TypeParam;
  const StructLayout l = layout_of<T>();
  for (uint32_t size = 0; size <= sizeof(T); ++size) {
    SCOPED_TRACE(std::string(l.type_name) + " struct_size " + std::to_string(size));
    const Field* cut = field_cut_by(l, size);
    for (const Outcome& o : {read_with_size<T>(size), check_out_with_size<T>(size)}) {
      if (size >= 4 && !cut) {
        EXPECT_TRUE(o.ok) << o.message;
        continue;
      }
      ASSERT_FALSE(o.ok);
      EXPECT_EQ(o.status, Status::invalid_argument);
      EXPECT_NE(o.message.find("struct_size " + std::to_string(size)), std::string::npos)
          << o.message;
      if (size >= 4) {
        EXPECT_NE(o.message.find(std::string("field '") + cut->name + "'"), std::string::npos)
            << o.message;
      }
    }
  }
}

TYPED_TEST(EveryStruct, ReadOptionsTakesCoveredFieldsAndKeepsDefaultsForTheRest) {
  using T = TypeParam;
  const StructLayout l = layout_of<T>();
  T defaults;
  std::memset(&defaults, 0xA5, sizeof defaults);
  for (uint32_t size = 4; size <= sizeof(T); ++size) {
    if (field_cut_by(l, size)) continue;
    SCOPED_TRACE(std::string(l.type_name) + " struct_size " + std::to_string(size));
    Caller<T> c;
    std::memset(c.bytes, 0x5A, sizeof(T));
    c.set_size(size);
    const T got = cumem::capi::read_options(c.get(), defaults, "options");
    EXPECT_EQ(got.struct_size, sizeof(T));
    const auto* bytes = reinterpret_cast<const unsigned char*>(&got);
    for (size_t i = 1; i < l.count; ++i) {
      const Field& f = l.fields[i];
      const unsigned char want = f.end() <= size ? 0x5A : 0xA5;
      for (size_t b = f.offset; b < f.end(); ++b)
        ASSERT_EQ(bytes[b], want) << "field " << f.name << " byte " << b;
    }
  }
}

TYPED_TEST(EveryStruct, LargerOptionsAreReadOnlyWithAZeroTail) {
  using T = TypeParam;
  const uint32_t larger = sizeof(T) + 24;
  Caller<T> c;
  c.set_size(larger);
  EXPECT_NO_THROW(cumem::capi::read_options(c.get(), T{}, "options"));

  c.bytes[sizeof(T) + 9] = 0x01;
  try {
    cumem::capi::read_options(c.get(), T{}, "options");
    ADD_FAILURE() << "a non-zero byte past sizeof must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::not_supported);
    const std::string want = "struct_size " + std::to_string(larger) + ", larger than this library's " +
                             std::to_string(sizeof(T)) + ", and its bytes " +
                             std::to_string(sizeof(T)) + ".." + std::to_string(larger - 1) +
                             " are not all zero (byte " + std::to_string(sizeof(T) + 9) + " is 1)";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("libcumem (version "), std::string::npos) << e.what();
  }
  // Out structs may be larger whatever their tail holds: it is the caller's.
  EXPECT_NO_THROW(cumem::capi::check_out_struct(c.get(), "out"));

  // Past 4096 nothing is read (the buffer is far smaller): INVALID_ARGUMENT.
  for (const Outcome& o : {read_with_size<T>(4097), check_out_with_size<T>(4097)}) {
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.status, Status::invalid_argument);
    EXPECT_NE(o.message.find("struct_size 4097, above 4096"), std::string::npos) << o.message;
  }
}

TYPED_TEST(EveryStruct, WriteOutStructWritesWholeCoveredFieldsAndTheSizeItFilled) {
  using T = TypeParam;
  const StructLayout l = layout_of<T>();
  T value;
  std::memset(&value, 0x11, sizeof value);
  for (uint32_t size = 4; size <= sizeof(T) + 64; ++size) {
    if (field_cut_by(l, size)) continue;
    SCOPED_TRACE(std::string(l.type_name) + " struct_size " + std::to_string(size));
    Caller<T> c;
    std::memset(c.bytes, 0xEE, sizeof c.bytes);
    c.set_size(size);
    ASSERT_NO_THROW(cumem::capi::check_out_struct(c.get(), "out"));
    cumem::capi::write_out_struct(c.get(), value);
    EXPECT_EQ(c.get()->struct_size, size < sizeof(T) ? size : sizeof(T));
    const size_t end = covered_end(l, size);
    for (size_t i = 1; i < l.count; ++i) {
      const Field& f = l.fields[i];
      if (f.end() > end) break;
      for (size_t b = f.offset; b < f.end(); ++b)
        ASSERT_EQ(c.bytes[b], 0x11) << "field " << f.name << " byte " << b << " not written";
    }
    for (size_t b = end; b < sizeof c.bytes; ++b)
      ASSERT_EQ(c.bytes[b], 0xEE) << "byte " << b << " lies past the fields covered";
  }
}

}  // namespace
