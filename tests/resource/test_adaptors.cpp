// The tracking and logging adaptors and the callback resource, over host
// memory (no GPU).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.hpp"

namespace {

class Adaptors : public ::testing::Test {
 protected:
  void SetUp() override { CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host)); }
  void TearDown() override { cumem_resource_release(host); }
  cumem_resource_t* host = nullptr;
};

std::string report_of(const cumem_resource_t* r) {
  size_t n = 0;
  EXPECT_EQ(cumem_tracking_resource_report(r, nullptr, 0, &n), CUMEM_SUCCESS);
  std::string text(n + 1, '\0');
  EXPECT_EQ(cumem_tracking_resource_report(r, text.data(), text.size(), &n), CUMEM_SUCCESS);
  text.resize(n);
  return text;
}

TEST_F(Adaptors, TrackingKnowsWhatIsOutstanding) {
  cumem_resource_t* t = nullptr;
  CUMEM_ASSERT_OK(cumem_tracking_resource_create(host, CUMEM_TRUE, &t));
  void *a = nullptr, *b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(t, 1000, nullptr, &a));
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(t, 24, nullptr, &b));
  uint64_t count = 0, bytes = 0;
  CUMEM_ASSERT_OK(cumem_tracking_resource_outstanding(t, &count, &bytes));
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(bytes, 1024u);
  const std::string r = report_of(t);
  EXPECT_NE(r.find("2 allocation(s) outstanding"), std::string::npos) << r;
  EXPECT_NE(r.find("1000 bytes"), std::string::npos) << r;
  EXPECT_NE(r.find("24 bytes"), std::string::npos) << r;
  EXPECT_GT(std::count(r.begin(), r.end(), '\n'), 4) << "call stacks were captured:\n" << r;
  // A short buffer gets the start of the report, NUL-terminated.
  char small[8];
  size_t n = 0;
  CUMEM_ASSERT_OK(cumem_tracking_resource_report(t, small, sizeof small, &n));
  EXPECT_EQ(n, r.size());
  EXPECT_EQ(std::string(small), r.substr(0, 7));
  // Frees of the wrong size, or of memory it did not hand out, are refused.
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(t, a, 999, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "allocated with 1000 bytes");
  int local = 0;
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(t, &local, 24, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "not allocated from");
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(t, a, 1000, nullptr));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(t, b, 24, nullptr));
  CUMEM_ASSERT_OK(cumem_tracking_resource_outstanding(t, &count, &bytes));
  EXPECT_EQ(count, 0u);
  EXPECT_NE(report_of(t).find("0 allocation(s) outstanding"), std::string::npos);
  CUMEM_EXPECT_ERROR(cumem_tracking_resource_outstanding(host, &count, &bytes),
                     CUMEM_ERROR_NOT_SUPPORTED, "not a tracking adaptor");
  cumem_resource_release(t);
}

TEST_F(Adaptors, TrackingReportsLeaksWhenReleased) {
  testing::internal::CaptureStderr();
  cumem_resource_t* t = nullptr;
  CUMEM_ASSERT_OK(cumem_tracking_resource_create(host, CUMEM_FALSE, &t));
  void* leaked = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(t, 333, nullptr, &leaked));
  cumem_resource_release(t);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("released with allocations outstanding"), std::string::npos) << err;
  EXPECT_NE(err.find("333 bytes"), std::string::npos) << err;
  std::free(leaked);  // the host upstream's memory (aligned_alloc)
}

