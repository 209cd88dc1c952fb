// NVTX ranges. tests/log/meson.build runs this program two ways
// (CUMEM_TEST_NVTX_MODE): "tool", with NVTX_INJECTION64_PATH naming the
// test tool (nvtx_injection.cpp), which records every range; and "none",
// with the variable unset: then libcumem says ranges are off and nothing
// loads the tool.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

std::mutex mutex;
std::string info;  // the log at info: says whether ranges are on

void record(cumem_log_level_t level, const char* message, void*) {
  std::lock_guard<std::mutex> lock(mutex);
  if (level == CUMEM_LOG_LEVEL_INFO) info += std::string(message) + "\n";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The events the tool recorded, one per line.
std::string events_of(void* tool) {
  auto events = reinterpret_cast<void (*)(std::string*)>(dlsym(tool, "nvtx_test_events"));
  EXPECT_NE(events, nullptr);
  std::string out;
  if (events) events(&out);
  return out;
}

void clear(void* tool) {
  auto fn = reinterpret_cast<void (*)()>(dlsym(tool, "nvtx_test_clear"));
  ASSERT_NE(fn, nullptr);
  fn();
}

// An allocate and free on the host resource, raw and as a buffer (with a
// fill and a copy), and one failing call.
void work(cumem_resource_t* host) {
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(host, 64, nullptr, &p));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(host, p, 64, nullptr));
}

void buffer_work(cumem_resource_t* host) {
  cumem_buffer_t* a = nullptr;
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 32, nullptr, &a));
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, 32, nullptr, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(a, 7, 1, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(a, b, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_close(a, nullptr));
  EXPECT_EQ(cumem_buffer_close(nullptr, nullptr), CUMEM_ERROR_INVALID_ARGUMENT);
  cumem_buffer_release(a);
  cumem_buffer_release(b);  // no range: a release is not a close
}

TEST(Nvtx, RangesFollowTheTool) {
  const std::string mode = env("CUMEM_TEST_NVTX_MODE");
  const std::string tool_path = env("CUMEM_TEST_NVTX_TOOL");
  ASSERT_TRUE(mode == "tool" || mode == "none")
      << "run by meson test: CUMEM_TEST_NVTX_MODE='" << mode << "'";
  ASSERT_FALSE(tool_path.empty()) << "CUMEM_TEST_NVTX_TOOL is not set";
  if (mode == "tool") ASSERT_EQ(env("NVTX_INJECTION64_PATH"), tool_path);
  else ASSERT_EQ(env("NVTX_INJECTION64_PATH"), "");

  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_INFO));
  CUMEM_ASSERT_OK(cumem_set_log_callback(record, nullptr));
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  // The first ranges, which decide, on several threads at once.
  constexpr int kThreads = 4, kPairs = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([host] {
      for (int i = 0; i < kPairs; ++i) work(host);
    });
  for (auto& t : threads) t.join();

  void* tool = dlopen(tool_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (mode == "none") {
    EXPECT_EQ(tool, nullptr) << "nothing should have loaded the tool";
    buffer_work(host);
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(info.find("NVTX ranges on"), std::string::npos) << info;
  } else {
    ASSERT_NE(tool, nullptr) << "NVTX did not load the tool";
    {
      std::lock_guard<std::mutex> lock(mutex);
      EXPECT_NE(info.find("NVTX ranges on (a tool is attached"), std::string::npos) << info;
    }
    auto initialized = reinterpret_cast<int (*)()>(dlsym(tool, "nvtx_test_initialized"));
    ASSERT_NE(initialized, nullptr);
    EXPECT_EQ(initialized(), 1);
    // The domain, its names registered once, then one range per call.
    const std::string first = events_of(tool);
    EXPECT_EQ(first.find("domain libcumem\n"), 0u) << first;
    EXPECT_NE(first.find("string libcumem cumem_resource_allocate_raw\n"), std::string::npos);
    EXPECT_NE(first.find("string libcumem cumem_buffer_copy_region\n"), std::string::npos);
    auto occurrences = [&first](const std::string& line) {
      size_t n = 0;
      for (size_t at = first.find(line); at != std::string::npos; at = first.find(line, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(occurrences("domain "), 1u);
    EXPECT_EQ(occurrences("string libcumem cumem_resource_allocate_raw\n"), 1u);
    EXPECT_EQ(occurrences("push libcumem cumem_resource_allocate_raw\n"), size_t{kThreads * kPairs});
    EXPECT_EQ(occurrences("push libcumem cumem_resource_deallocate_raw\n"), size_t{kThreads * kPairs});
    EXPECT_EQ(occurrences("push "), size_t{2 * kThreads * kPairs});
    EXPECT_EQ(occurrences("pop libcumem\n"), size_t{2 * kThreads * kPairs});

    clear(tool);
    work(host);
    EXPECT_EQ(events_of(tool),
              "push libcumem cumem_resource_allocate_raw\npop libcumem\n"
              "push libcumem cumem_resource_deallocate_raw\npop libcumem\n");
    clear(tool);
    buffer_work(host);
    EXPECT_EQ(events_of(tool),
              "push libcumem cumem_resource_allocate\npop libcumem\n"
              "push libcumem cumem_resource_allocate\npop libcumem\n"
              "push libcumem cumem_buffer_fill\npop libcumem\n"
              "push libcumem cumem_buffer_copy_to\npop libcumem\n"
              "push libcumem cumem_buffer_close\npop libcumem\n"
              "push libcumem cumem_buffer_close\npop libcumem\n");
    dlclose(tool);
  }
  cumem_resource_release(host);
  CUMEM_ASSERT_OK(cumem_set_log_callback(nullptr, nullptr));
}

}  // namespace
