/* memory_ops with memory pools, with libcumem's C API: the same kernel and
 * checks as memory_ops.c, with managed (unified) memory that prefers the
 * device instead of device memory, and pinned host memory from a
 * stream-ordered pool instead of cuMemHostAlloc. Managed memory is
 * prefetched to the device before the launch and back to the host before
 * the host reads it. Exits non-zero on any error or mismatch, and with 77
 * (what test harnesses read as "skipped") where there is no GPU. */
#include <cumem/cumem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1024
#define BLOCK 256

static const char* const source =
    "extern \"C\" __global__ void memory_ops(float* device_data, float* pinned_data, size_t N) {\n"
    "  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    "  if (i < N) {\n"
    "    device_data[i] += 1.0f;\n"
    "    pinned_data[i] *= 3.0f;\n"
    "  }\n"
    "}\n";

/* On failure: print the call, the status and the library's message, and
 * go to the cleanup at the end of main. */
#define CHECK(call)                                                                   \
  do {                                                                                \
    cumem_status_t status_ = (call);                                                  \
    if (status_ != CUMEM_SUCCESS) {                                                   \
      fprintf(stderr, "%s failed: %s: %s\n", #call, cumem_status_string(status_),     \
              cumem_last_error_message());                                            \
      goto cleanup;                                                                   \
    }                                                                                 \
  } while (0)

/* Prints the check and returns 0 when all n values match, 1 otherwise. */
static int compare(const char* what, const float* got, const float* expected, int n) {
  for (int i = 0; i < n; ++i) {
    if (got[i] != expected[i]) {
      printf("%s: MISMATCH at %d: %g, expected %g\n", what, i, got[i], expected[i]);
      return 1;
    }
  }
  printf("%s: OK (%d values)\n", what, n);
  return 0;
}

int main(void) {
  int failed = 1;
  int32_t count = 0;
  cumem_device_t* device = NULL;
  cumem_stream_t* stream = NULL;
  cumem_program_t* program = NULL;
  cumem_library_t* library = NULL;
  cumem_kernel_t* kernel = NULL;
  cumem_resource_t* managed_mr = NULL;
  cumem_resource_t* pinned_mr = NULL;
  cumem_buffer_t* managed_buffer = NULL;
  cumem_buffer_t* pinned_buffer = NULL;
  cumem_buffer_t* new_managed_buffer = NULL;
  static float original_managed[N], original_pinned[N], plus_one[N], times_three[N];
  const size_t bytes = N * sizeof(float);
  const cumem_location_t on_device = {CUMEM_LOCATION_DEVICE, 0};
  const cumem_location_t on_host = {CUMEM_LOCATION_HOST, 0};

  const cumem_status_t counted = cumem_device_count(&count);
  if (counted != CUMEM_SUCCESS || count == 0) {
    printf("no CUDA device to run on (%s)\n",
           counted != CUMEM_SUCCESS ? cumem_last_error_message() : "the driver reports none");
    return 77;
  }
  CHECK(cumem_device_get(0, &device));
  CHECK(cumem_stream_create(device, NULL, &stream));

  CHECK(cumem_program_compile(device, source, NULL, &program));
  CHECK(cumem_program_load(program, &library));
  CHECK(cumem_library_get_kernel(library, "memory_ops", &kernel));

  cumem_managed_resource_options_t managed_options = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  managed_options.preferred_location = on_device;
  CHECK(cumem_managed_resource_create(device, &managed_options, &managed_mr));
  CHECK(cumem_pinned_resource_create(device, NULL, &pinned_mr));
  CHECK(cumem_resource_allocate(managed_mr, bytes, stream, &managed_buffer));
  CHECK(cumem_resource_allocate(pinned_mr, bytes, stream, &pinned_buffer));
  /* Stream-ordered allocations are usable by the host once the stream has
   * reached them. */
  CHECK(cumem_stream_synchronize(stream));

  void* managed_ptr = NULL;
  void* pinned_ptr = NULL;
  CHECK(cumem_buffer_ptr(managed_buffer, &managed_ptr));
  CHECK(cumem_buffer_ptr(pinned_buffer, &pinned_ptr));
  float* managed = managed_ptr;
  float* pinned = pinned_ptr;

  /* Random data, written directly: both kinds of memory are host-accessible. */
  srand(2024);
  for (int i = 0; i < N; ++i) {
    original_managed[i] = (float)rand() / (float)RAND_MAX;
    original_pinned[i] = (float)rand() / (float)RAND_MAX;
    plus_one[i] = original_managed[i] + 1.0f;
    times_three[i] = original_pinned[i] * 3.0f;
  }
  memcpy(managed, original_managed, bytes);
  memcpy(pinned, original_pinned, bytes);

  size_t n = N;
  void* args[] = {&managed_ptr, &pinned_ptr, &n};
  cumem_launch_config_t config = CUMEM_LAUNCH_CONFIG_INIT;
  config.grid[0] = (N + BLOCK - 1) / BLOCK;
  config.block[0] = BLOCK;
  CHECK(cumem_buffer_prefetch(managed_buffer, on_device, stream));
  CHECK(cumem_launch(kernel, stream, &config, args, 3));
  CHECK(cumem_buffer_prefetch(managed_buffer, on_host, stream));
  CHECK(cumem_stream_synchronize(stream));

  int mismatches = 0;
  mismatches += compare("managed_data[i] == original + 1", managed, plus_one, N);
  mismatches += compare("pinned_data[i] == original * 3", pinned, times_three, N);

  /* Managed -> pinned: the pinned buffer now holds the kernel's results. */
  memset(pinned, 0, bytes);
  CHECK(cumem_buffer_copy_to(managed_buffer, pinned_buffer, stream));
  CHECK(cumem_stream_synchronize(stream));
  mismatches += compare("pinned after copy from managed", pinned, plus_one, N);

  /* Pinned -> a new managed buffer, read on the host after a prefetch. */
  CHECK(cumem_resource_allocate(managed_mr, bytes, stream, &new_managed_buffer));
  CHECK(cumem_buffer_copy_to(pinned_buffer, new_managed_buffer, stream));
  CHECK(cumem_buffer_prefetch(new_managed_buffer, on_host, stream));
  CHECK(cumem_stream_synchronize(stream));
  void* new_managed_ptr = NULL;
  CHECK(cumem_buffer_ptr(new_managed_buffer, &new_managed_ptr));
  mismatches += compare("new managed buffer after copy from pinned", new_managed_ptr, plus_one, N);

  CHECK(cumem_buffer_close(new_managed_buffer, stream));
  CHECK(cumem_buffer_close(pinned_buffer, stream));
  CHECK(cumem_buffer_close(managed_buffer, stream));
  CHECK(cumem_stream_synchronize(stream));
  failed = mismatches != 0;
  printf("%s\n", failed ? "memory_pools: FAILED" : "memory_pools: all checks passed");

cleanup:
  cumem_buffer_release(new_managed_buffer);
  cumem_buffer_release(pinned_buffer);
  cumem_buffer_release(managed_buffer);
  cumem_resource_release(pinned_mr);
  cumem_resource_release(managed_mr);
  cumem_kernel_release(kernel);
  cumem_library_release(library);
  cumem_program_release(program);
  cumem_stream_release(stream);
  cumem_device_release(device);
  return failed;
}