TEST_F(Adaptors, LoggingWritesOneCsvLinePerOperation) {
  const std::string path = "/tmp/cumem_log_test_" + std::to_string(getpid()) + ".csv";
  // Over a limit, so that a refused allocation is cheap to provoke.
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(host, 1 << 20, &limit));
  cumem_resource_t* l = nullptr;
  CUMEM_ASSERT_OK(cumem_logging_resource_create(limit, path.c_str(), &l));
  cumem_resource_release(limit);  // the logging adaptor holds it
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(l, 4096, nullptr, &p));
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(l, p, 4096, nullptr));
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(l, 2 << 20, nullptr, &p),
                     CUMEM_ERROR_OUT_OF_MEMORY, "limit of");
  cumem_resource_release(l);  // flushes
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::remove(path.c_str());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "time_ns,thread,operation,ptr,size,stream");
  EXPECT_NE(lines[1].find(",allocate,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(",4096,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(",deallocate,"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find(",allocate_failed,"), std::string::npos) << lines[3];
  EXPECT_EQ(std::count(lines[1].begin(), lines[1].end(), ','), 5);
}

TEST_F(Adaptors, LoggingNeedsAFile) {
  unsetenv("CUMEM_LOG_FILE");
  cumem_resource_t* l = nullptr;
  CUMEM_EXPECT_ERROR(cumem_logging_resource_create(host, nullptr, &l), CUMEM_ERROR_INVALID_ARGUMENT,
                     "CUMEM_LOG_FILE");
  CUMEM_EXPECT_ERROR(cumem_logging_resource_create(host, "/nonexistent/dir/log.csv", &l),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cannot open the log file");
  EXPECT_EQ(l, nullptr);
  const std::string path = "/tmp/cumem_log_env_" + std::to_string(getpid()) + ".csv";
  setenv("CUMEM_LOG_FILE", path.c_str(), 1);
  CUMEM_ASSERT_OK(cumem_logging_resource_create(host, "", &l));
  cumem_resource_release(l);
  unsetenv("CUMEM_LOG_FILE");
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  std::remove(path.c_str());
  EXPECT_EQ(first, "time_ns,thread,operation,ptr,size,stream");
}

// A user allocator: malloc with a count, and a switch to refuse.
struct UserAllocator {
  std::atomic<int> live{0};
  std::atomic<int> destroyed{0};
  bool refuse = false;
};

int32_t user_allocate(size_t size, void*, void* user, void** out) {
  auto* u = static_cast<UserAllocator*>(user);
  if (u->refuse) return 12;
  *out = std::malloc(size);
  ++u->live;
  return *out ? 0 : 1;
}
void user_deallocate(void* ptr, size_t, void*, void* user) {
  std::free(ptr);
  --static_cast<UserAllocator*>(user)->live;
}
void user_destroy(void* user) { ++static_cast<UserAllocator*>(user)->destroyed; }

TEST(CallbackResource, ServesBuffersFromUserCallbacks) {
  UserAllocator u;
  cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
  c.allocate = user_allocate;
  c.deallocate = user_deallocate;
  c.destroy = user_destroy;
  c.user_data = &u;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(nullptr, &c, &r));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_CALLBACK);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 128, nullptr, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x42, 1, nullptr));
  EXPECT_EQ(u.live.load(), 1);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 128u);
  u.refuse = true;
  cumem_buffer_t* refused = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(r, 64, nullptr, &refused), CUMEM_ERROR_OUT_OF_MEMORY,
                     "returned 12");
  cumem_buffer_release(b);
  EXPECT_EQ(u.live.load(), 0);
  EXPECT_EQ(u.destroyed.load(), 0);
  cumem_resource_release(r);
  EXPECT_EQ(u.destroyed.load(), 1) << "destroy runs once, with the last reference";
}

TEST(CallbackResource, BadCallbacksAreRefused) {
  cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_callback_resource_create(nullptr, &c, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "must not be NULL");
  c.allocate = user_allocate;
  c.deallocate = user_deallocate;
  c.memory_kind = static_cast<cumem_memory_kind_t>(9);
  CUMEM_EXPECT_ERROR(cumem_callback_resource_create(nullptr, &c, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "memory_kind 9");
  CUMEM_EXPECT_ERROR(cumem_callback_resource_create(nullptr, nullptr, &r),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'callbacks'");
  EXPECT_EQ(r, nullptr);
}

}  // namespace

namespace {

// The aligned adaptor over the host resource (64-byte aligned by default).
TEST_F(Adaptors, AlignedHandsOutAlignedAddressesAndPadsOnlyWhenNeeded) {
  // 64 bytes: the upstream gives them already, so nothing is padded.
  cumem_resource_t* a64 = nullptr;
  CUMEM_ASSERT_OK(cumem_aligned_resource_create(host, 64, &a64));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(a64, 1000, nullptr, &p));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 1000u) << "no padding where none is needed";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(a64, p, 1000, nullptr));
  cumem_resource_properties_t props = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(a64, &props));
  EXPECT_EQ(props.kind, CUMEM_RESOURCE_ALIGNED);
  EXPECT_TRUE(props.host_accessible);
  CUMEM_ASSERT_OK(cumem_resource_release(a64));

  // 1 MiB: padded by alignment - 1, and every address a multiple of it.
  constexpr size_t kAlign = size_t{1} << 20;
  cumem_resource_t* big = nullptr;
  CUMEM_ASSERT_OK(cumem_aligned_resource_create(host, kAlign, &big));
  std::vector<std::pair<void*, size_t>> live;
  for (size_t size : {size_t{1}, size_t{100}, size_t{4096}, size_t{3} << 20}) {
    CUMEM_ASSERT_OK(cumem_resource_allocate_raw(big, size, nullptr, &p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kAlign, 0u) << size;
    std::memset(p, 0x5a, size);  // all of it is ours
    live.emplace_back(p, size);
  }
  EXPECT_EQ(statistics_of(big).bytes_in_use, 1u + 100 + 4096 + (size_t{3} << 20));
  EXPECT_GE(statistics_of(host).bytes_in_use, statistics_of(big).bytes_in_use);
  // A free with the wrong size is refused and frees nothing.
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(big, live[1].first, 99, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "100 bytes, not 99");
  for (const auto& [ptr, size] : live)
    CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(big, ptr, size, nullptr));
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u) << "the upstream got back what it gave";
  EXPECT_EQ(statistics_of(big).bytes_in_use, 0u);
  CUMEM_ASSERT_OK(cumem_resource_release(big));
}

