// A kernel that traps leaves the device's context unusable (a sticky
// error). Every later call must say so clearly and none may crash or hang.
// The test runs in a child process (a death test), since the fault ruins
// the context of the process that meets it.
#include <cstdlib>
#include <string>

#include "test_util.hpp"

namespace {

const char* const trap_source = R"(
extern "C" __global__ void trap_now(int* p) { if (p) __trap(); }
)";

// Runs in the child; exits 0 only when every check held.
void fault_then_keep_calling() {
  cumem_device_t* device = nullptr;
  if (cumem_device_get(0, &device) != CUMEM_SUCCESS) std::exit(2);
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* pool = nullptr;
  cumem_program_t* program = nullptr;
  cumem_library_t* library = nullptr;
  cumem_kernel_t* kernel = nullptr;
  cumem_buffer_t* buffer = nullptr;
  if (cumem_stream_create(device, nullptr, &stream) != CUMEM_SUCCESS ||
      cumem_device_resource_create(device, nullptr, &pool) != CUMEM_SUCCESS ||
      cumem_resource_allocate(pool, 4096, stream, &buffer) != CUMEM_SUCCESS ||
      cumem_program_compile(device, trap_source, nullptr, &program) != CUMEM_SUCCESS ||
      cumem_program_load(program, &library) != CUMEM_SUCCESS ||
      cumem_library_get_kernel(library, "trap_now", &kernel) != CUMEM_SUCCESS)
    std::exit(3);
  void* p = nullptr;
  cumem_buffer_ptr(buffer, &p);
  void* args[] = {&p};
  cumem_launch_config_t config = CUMEM_LAUNCH_CONFIG_INIT;
  if (cumem_launch(kernel, stream, &config, args, 1) != CUMEM_SUCCESS) std::exit(4);
  const auto lost = [](cumem_status_t s) {
    return s == CUMEM_ERROR_DRIVER &&
           std::string(cumem_last_error_message()).find("context is lost") != std::string::npos;
  };
  if (!lost(cumem_stream_synchronize(stream))) std::exit(5);
  // Later calls on the device report it as well.
  if (!lost(cumem_device_synchronize(device))) std::exit(6);
  const cumem_status_t s = cumem_buffer_fill(buffer, 1, 1, stream);
  if (s != CUMEM_SUCCESS && !lost(s)) std::exit(7);
  if (!lost(cumem_stream_synchronize(stream))) std::exit(8);
  // Releasing everything works and returns.
  cumem_buffer_release(buffer);
  cumem_kernel_release(kernel);
  cumem_library_release(library);
  cumem_program_release(program);
  cumem_resource_release(pool);
  cumem_stream_release(stream);
  cumem_device_release(device);
  std::exit(0);
}

TEST(StickyError, TrapIsReportedAndNothingCrashesOrHangs) {
  int32_t n = 0;
  if (cumem_device_count(&n) != CUMEM_SUCCESS || n == 0)
    GTEST_SKIP() << "no CUDA device: " << cumem_last_error_message();
  int32_t major = 0, minor = 0;
  if (cumem_nvrtc_version(&major, &minor) != CUMEM_SUCCESS)
    GTEST_SKIP() << "no NVRTC: " << cumem_last_error_message();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_then_keep_calling(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
