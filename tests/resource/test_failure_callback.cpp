// The failure-callback adaptor on host memory: a limit adaptor upstream runs
// out of memory on purpose, and the callback sees the size, the stream and
// the adaptor's statistics, frees memory and asks for retries, bounded by
// max_retries.
#include <cstring>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

struct Recorder {
  std::vector<cumem_failure_info_t> calls;
  std::vector<cumem_resource_statistics_t> statistics;
  std::vector<std::string> messages;
  cumem_failure_action_t action = CUMEM_FAILURE_FAIL;
  cumem_buffer_t* to_free = nullptr;  // released at the first call
  cumem_resource_t* allocate_from = nullptr;  // allocated from inside the callback
  cumem_status_t nested_status = CUMEM_SUCCESS;
  std::string nested_message;
  int destroyed = 0;
};

cumem_failure_action_t record(const cumem_failure_info_t* info, void* user_data) {
  auto* r = static_cast<Recorder*>(user_data);
  r->calls.push_back(*info);
  r->statistics.push_back(*info->statistics);
  r->messages.push_back(info->message);
  if (r->to_free) {
    cumem_buffer_release(r->to_free);
    r->to_free = nullptr;
  }
  if (r->allocate_from) {
    cumem_buffer_t* b = nullptr;
    r->nested_status = cumem_resource_allocate(r->allocate_from, 3000, nullptr, &b);
    r->nested_message = cumem_last_error_message();
    cumem_buffer_release(b);
  }
  return r->action;
}

void destroyed(void* user_data) { ++static_cast<Recorder*>(user_data)->destroyed; }

class FailureCallback : public ::testing::Test {
 protected:
  void SetUp() override {
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
    CUMEM_ASSERT_OK(cumem_limit_resource_create(host, 4096, &limit));
  }
  void TearDown() override {
    cumem_resource_release(adaptor);
    cumem_resource_release(limit);
    cumem_resource_release(host);
  }
  void make(uint32_t max_retries = 0) {
    cumem_failure_callback_t c = CUMEM_FAILURE_CALLBACK_INIT;
    c.callback = record;
    c.destroy = destroyed;
    c.user_data = &recorder;
    c.max_retries = max_retries;
    CUMEM_ASSERT_OK(cumem_failure_callback_resource_create(limit, &c, &adaptor));
  }
  cumem_resource_t* host = nullptr;
  cumem_resource_t* limit = nullptr;  // 4096 bytes
  cumem_resource_t* adaptor = nullptr;
  Recorder recorder;
};

TEST_F(FailureCallback, ACallbackThatFreesMemoryGetsTheAllocationOnItsRetry) {
  make();
  cumem_buffer_t* held = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 3000, nullptr, &held));
  recorder.to_free = held;
  recorder.action = CUMEM_FAILURE_RETRY;
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 2000, nullptr, &b));
  ASSERT_EQ(recorder.calls.size(), 1u);
  const cumem_failure_info_t& info = recorder.calls[0];
  EXPECT_EQ(info.struct_size, sizeof(cumem_failure_info_t));
  EXPECT_EQ(info.attempt, 1u);
  EXPECT_EQ(info.size, 2000u);
  EXPECT_EQ(info.stream, nullptr);
  EXPECT_EQ(recorder.statistics[0].bytes_in_use, 3000u) << "the adaptor's statistics then";
  EXPECT_EQ(recorder.statistics[0].live_allocations, 1u);
  EXPECT_NE(recorder.messages[0].find("the limit of 4096 bytes"), std::string::npos)
      << recorder.messages[0];
  const cumem_resource_statistics_t s = statistics_of(adaptor);
  EXPECT_EQ(s.bytes_in_use, 2000u);
  EXPECT_EQ(s.total_allocations, 2u);
  cumem_buffer_release(b);
}

TEST_F(FailureCallback, ACallbackThatGivesUpFailsTheAllocation) {
  make();
  cumem_buffer_t* held = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 3000, nullptr, &held));
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(adaptor, 2000, nullptr, &p),
                     CUMEM_ERROR_OUT_OF_MEMORY, "the failure callback gave up (called 1 time)");
  EXPECT_NE(std::string(cumem_last_error_message()).find("the limit of 4096 bytes"), std::string::npos)
      << "the upstream's reason is kept: " << cumem_last_error_message();
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(recorder.calls.size(), 1u);
  EXPECT_EQ(statistics_of(adaptor).bytes_in_use, 3000u);
  // Other values than the two actions count as giving up.
  recorder.action = static_cast<cumem_failure_action_t>(42);
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(adaptor, 2000, nullptr, &p),
                     CUMEM_ERROR_OUT_OF_MEMORY, "gave up");
  cumem_buffer_release(held);
}

