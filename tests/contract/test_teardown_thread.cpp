// Failing libcumem calls from the destructor of a worker thread's
// thread_local object, which runs after libcumem's own thread-local storage
// of that thread may have been torn down: the calls must not crash, and the
// message must be readable there.
#include <cstdlib>
#include <string>
#include <thread>

#include "test_util.hpp"

namespace {

// What the destructor saw; written on the worker thread before it ends,
// read after join().
std::string seen_status;
std::string seen_message;

struct FailsInDestructor {
  ~FailsInDestructor() {
    size_t n = 0;
    cumem_buffer_size(nullptr, &n);
    // A second, longer message: it cannot fit where a destroyed
    // std::string's buffer was, so such a store would reallocate (and free
    // its freed buffer again).
    cumem_host_resource_options_t options = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
    options.alignment = 3;
    cumem_resource_t* resource = nullptr;
    const cumem_status_t s = cumem_host_resource_create(&options, &resource);
    seen_status = cumem_status_string(s);
    seen_message = cumem_last_error_message();
  }
  void touch() {}
};

thread_local FailsInDestructor fails_in_destructor;

}  // namespace

TEST(Teardown, FailingCallsInAThreadLocalDestructorWork) {
  std::thread([] {
    // Constructed first, so destroyed after whatever libcumem's first
    // failure below registers for this thread (destructors run in reverse).
    fails_in_destructor.touch();
    size_t n = 0;
    EXPECT_EQ(cumem_buffer_size(nullptr, &n), CUMEM_ERROR_INVALID_ARGUMENT);
  }).join();
  EXPECT_EQ(seen_status, "CUMEM_ERROR_INVALID_ARGUMENT");
  EXPECT_NE(seen_message.find("cumem_host_resource_create"), std::string::npos) << seen_message;
  EXPECT_NE(seen_message.find("alignment"), std::string::npos) << seen_message;
}

// Messages longer than the thread-local store are cut, and say so. The
// driver path named in $CUMEM_LIBCUDA is quoted in the message, so a long
// path makes a long message. This must be the first driver use of the
// process (the driver is loaded once), so no other test here uses it.
TEST(Teardown, LongMessagesAreTruncatedWithAMarker) {
  const std::string path = "/nonexistent/" + std::string(40000, 'a') + "/libcuda.so.1";
  ASSERT_EQ(setenv("CUMEM_LIBCUDA", path.c_str(), 1), 0);
  int32_t count = -1;
  EXPECT_EQ(cumem_device_count(&count), CUMEM_ERROR_NO_DRIVER);
  const std::string message = cumem_last_error_message();
  EXPECT_LT(message.size(), 16384u);
  EXPECT_GT(message.size(), 16000u) << "the store should be used to its end";
  EXPECT_EQ(message.rfind("cumem_device_count: cannot load the CUDA driver library '/nonexistent/aaa", 0), 0u)
      << message.substr(0, 200);
  const std::string marker = "[message truncated";
  EXPECT_NE(message.find(marker), std::string::npos) << message.substr(message.size() - 200);
  EXPECT_EQ(message.back(), ']') << message.substr(message.size() - 200);
}
