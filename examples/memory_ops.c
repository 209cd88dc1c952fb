/* The seed example, cuda.core's memory_ops, with libcumem's C API: compile a
 * kernel at run time, allocate device memory (a stream-ordered pool) and
 * pinned host memory (cuMemHostAlloc), launch, copy between them, and check
 * every result. Exits non-zero on any error or mismatch, and with 77 (what
 * test harnesses read as "skipped") where there is no GPU to run on. */
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
  cumem_resource_t* device_mr = NULL;
  cumem_resource_t* pinned_mr = NULL;
  cumem_buffer_t* device_buffer = NULL;
  cumem_buffer_t* pinned_buffer = NULL;
  cumem_buffer_t* staging = NULL; /* pinned, for copies to and from device memory */
  cumem_buffer_t* new_device_buffer = NULL;
  static float original_device[N], original_pinned[N], plus_one[N], times_three[N];
  const size_t bytes = N * sizeof(float);

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

  /* Device memory from the device's memory resource: its default pool
   * unless the program chose another (cumem_device_set_memory_resource). */
  CHECK(cumem_device_get_memory_resource(device, &device_mr));
  CHECK(cumem_legacy_pinned_resource_create(device, &pinned_mr));
  CHECK(cumem_resource_allocate(device_mr, bytes, stream, &device_buffer));
  CHECK(cumem_resource_allocate(pinned_mr, bytes, stream, &pinned_buffer));
  CHECK(cumem_resource_allocate(pinned_mr, bytes, stream, &staging));

  void* device_ptr = NULL;
  void* pinned_ptr = NULL; /* mapped pinned memory: the host pointer works on the device */
  void* staging_ptr = NULL;
  CHECK(cumem_buffer_ptr(device_buffer, &device_ptr));
  CHECK(cumem_buffer_ptr(pinned_buffer, &pinned_ptr));
  CHECK(cumem_buffer_ptr(staging, &staging_ptr));
  float* pinned = pinned_ptr;
  float* staged = staging_ptr;

  /* Random data: the device buffer gets it through the staging copy, the
   * pinned buffer directly through its host pointer. */
  srand(2024);
  for (int i = 0; i < N; ++i) {
    original_device[i] = (float)rand() / (float)RAND_MAX;
    original_pinned[i] = (float)rand() / (float)RAND_MAX;
    plus_one[i] = original_device[i] + 1.0f;
    times_three[i] = original_pinned[i] * 3.0f;
  }
  memcpy(staged, original_device, bytes);
  memcpy(pinned, original_pinned, bytes);
  CHECK(cumem_buffer_copy_to(staging, device_buffer, stream));

  size_t n = N;
  void* args[] = {&device_ptr, &pinned_ptr, &n};
  cumem_launch_config_t config = CUMEM_LAUNCH_CONFIG_INIT;
  config.grid[0] = (N + BLOCK - 1) / BLOCK;
  config.block[0] = BLOCK;
  CHECK(cumem_launch(kernel, stream, &config, args, 3));
  CHECK(cumem_stream_synchronize(stream));

  int mismatches = 0;
  CHECK(cumem_buffer_copy_to(device_buffer, staging, stream));
  CHECK(cumem_stream_synchronize(stream));
  mismatches += compare("device_data[i] == original + 1", staged, plus_one, N);
  mismatches += compare("pinned_data[i] == original * 3", pinned, times_three, N);

  /* Device -> pinned: the pinned buffer now holds the device results. */
  memset(pinned, 0, bytes);
  CHECK(cumem_buffer_copy_to(device_buffer, pinned_buffer, stream));
  CHECK(cumem_stream_synchronize(stream));
  mismatches += compare("pinned after copy from device", pinned, plus_one, N);

  /* Pinned -> a new device buffer, read back through the cleared staging buffer. */
  CHECK(cumem_resource_allocate(device_mr, bytes, stream, &new_device_buffer));
  CHECK(cumem_buffer_copy_to(pinned_buffer, new_device_buffer, stream));
  memset(staged, 0, bytes);
  CHECK(cumem_buffer_copy_to(new_device_buffer, staging, stream));
  CHECK(cumem_stream_synchronize(stream));
  mismatches += compare("new device buffer after copy from pinned", staged, plus_one, N);

  CHECK(cumem_buffer_close(new_device_buffer, stream));
  CHECK(cumem_buffer_close(staging, stream));
  CHECK(cumem_buffer_close(pinned_buffer, stream));
  CHECK(cumem_buffer_close(device_buffer, stream));
  CHECK(cumem_stream_synchronize(stream));
  failed = mismatches != 0;
  printf("%s\n", failed ? "memory_ops: FAILED" : "memory_ops: all checks passed");

cleanup:
  cumem_buffer_release(new_device_buffer);
  cumem_buffer_release(staging);
  cumem_buffer_release(pinned_buffer);
  cumem_buffer_release(device_buffer);
  cumem_resource_release(pinned_mr);
  cumem_resource_release(device_mr);
  cumem_kernel_release(kernel);
  cumem_library_release(library);
  cumem_program_release(program);
  cumem_stream_release(stream);
  cumem_device_release(device);
  return failed;
}