TEST_F(FailureCallback, RetriesAreBoundedByMaxRetries) {
  make(3);
  cumem_buffer_t* held = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 3000, nullptr, &held));
  recorder.action = CUMEM_FAILURE_RETRY;  // always, without freeing anything
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(adaptor, 2000, nullptr, &p),
                     CUMEM_ERROR_OUT_OF_MEMORY,
                     "the failure callback asked for 3 retries, the most max_retries allows");
  ASSERT_EQ(recorder.calls.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(recorder.calls[i].attempt, i + 1);
  cumem_buffer_release(held);
}

TEST_F(FailureCallback, MaxRetriesZeroIsTheDefault) {
  make(0);
  cumem_buffer_t* held = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 3000, nullptr, &held));
  recorder.action = CUMEM_FAILURE_RETRY;
  void* p = nullptr;
  EXPECT_EQ(cumem_resource_allocate_raw(adaptor, 2000, nullptr, &p), CUMEM_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(recorder.calls.size(), CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES);
  cumem_buffer_release(held);
}

// An allocation from the adaptor inside its own callback that runs out of
// memory fails at once instead of calling the callback again.
TEST_F(FailureCallback, NoNestedCallbackForAllocationsInsideTheCallback) {
  make();
  cumem_buffer_t* held = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 3000, nullptr, &held));
  recorder.allocate_from = adaptor;
  void* p = nullptr;
  EXPECT_EQ(cumem_resource_allocate_raw(adaptor, 2000, nullptr, &p), CUMEM_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(recorder.calls.size(), 1u);
  EXPECT_EQ(recorder.nested_status, CUMEM_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(recorder.nested_message.find("inside this adaptor's own failure callback"),
            std::string::npos)
      << recorder.nested_message;
  cumem_buffer_release(held);
}

TEST_F(FailureCallback, DestroyRunsOnceWhenTheAdaptorGoes) {
  make();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 100, nullptr, &b));
  cumem_resource_release(adaptor);
  adaptor = nullptr;
  EXPECT_EQ(recorder.destroyed, 0) << "the buffer keeps the adaptor alive";
  cumem_buffer_release(b);
  EXPECT_EQ(recorder.destroyed, 1);
}

TEST_F(FailureCallback, PropertiesAreTheUpstreamsWithItsOwnKind) {
  make();
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(adaptor, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_FAILURE_CALLBACK);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.is_pool, CUMEM_FALSE);
  EXPECT_EQ(p.device_id, -1);
}

TEST_F(FailureCallback, BadCallbacksAreRefusedAndNeverDestroyed) {
  cumem_failure_callback_t c = CUMEM_FAILURE_CALLBACK_INIT;
  c.destroy = destroyed;
  c.user_data = &recorder;
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_failure_callback_resource_create(limit, &c, &r),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'callback->callback' must not be NULL");
  c.callback = record;
  c.max_retries = CUMEM_FAILURE_CALLBACK_MAX_RETRIES + 1;
  CUMEM_EXPECT_ERROR(cumem_failure_callback_resource_create(limit, &c, &r),
                     CUMEM_ERROR_INVALID_ARGUMENT, "callback->max_retries 1025 is above 1024");
  c.max_retries = CUMEM_FAILURE_CALLBACK_MAX_RETRIES;
  cumem_failure_callback_t zero;
  std::memset(&zero, 0, sizeof zero);
  CUMEM_EXPECT_ERROR(cumem_failure_callback_resource_create(limit, &zero, &r),
                     CUMEM_ERROR_INVALID_ARGUMENT, "cumem_failure_callback_init()");
  CUMEM_EXPECT_ERROR(cumem_failure_callback_resource_create(limit, nullptr, &r),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'callback'");
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(recorder.destroyed, 0);
  CUMEM_ASSERT_OK(cumem_failure_callback_resource_create(limit, &c, &r));
  cumem_resource_release(r);
  EXPECT_EQ(recorder.destroyed, 1);
}

}  // namespace
