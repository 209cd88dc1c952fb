// Versions, status names and the thread-local last error: no GPU needed.
#include <cstring>
#include <string>
#include <thread>

#include "test_util.hpp"

TEST(Version, MacrosMatchTheLibrary) {
  EXPECT_EQ(cumem_version(), static_cast<uint32_t>(CUMEM_VERSION_NUMBER));
  EXPECT_EQ(CUMEM_VERSION_NUMBER,
            CUMEM_MAKE_VERSION(CUMEM_VERSION_MAJOR, CUMEM_VERSION_MINOR, CUMEM_VERSION_PATCH));
}

TEST(StatusString, NamesEveryCode) {
  const struct {
    cumem_status_t status;
    const char* name;
  } cases[] = {
      {CUMEM_SUCCESS, "CUMEM_SUCCESS"},
      {CUMEM_ERROR_INVALID_ARGUMENT, "CUMEM_ERROR_INVALID_ARGUMENT"},
      {CUMEM_ERROR_OUT_OF_MEMORY, "CUMEM_ERROR_OUT_OF_MEMORY"},
      {CUMEM_ERROR_NO_DRIVER, "CUMEM_ERROR_NO_DRIVER"},
      {CUMEM_ERROR_NO_DEVICE, "CUMEM_ERROR_NO_DEVICE"},
      {CUMEM_ERROR_NOT_SUPPORTED, "CUMEM_ERROR_NOT_SUPPORTED"},
      {CUMEM_ERROR_BUFFER_CLOSED, "CUMEM_ERROR_BUFFER_CLOSED"},
      {CUMEM_ERROR_SIZE_MISMATCH, "CUMEM_ERROR_SIZE_MISMATCH"},
      {CUMEM_ERROR_OUT_OF_RANGE, "CUMEM_ERROR_OUT_OF_RANGE"},
      {CUMEM_ERROR_WRONG_DEVICE, "CUMEM_ERROR_WRONG_DEVICE"},
      {CUMEM_ERROR_INVALID_STATE, "CUMEM_ERROR_INVALID_STATE"},
      {CUMEM_ERROR_DRIVER, "CUMEM_ERROR_DRIVER"},
      {CUMEM_ERROR_NO_COMPILER, "CUMEM_ERROR_NO_COMPILER"},
      {CUMEM_ERROR_COMPILATION, "CUMEM_ERROR_COMPILATION"},
      {CUMEM_ERROR_NOT_FOUND, "CUMEM_ERROR_NOT_FOUND"},
      {CUMEM_ERROR_INVALID_LAUNCH_CONFIG, "CUMEM_ERROR_INVALID_LAUNCH_CONFIG"},
      {CUMEM_ERROR_OUT_OF_RESOURCES, "CUMEM_ERROR_OUT_OF_RESOURCES"},
      {CUMEM_ERROR_INTERNAL, "CUMEM_ERROR_INTERNAL"},
  };
  for (const auto& c : cases) EXPECT_STREQ(cumem_status_string(c.status), c.name);
  EXPECT_STREQ(cumem_status_string(static_cast<cumem_status_t>(12345)), "CUMEM_STATUS_UNKNOWN");
}

TEST(LastError, EmptyBeforeAnyFailureOnAThread) {
  std::string seen = "unset";
  std::thread([&] { seen = cumem_last_error_message(); }).join();
  EXPECT_EQ(seen, "");
}

TEST(LastError, NamesTheFunctionAndArgument) {
  CUMEM_EXPECT_ERROR(cumem_device_count(nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "cumem_device_count: argument 'out_count' must not be NULL");
}

TEST(LastError, IsThreadLocal) {
  CUMEM_EXPECT_ERROR(cumem_device_count(nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "out_count");
  std::string other_before, other_after;
  std::thread([&] {
    other_before = cumem_last_error_message();
    cumem_stream_query(nullptr, nullptr);
    other_after = cumem_last_error_message();
  }).join();
  EXPECT_EQ(other_before, "");
  EXPECT_NE(other_after.find("cumem_stream_query"), std::string::npos) << other_after;
  // This thread still has its own message.
  EXPECT_NE(std::string(cumem_last_error_message()).find("out_count"), std::string::npos);
}

TEST(OptionsInit, FunctionsMatchMacros) {
  cumem_stream_options_t s;
  std::memset(&s, 0xAB, sizeof s);
  cumem_stream_options_init(&s);
  const cumem_stream_options_t s_macro = CUMEM_STREAM_OPTIONS_INIT;
  EXPECT_EQ(0, std::memcmp(&s, &s_macro, sizeof s));
  EXPECT_EQ(s.struct_size, sizeof s);
  EXPECT_EQ(s.blocking, CUMEM_FALSE);

  cumem_event_options_t e;
  cumem_event_options_init(&e);
  EXPECT_EQ(e.struct_size, sizeof e);
  EXPECT_EQ(e.enable_timing, CUMEM_FALSE);

  cumem_stream_options_init(nullptr);  // tolerated, does nothing
  cumem_event_options_init(nullptr);
}
