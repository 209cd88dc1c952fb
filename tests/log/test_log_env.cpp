// CUMEM_LOG_LEVEL, read once at first use. tests/log/meson.build runs this
// program once per value, with CUMEM_TEST_EXPECTED_LEVEL naming the level
// it must give and CUMEM_TEST_EXPECT_WARNING=1 where the value is unknown.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

std::mutex mutex;
std::vector<std::pair<cumem_log_level_t, std::string>> received;

void record(cumem_log_level_t level, const char* message, void*) {
  std::lock_guard<std::mutex> lock(mutex);
  received.emplace_back(level, message);
}

size_t count(cumem_log_level_t level, const char* fragment) {
  std::lock_guard<std::mutex> lock(mutex);
  size_t n = 0;
  for (const auto& [l, text] : received)
    if (l == level && text.find(fragment) != std::string::npos) ++n;
  return n;
}

cumem_log_level_t expected_level() {
  const char* name = std::getenv("CUMEM_TEST_EXPECTED_LEVEL");
  if (!name) ADD_FAILURE() << "run by meson test: CUMEM_TEST_EXPECTED_LEVEL is not set";
  const std::string n = name ? name : "";
  if (n == "off") return CUMEM_LOG_LEVEL_OFF;
  if (n == "error") return CUMEM_LOG_LEVEL_ERROR;
  if (n == "warning") return CUMEM_LOG_LEVEL_WARNING;
  if (n == "info") return CUMEM_LOG_LEVEL_INFO;
  if (n == "debug") return CUMEM_LOG_LEVEL_DEBUG;
  ADD_FAILURE() << "CUMEM_TEST_EXPECTED_LEVEL='" << n << "' is not a level";
  return CUMEM_LOG_LEVEL_FORCE32;
}

TEST(LogEnvironment, LevelComesFromTheVariableReadOnce) {
  const cumem_log_level_t expected = expected_level();
  const char* warn = std::getenv("CUMEM_TEST_EXPECT_WARNING");
  const bool expect_warning = warn && std::strcmp(warn, "1") == 0;
  const char* value = std::getenv("CUMEM_LOG_LEVEL");

  // Installing the callback does not read the variable, so a warning about
  // it reaches the callback.
  CUMEM_ASSERT_OK(cumem_set_log_callback(record, nullptr));
  cumem_log_level_t level = CUMEM_LOG_LEVEL_FORCE32;
  CUMEM_ASSERT_OK(cumem_get_log_level(&level));
  EXPECT_EQ(level, expected) << "CUMEM_LOG_LEVEL=" << (value ? value : "(unset)");
  EXPECT_EQ(count(CUMEM_LOG_LEVEL_WARNING, "is not one of off, error, warning, info, debug"),
            expect_warning ? 1u : 0u);
  if (expect_warning) {
    EXPECT_EQ(count(CUMEM_LOG_LEVEL_WARNING, (std::string("CUMEM_LOG_LEVEL='") + value + "'").c_str()), 1u);
    EXPECT_EQ(count(CUMEM_LOG_LEVEL_WARNING, "ignored: the level is warning"), 1u);
  }

  // The level filters: a failing call is a debug message.
  EXPECT_EQ(cumem_resource_allocate_raw(nullptr, 8, nullptr, nullptr), CUMEM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(count(CUMEM_LOG_LEVEL_DEBUG, "cumem_resource_allocate_raw: argument 'resource'"),
            expected == CUMEM_LOG_LEVEL_DEBUG ? 1u : 0u);

  // Read once: a later change of the variable changes nothing, and the
  // warning is not repeated.
  ASSERT_EQ(setenv("CUMEM_LOG_LEVEL", expected == CUMEM_LOG_LEVEL_OFF ? "debug" : "off", 1), 0);
  CUMEM_ASSERT_OK(cumem_get_log_level(&level));
  EXPECT_EQ(level, expected);
  // cumem_set_log_level overrides the variable.
  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_INFO));
  CUMEM_ASSERT_OK(cumem_get_log_level(&level));
  EXPECT_EQ(level, CUMEM_LOG_LEVEL_INFO);
  EXPECT_EQ(count(CUMEM_LOG_LEVEL_WARNING, "is not one of"), expect_warning ? 1u : 0u);
  CUMEM_ASSERT_OK(cumem_set_log_callback(nullptr, nullptr));
}

}  // namespace
