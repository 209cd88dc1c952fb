// The log: levels, the callback and its user data, the default sink on
// stderr, invalid arguments, and setting the callback while threads log.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

struct Message {
  cumem_log_level_t level;
  std::string text;
};

// What a callback received; its mutex makes it safe from any thread.
struct Received {
  std::mutex mutex;
  std::vector<Message> messages;
  size_t count_containing(cumem_log_level_t level, const std::string& fragment) {
    std::lock_guard<std::mutex> lock(mutex);
    size_t n = 0;
    for (const Message& m : messages)
      if (m.level == level && m.text.find(fragment) != std::string::npos) ++n;
    return n;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return messages.size();
  }
};

void record(cumem_log_level_t level, const char* message, void* user_data) {
  auto* r = static_cast<Received*>(user_data);
  std::lock_guard<std::mutex> lock(r->mutex);
  r->messages.push_back({level, message});
}

// Messages libcumem produces at each level, through the public API:
// debug: a failing call;
void fail_a_call() {
  EXPECT_EQ(cumem_resource_allocate_raw(nullptr, 8, nullptr, nullptr),
            CUMEM_ERROR_INVALID_ARGUMENT);
}
const char* const kFailure = "cumem_resource_allocate_raw: argument 'resource' must not be NULL";
// warning: a tracking resource released with an allocation outstanding;
void leak_from_tracking() {
  cumem_resource_t* host = nullptr;
  ASSERT_EQ(cumem_host_resource_create(nullptr, &host), CUMEM_SUCCESS);
  cumem_resource_t* t = nullptr;
  ASSERT_EQ(cumem_tracking_resource_create(host, CUMEM_FALSE, &t), CUMEM_SUCCESS);
  void* leaked = nullptr;
  ASSERT_EQ(cumem_resource_allocate_raw(t, 4321, nullptr, &leaked), CUMEM_SUCCESS);
  cumem_resource_release(t);
  // The upstream's memory: freed through it, so its statistics agree.
  EXPECT_EQ(cumem_resource_deallocate_raw(host, leaked, 4321, nullptr), CUMEM_SUCCESS);
  cumem_resource_release(host);
}
const char* const kLeak = "released with allocations outstanding";
// error: a framework entry point, which returns no status, failing.
void fail_framework_free() {
  int x = 0;
  cumem_torch_free(&x, 4, 0, nullptr);
}
const char* const kFramework = "cumem_torch_free: pointer";

class Log : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("CUMEM_FRAMEWORK_QUIET"); }
  void TearDown() override {
    EXPECT_EQ(cumem_set_log_callback(nullptr, nullptr), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_set_log_level(CUMEM_LOG_LEVEL_WARNING), CUMEM_SUCCESS);
  }
};

TEST_F(Log, DefaultLevelIsWarning) {
  if (std::getenv("CUMEM_LOG_LEVEL")) GTEST_SKIP() << "CUMEM_LOG_LEVEL is set (log_env_* test it)";
  cumem_log_level_t level = CUMEM_LOG_LEVEL_OFF;
  CUMEM_ASSERT_OK(cumem_get_log_level(&level));
  EXPECT_EQ(level, CUMEM_LOG_LEVEL_WARNING);
}

TEST_F(Log, CallbackReceivesMessagesAtAndAboveTheLevel) {
  Received r;
  CUMEM_ASSERT_OK(cumem_set_log_callback(record, &r));

  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_WARNING));
  fail_a_call();
  leak_from_tracking();
  fail_framework_free();
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_DEBUG, kFailure), 0u);
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_WARNING, kLeak), 1u);
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_WARNING, "4321 bytes"), 1u);
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_ERROR, kFramework), 1u);

  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_ERROR));
  leak_from_tracking();
  fail_framework_free();
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_WARNING, kLeak), 1u);  // not one more
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_ERROR, kFramework), 2u);

  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_DEBUG));
  fail_a_call();
  leak_from_tracking();
  // Every failing call at debug, with its message and status name.
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_DEBUG, kFailure), 1u);
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_DEBUG, "[CUMEM_ERROR_INVALID_ARGUMENT]"), 1u);
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_WARNING, kLeak), 2u);

  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_OFF));
  const size_t before = r.size();
  fail_a_call();
  leak_from_tracking();
  fail_framework_free();
  EXPECT_EQ(r.size(), before);
}

// info: a caching adaptor giving its cache back to serve a refused request
// (the scenario of resource_caching's OutOfMemoryGivesTheCacheBackAndRetries).
TEST_F(Log, CachingRetryAfterOutOfMemoryIsInfo) {
  Received r;
  CUMEM_ASSERT_OK(cumem_set_log_callback(record, &r));
  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_INFO));
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(host, 4096, &limit));
  cumem_resource_t* c = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(limit, &c));
  void* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(c, 2048, nullptr, &a));
  std::thread([&] {  // cached on that thread, out of this one's reach
    EXPECT_EQ(cumem_resource_deallocate_raw(c, a, 2048, nullptr), CUMEM_SUCCESS);
  }).join();
  void* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(c, 3000, nullptr, &b));
  EXPECT_EQ(r.count_containing(CUMEM_LOG_LEVEL_INFO,
                               "the upstream refused 3072 bytes (3.00 KiB); served after giving "
                               "back 2048 bytes (2.00 KiB) of cached blocks"),
            1u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(c, b, 3000, nullptr));
  cumem_resource_release(c);
  cumem_resource_release(limit);
  cumem_resource_release(host);
}

