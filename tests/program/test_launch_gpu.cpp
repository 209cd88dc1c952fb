// cumem_launch on device 0: every kind of argument, checked by copying the
// results back; the configuration checks and the limits they name; dynamic
// shared memory above the default allowance; clusters; kernel attributes.
#include <cstring>

#include "program_fixture.hpp"

namespace {

// Same layout on host and device (NVRTC follows the host ABI).
struct Params {
  int a;
  float b;
  double c;
  char tag;
};

const char* const every_kind_source = R"(
struct Params { int a; float b; double c; char tag; };
extern "C" __global__ void every_kind(int* ints, float* floats, double* doubles, float* pinned,
                                      size_t n, int i, float f, double d, Params p) {
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t < n) {
    ints[t] = i + (int)t + p.a + p.tag;
    floats[t] = f * (float)t + p.b;
    doubles[t] = d * (double)t + p.c;
    pinned[t] = pinned[t] * 2.0f;
  }
}
)";

TEST_F(ProgramTest, LaunchesWithEveryKindOfArgument) {
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(every_kind_source, "every_kind", &kernel));
  size_t n = 1000;  // not a multiple of the block: the bounds check matters
  cumem_buffer_t* ints = allocate(device_mr, n * sizeof(int));
  cumem_buffer_t* floats = allocate(device_mr, n * sizeof(float));
  cumem_buffer_t* doubles = allocate(device_mr, n * sizeof(double));
  cumem_buffer_t* pinned = allocate(pinned_mr, n * sizeof(float));
  ASSERT_TRUE(ints && floats && doubles && pinned);
  auto* pinned_host = static_cast<float*>(ptr(pinned));
  for (size_t t = 0; t < n; ++t) pinned_host[t] = static_cast<float>(t);

  void* ints_ptr = ptr(ints);
  void* floats_ptr = ptr(floats);
  void* doubles_ptr = ptr(doubles);
  void* pinned_ptr = pinned_host;
  int i = 5;
  float f = 0.5f;
  double d = 0.25;
  Params p{100, 1.25f, -3.5, 'A'};
  void* args[] = {&ints_ptr, &floats_ptr, &doubles_ptr, &pinned_ptr, &n, &i, &f, &d, &p};
  const cumem_launch_config_t config = config_1d(n);
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &config, args, 9));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));

  const std::vector<int> got_i = read<int>(ints);
  const std::vector<float> got_f = read<float>(floats);
  const std::vector<double> got_d = read<double>(doubles);
  for (size_t t = 0; t < n; ++t) {
    ASSERT_EQ(got_i[t], 5 + static_cast<int>(t) + 100 + 'A') << "t=" << t;
    ASSERT_EQ(got_f[t], 0.5f * static_cast<float>(t) + 1.25f) << "t=" << t;
    ASSERT_EQ(got_d[t], 0.25 * static_cast<double>(t) - 3.5) << "t=" << t;
    ASSERT_EQ(pinned_host[t], 2.0f * static_cast<float>(t)) << "t=" << t;
  }
}

TEST_F(ProgramTest, NullStreamIsTheLegacyDefaultStream) {
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(add_one_source, "add_one", &kernel));
  size_t n = 300;
  cumem_buffer_t* data = iota_floats(n);
  ASSERT_NE(data, nullptr);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));  // the upload ran on `stream`
  void* data_ptr = ptr(data);
  void* args[] = {&data_ptr, &n};
  const cumem_launch_config_t config = config_1d(n, 128);
  CUMEM_ASSERT_OK(cumem_launch(kernel, nullptr, &config, args, 2));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  expect_add_one_ran(data, n);
}

TEST_F(ProgramTest, BadConfigurationsNameTheLimit) {
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(add_one_source, "add_one", &kernel));
  cumem_buffer_t* data = allocate(device_mr, 1 << 20);
  ASSERT_NE(data, nullptr);
  void* data_ptr = ptr(data);
  size_t n = 0;  // the kernel touches nothing, whatever the configuration
  void* args[] = {&data_ptr, &n};
  const cumem_launch_config_t good = config_1d(256);

  // A 0 dimension (the zero-filled default) counts as 1.
  cumem_launch_config_t c = good;
  c.grid[0] = 0;
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &c, args, 2));
  c = good;
  c.block[1] = 0;
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &c, args, 2));
  cumem_launch_config_t zero;
  std::memset(&zero, 0, sizeof zero);
  zero.struct_size = sizeof zero;  // one block of one thread
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &zero, args, 2));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  c = good;
  c.block[0] = 64;
  c.block[1] = 32;  // 2048 threads, each dimension within the device's limits
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     "maximum threads per block");
  EXPECT_NE(std::string(cumem_last_error_message()).find("2048"), std::string::npos);
  c = good;
  c.block[0] = 2048;
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     "maximum block x dimension");
  c = good;
  c.grid[1] = 1u << 20;
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     "maximum grid y dimension");
  c = good;
  c.shared_memory_bytes = static_cast<uint32_t>(props.max_shared_memory_per_block_optin) + 1;
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     "opt-in");
  EXPECT_NE(std::string(cumem_last_error_message())
                .find(std::to_string(props.max_shared_memory_per_block_optin)),
            std::string::npos)
      << cumem_last_error_message();
  c = good;
  c.cluster[0] = 2;  // y and z left 0
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     "zero dimension");
  c = good;
  c.grid[0] = 4;
  c.cluster[0] = 3;
  c.cluster[1] = 1;
  c.cluster[2] = 1;
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     props.cluster_launch ? "not divisible" : "cluster launch");
  // A good configuration still launches after all that.
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &good, args, 2));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
}

