// $CUMEM_OOM_SNAPSHOT (tests/snapshot/meson.build sets it to a path in the
// build directory with %p and %n): every call that fails with out of memory
// first writes a snapshot of the process there, and its message says where.
#include <unistd.h>

#include <cumem/cumem.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "test_util.hpp"

namespace {

std::string expected_path(int n) {
  std::string pattern = std::getenv("CUMEM_OOM_SNAPSHOT");
  const auto replace = [&](const std::string& from, const std::string& to) {
    pattern.replace(pattern.find(from), from.size(), to);
  };
  replace("%p", std::to_string(getpid()));
  replace("%n", std::to_string(n));
  return pattern;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OomSnapshot, EachOutOfMemoryWritesASnapshotAndSaysWhere) {
  ASSERT_NE(std::getenv("CUMEM_OOM_SNAPSHOT"), nullptr) << "run with CUMEM_OOM_SNAPSHOT set";
  cumem::Resource host = cumem::Resource::host();
  cumem::Resource limit = cumem::Resource::limit(host, 1 << 20);
  cumem::memory_history_start();
  void* kept = limit.allocate_raw(4096);
  for (int n = 1; n <= 2; ++n) {
    void* p = nullptr;
    ASSERT_EQ(cumem_resource_allocate_raw(limit.get(), 2 << 20, nullptr, &p), CUMEM_ERROR_OUT_OF_MEMORY);
    const std::string message = cumem_last_error_message();
    const std::string path = expected_path(n);
    EXPECT_NE(message.find("; a memory snapshot was written to " + path), std::string::npos) << message;
    EXPECT_EQ(message.rfind("cumem_resource_allocate_raw: out of memory", 0), 0u) << message;
    const std::string json = read(path);
    EXPECT_EQ(json.rfind("{\"schema\":\"cumem.snapshot\",\"version\":1,", 0), 0u) << path;
    EXPECT_NE(json.find("\"scope\":\"process\""), std::string::npos);
    EXPECT_NE(json.find("\"name\":\"limit of 1048576 bytes"), std::string::npos) << json.substr(0, 600);
    EXPECT_NE(json.find("\"action\":\"out_of_memory\""), std::string::npos)
        << "the failure is in the history the snapshot holds";
    std::remove(path.c_str());
  }
  // Other failures write nothing.
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(limit.get(), kept, 8192, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "");
  EXPECT_EQ(std::string(cumem_last_error_message()).find("memory snapshot"), std::string::npos);
  limit.deallocate_raw(kept, 4096);
  cumem::memory_history_stop();
}

}  // namespace
