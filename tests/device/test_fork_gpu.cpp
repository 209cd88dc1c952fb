// fork() after CUDA was initialised (issue 17, item 12): in the child every
// call that needs the driver fails clearly with CUMEM_ERROR_NO_DRIVER and a
// message that says what to do; what needs no driver keeps working; objects
// inherited from the parent are released without touching the driver.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "gpu_fixture.hpp"

namespace {

// In the child: 0 when every expectation held, else the failing step.
int child(cumem_device_t* inherited_device, cumem_resource_t* inherited_pool) {
  cumem_device_t* d = nullptr;
  if (cumem_device_get(0, &d) != CUMEM_ERROR_NO_DRIVER) return 2;
  const std::string message = cumem_last_error_message();
  if (message.find("forked after CUDA was initialised") == std::string::npos ||
      message.find("exec") == std::string::npos) {
    std::fprintf(stderr, "message: %s\n", message.c_str());
    return 3;
  }
  int32_t count = -1;
  if (cumem_device_count(&count) != CUMEM_ERROR_NO_DRIVER) return 4;
  void* p = nullptr;
  if (cumem_resource_allocate_raw(inherited_pool, 64, nullptr, &p) != CUMEM_ERROR_NO_DRIVER)
    return 5;
  // Host memory, the host shared resource and descriptors work.
  cumem_resource_t* host = nullptr;
  cumem_buffer_t *a = nullptr, *b = nullptr;
  if (cumem_host_resource_create(nullptr, &host) != CUMEM_SUCCESS) return 6;
  if (cumem_resource_allocate(host, 4096, nullptr, &a) != CUMEM_SUCCESS ||
      cumem_resource_allocate(host, 4096, nullptr, &b) != CUMEM_SUCCESS ||
      cumem_buffer_fill(a, 0x11, 1, nullptr) != CUMEM_SUCCESS ||
      cumem_buffer_copy_to(a, b, nullptr) != CUMEM_SUCCESS)
    return 7;
  cumem_resource_t* shared = nullptr;
  cumem_buffer_t* s = nullptr;
  cumem_ipc_descriptor_t desc;
  cumem_allocation_handle_t* h = nullptr;
  if (cumem_host_shared_resource_create(1 << 20, &shared) != CUMEM_SUCCESS ||
      cumem_resource_allocate(shared, 4096, nullptr, &s) != CUMEM_SUCCESS ||
      cumem_buffer_get_ipc_descriptor(s, &desc) != CUMEM_SUCCESS ||
      cumem_resource_get_allocation_handle(shared, &h) != CUMEM_SUCCESS) {
    std::fprintf(stderr, "host shared: %s\n", cumem_last_error_message());
    return 8;
  }
  cumem_allocation_handle_release(h);
  cumem_buffer_release(s);
  cumem_resource_release(shared);
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_resource_release(host);
  // The parent's objects go without driver calls (and without crashing).
  if (cumem_resource_release(inherited_pool) != CUMEM_SUCCESS) return 9;
  if (cumem_device_release(inherited_device) != CUMEM_SUCCESS) return 10;
  return 0;
}

class ForkGpu : public GpuTest {};

TEST_F(ForkGpu, AChildForkedAfterCudaSaysSoAndKeepsItsHostFunctions) {
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &pool));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(pool, 1 << 20, nullptr, &p));
  cumem_device_t* extra = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &extra));
  const pid_t pid = fork();
  if (pid == 0) _exit(child(extra, pool));
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's failing step";
  // The parent's CUDA is unaffected.
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(pool, p, 1 << 20, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  cumem_device_release(extra);
  cumem_resource_release(pool);
}

}  // namespace