TEST_F(Log, NullRestoresTheDefaultSink) {
  Received r;
  CUMEM_ASSERT_OK(cumem_set_log_callback(record, &r));
  CUMEM_ASSERT_OK(cumem_set_log_callback(nullptr, &r));  // user_data ignored
  testing::internal::CaptureStderr();
  leak_from_tracking();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.size(), 0u);
  EXPECT_NE(err.find("libcumem: warning: tracking over"), std::string::npos) << err;
  EXPECT_NE(err.find(kLeak), std::string::npos) << err;
  EXPECT_EQ(err.back(), '\n');
}

TEST_F(Log, TheDefaultSinkSaysTheLevel) {
  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_DEBUG));
  testing::internal::CaptureStderr();
  fail_a_call();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, std::string("libcumem: debug: ") + kFailure + " [CUMEM_ERROR_INVALID_ARGUMENT]\n");
}

TEST_F(Log, InvalidArguments) {
  CUMEM_EXPECT_ERROR(cumem_set_log_level(static_cast<cumem_log_level_t>(5)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cumem_set_log_level: argument 'level' is 5");
  CUMEM_EXPECT_ERROR(cumem_set_log_level(static_cast<cumem_log_level_t>(-1)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "argument 'level' is -1, not a cumem_log_level_t");
  CUMEM_EXPECT_ERROR(cumem_get_log_level(nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "cumem_get_log_level: argument 'out_level' must not be NULL");
  // Nothing changed.
  cumem_log_level_t level = CUMEM_LOG_LEVEL_OFF;
  CUMEM_ASSERT_OK(cumem_get_log_level(&level));
  EXPECT_EQ(level, CUMEM_LOG_LEVEL_WARNING);
  // Every level is accepted and read back.
  for (cumem_log_level_t l : {CUMEM_LOG_LEVEL_OFF, CUMEM_LOG_LEVEL_ERROR, CUMEM_LOG_LEVEL_WARNING,
                              CUMEM_LOG_LEVEL_INFO, CUMEM_LOG_LEVEL_DEBUG}) {
    CUMEM_ASSERT_OK(cumem_set_log_level(l));
    CUMEM_ASSERT_OK(cumem_get_log_level(&level));
    EXPECT_EQ(level, l);
  }
}

// A callback that calls libcumem: what that produces on its thread is
// dropped, not delivered again into the callback.
std::atomic<int> reentrant_calls{0};
void calls_back_in(cumem_log_level_t, const char*, void*) {
  ++reentrant_calls;
  fail_a_call();  // a debug message while delivering one
}

TEST_F(Log, MessagesFromInsideTheCallbackAreDropped) {
  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_DEBUG));
  CUMEM_ASSERT_OK(cumem_set_log_callback(calls_back_in, nullptr));
  reentrant_calls = 0;
  fail_a_call();
  EXPECT_EQ(reentrant_calls.load(), 1);
  fail_a_call();
  EXPECT_EQ(reentrant_calls.load(), 2);
}

// Two callbacks, each with its own user data: a message must always reach a
// callback with its own user data, never the other's.
std::atomic<int> tag_a{0}, tag_b{0};
std::atomic<long> delivered{0}, torn{0};
void callback_a(cumem_log_level_t, const char*, void* user_data) {
  ++delivered;
  if (user_data != &tag_a) ++torn;
}
void callback_b(cumem_log_level_t, const char*, void* user_data) {
  ++delivered;
  if (user_data != &tag_b) ++torn;
}

TEST_F(Log, SettingTheCallbackWhileThreadsLog) {
  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_DEBUG));
  CUMEM_ASSERT_OK(cumem_set_log_callback(callback_a, &tag_a));
  delivered = 0;
  torn = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> loggers;
  for (int i = 0; i < 3; ++i)
    loggers.emplace_back([&stop] {
      while (!stop.load()) cumem_resource_allocate_raw(nullptr, 8, nullptr, nullptr);
    });
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(i % 2 ? cumem_set_log_callback(callback_a, &tag_a)
                    : cumem_set_log_callback(callback_b, &tag_b),
              CUMEM_SUCCESS);
    if (i % 100 == 0) {
      EXPECT_EQ(cumem_set_log_level(i % 200 ? CUMEM_LOG_LEVEL_DEBUG : CUMEM_LOG_LEVEL_INFO),
                CUMEM_SUCCESS);
      std::this_thread::yield();
    }
  }
  CUMEM_ASSERT_OK(cumem_set_log_level(CUMEM_LOG_LEVEL_DEBUG));
  // Let the loggers deliver through the final pair for a moment.
  const long seen = delivered.load();
  while (delivered.load() < seen + 100) std::this_thread::yield();
  stop = true;
  for (auto& t : loggers) t.join();
  EXPECT_GT(delivered.load(), 0);
  EXPECT_EQ(torn.load(), 0);
}

}  // namespace