// Issue 17, item 7: the wrong size is refused also where the upstream's
// address needed no padding (a host resource aligned to 4096 under an
// adaptor of 256), and so is an address the adaptor never handed out.
TEST_F(Adaptors, AlignedRefusesAWrongSizeWhenNothingWasPadded) {
  cumem_host_resource_options_t ho = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  ho.alignment = 4096;
  cumem_resource_t* h4096 = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&ho, &h4096));
  cumem_resource_t* a = nullptr;
  CUMEM_ASSERT_OK(cumem_aligned_resource_create(h4096, 256, &a));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(a, 1000, nullptr, &p));
  EXPECT_EQ(statistics_of(h4096).bytes_in_use, 1000u) << "nothing padded";
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(a, p, 900, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "1000 bytes, not 900");
  EXPECT_EQ(statistics_of(a).live_allocations, 1u) << "nothing was freed";
  EXPECT_EQ(statistics_of(h4096).bytes_in_use, 1000u);
  int local = 0;
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(a, &local, 4, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "did not hand out this address");
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(a, p, 1000, nullptr));
  EXPECT_EQ(statistics_of(a).live_allocations, 0u);
  EXPECT_EQ(statistics_of(a).bytes_in_use, 0u);
  EXPECT_EQ(statistics_of(h4096).bytes_in_use, 0u);
  CUMEM_ASSERT_OK(cumem_resource_release(a));
  CUMEM_ASSERT_OK(cumem_resource_release(h4096));
}

TEST_F(Adaptors, AlignedRefusesBadAlignments) {
  cumem_resource_t* r = nullptr;
  for (size_t bad : {size_t{0}, size_t{3}, size_t{96}, (size_t{1} << 30) + 1, size_t{1} << 31})
    CUMEM_EXPECT_ERROR(cumem_aligned_resource_create(host, bad, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                       "is not a power of two from 1 to 1 GiB");
  EXPECT_EQ(r, nullptr);
  CUMEM_EXPECT_ERROR(cumem_aligned_resource_create(nullptr, 64, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "upstream");
  CUMEM_EXPECT_ERROR(cumem_aligned_resource_create(host, 64, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_resource");
  // 1 is the smallest: every address is a multiple of it.
  CUMEM_ASSERT_OK(cumem_aligned_resource_create(host, 1, &r));
  CUMEM_ASSERT_OK(cumem_resource_release(r));
}

// Sixteen threads through a padded aligned adaptor: every block is aligned,
// its own, and given back whole.
TEST_F(Adaptors, AlignedIsSafeFromManyThreads) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_aligned_resource_create(host, 4096, &r));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const size_t size = 64 + static_cast<size_t>((t * 131 + i * 17) % 5000);
        void* p = nullptr;
        if (cumem_resource_allocate_raw(r, size, nullptr, &p) != CUMEM_SUCCESS ||
            reinterpret_cast<uintptr_t>(p) % 4096 != 0) {
          ++failures;
          return;
        }
        std::memset(p, t, size);
        if (static_cast<unsigned char*>(p)[size - 1] != t) ++failures;
        if (cumem_resource_deallocate_raw(r, p, size, nullptr) != CUMEM_SUCCESS) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u);
  CUMEM_ASSERT_OK(cumem_resource_release(r));
}

}  // namespace