TEST_F(ProgramTest, LargeDynamicSharedMemoryIsOptedInto) {
  const char* source = R"(
extern "C" __global__ void use_shared(unsigned* out, unsigned words) {
  extern __shared__ unsigned smem[];
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) smem[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned sum = 0;
    for (unsigned i = 0; i < words; ++i) sum += smem[i];
    out[0] = sum;
  }
}
)";
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(source, "use_shared", &kernel));
  cumem_kernel_attributes_t before = CUMEM_KERNEL_ATTRIBUTES_INIT;
  CUMEM_ASSERT_OK(cumem_kernel_get_attributes(kernel, &before));
  const uint32_t bytes =
      static_cast<uint32_t>(props.max_shared_memory_per_block_optin - before.shared_size_bytes);
  if (static_cast<int32_t>(bytes) <= before.max_dynamic_shared_size_bytes)
    GTEST_SKIP() << "the device's opt-in limit is not above the default allowance";
  cumem_buffer_t* out = allocate(device_mr, sizeof(unsigned));
  ASSERT_NE(out, nullptr);
  void* out_ptr = ptr(out);
  unsigned words = bytes / 4;
  void* args[] = {&out_ptr, &words};
  cumem_launch_config_t c = config_1d(256);
  c.shared_memory_bytes = bytes;
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &c, args, 2));
  const uint64_t expected = uint64_t{words} * (words - 1) / 2;
  EXPECT_EQ(read<unsigned>(out).at(0), static_cast<unsigned>(expected));
  cumem_kernel_attributes_t after = CUMEM_KERNEL_ATTRIBUTES_INIT;
  CUMEM_ASSERT_OK(cumem_kernel_get_attributes(kernel, &after));
  EXPECT_GE(after.max_dynamic_shared_size_bytes, static_cast<int32_t>(bytes));
}

TEST_F(ProgramTest, ClustersLaunchWhereSupported) {
  if (!props.cluster_launch) GTEST_SKIP() << "device 0 has no thread-block cluster launch";
  const char* source = R"(
extern "C" __global__ void cluster_rank(unsigned* out) {
  unsigned rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) out[blockIdx.x] = rank;
}
)";
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(source, "cluster_rank", &kernel));
  cumem_buffer_t* out = allocate(device_mr, 8 * sizeof(unsigned));
  ASSERT_NE(out, nullptr);
  void* out_ptr = ptr(out);
  void* args[] = {&out_ptr};
  cumem_launch_config_t c = CUMEM_LAUNCH_CONFIG_INIT;
  c.grid[0] = 8;
  c.block[0] = 32;
  c.cluster[0] = 2;
  c.cluster[1] = 1;
  c.cluster[2] = 1;
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &c, args, 1));
  const std::vector<unsigned> ranks = read<unsigned>(out);
  for (unsigned b = 0; b < 8; ++b) EXPECT_EQ(ranks[b], b % 2) << "block " << b;
}

TEST_F(ProgramTest, KernelAttributesAreSane) {
  const char* source = R"(
extern "C" __global__ void with_static_shared(float* out) {
  __shared__ float tile[256];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[255 - threadIdx.x];
}
)";
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(source, "with_static_shared", &kernel));
  cumem_kernel_attributes_t a = CUMEM_KERNEL_ATTRIBUTES_INIT;
  CUMEM_ASSERT_OK(cumem_kernel_get_attributes(kernel, &a));
  EXPECT_GT(a.max_threads_per_block, 0);
  EXPECT_LE(a.max_threads_per_block, props.max_threads_per_block);
  EXPECT_GE(a.shared_size_bytes, 1024);
  EXPECT_GT(a.num_regs, 0);
  EXPECT_EQ(a.binary_version, std::stoi(sm()));
  EXPECT_GT(a.ptx_version, 0);
  EXPECT_GE(a.local_size_bytes, 0);
  EXPECT_GE(a.const_size_bytes, 0);
  EXPECT_GT(a.max_dynamic_shared_size_bytes, 0);

  // An older caller's smaller struct: only the fields it covers are written.
  cumem_kernel_attributes_t small = CUMEM_KERNEL_ATTRIBUTES_INIT;
  small.struct_size = offsetof(cumem_kernel_attributes_t, shared_size_bytes);
  small.shared_size_bytes = -7;
  CUMEM_ASSERT_OK(cumem_kernel_get_attributes(kernel, &small));
  EXPECT_EQ(small.max_threads_per_block, a.max_threads_per_block);
  EXPECT_EQ(small.shared_size_bytes, -7);

  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_kernel_native(kernel, &native));
  EXPECT_NE(native, nullptr);
}

TEST_F(ProgramTest, StreamOfAnotherDeviceIsRefused) {
  if (device_count < 2) GTEST_SKIP() << "needs two devices";
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(add_one_source, "add_one", &kernel));
  cumem_device_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(1, &other));
  cumem_stream_t* other_stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(other, nullptr, &other_stream));
  void* data_ptr = nullptr;
  size_t n = 0;
  void* args[] = {&data_ptr, &n};
  const cumem_launch_config_t c = CUMEM_LAUNCH_CONFIG_INIT;
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, other_stream, &c, args, 2), CUMEM_ERROR_WRONG_DEVICE,
                     "device 1");
  cumem_stream_release(other_stream);
  cumem_device_release(other);
}

}  // namespace
