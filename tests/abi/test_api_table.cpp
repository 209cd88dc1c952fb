// cumem_get_api: every member of the table is the function of its name,
// the header fields say what the table is, and versions this library does
// not have give NULL with a message.
#include <cstddef>
#include <cstring>
#include <string>

#include "cumem/cumem_api.h"
#include "test_util.hpp"

namespace {

TEST(ApiTable, EveryMemberIsTheFunctionOfItsName) {
  const cumem_api_t* t = cumem_get_api(CUMEM_API_TABLE_VERSION);
  ASSERT_NE(t, nullptr) << cumem_last_error_message();
  EXPECT_EQ(t->version, static_cast<uint32_t>(CUMEM_API_TABLE_VERSION));
  EXPECT_EQ(t->size, sizeof(cumem_api_t));
  int checked = 0;
#define CUMEM_API_ENTRY(name)                                                           \
  EXPECT_EQ(reinterpret_cast<const void*>(t->name), reinterpret_cast<const void*>(&name)) \
      << #name;                                                                         \
  ++checked;
#include "../../capi/api_table.inc"
#undef CUMEM_API_ENTRY
  EXPECT_EQ(checked, static_cast<int>((sizeof(cumem_api_t) - 8) / sizeof(void*)))
      << "every member is checked";
  EXPECT_GE(checked, 149) << "version 1 has 149 functions";
  EXPECT_EQ(cumem_get_api(1), t) << "every version is the same table";
}

TEST(ApiTable, CallsThroughTheTableWork) {
  const cumem_api_t* t = cumem_get_api(1);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->cumem_version(), cumem_version());
  EXPECT_STREQ(t->cumem_status_string(CUMEM_ERROR_NO_DRIVER), "CUMEM_ERROR_NO_DRIVER");
  cumem_resource_t* host = nullptr;
  ASSERT_EQ(t->cumem_host_resource_create(nullptr, &host), CUMEM_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(t->cumem_resource_allocate_raw(host, 64, nullptr, &p), CUMEM_SUCCESS);
  std::memset(p, 1, 64);
  EXPECT_EQ(t->cumem_resource_deallocate_raw(host, p, 64, nullptr), CUMEM_SUCCESS);
  EXPECT_EQ(t->cumem_resource_release(host), CUMEM_SUCCESS);
}

TEST(ApiTable, AVersionThisLibraryDoesNotHaveIsNull) {
  for (uint32_t v : {0u, static_cast<uint32_t>(CUMEM_API_TABLE_VERSION) + 1, 0xFFFFFFFFu}) {
    EXPECT_EQ(cumem_get_api(v), nullptr) << v;
    const std::string m = cumem_last_error_message();
    EXPECT_NE(m.find("table version " + std::to_string(v)), std::string::npos) << m;
    EXPECT_NE(m.find("it has 1 to " + std::to_string(CUMEM_API_TABLE_VERSION)), std::string::npos)
        << m;
  }
}

}  // namespace
