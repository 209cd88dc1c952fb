// Programs, libraries, kernels and launch on device 0: compile with NVRTC,
// load, launch with every kind of argument and check the results by copying
// them back; and every error the launch checks name.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

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

const char* const add_one_source = R"(
extern "C" __global__ void add_one(float* data, size_t n) {
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t < n) data[t] += 1.0f;
}
)";

cumem_launch_config_t config_1d(size_t n, uint32_t block = 256) {
  cumem_launch_config_t c = CUMEM_LAUNCH_CONFIG_INIT;
  c.grid[0] = static_cast<uint32_t>((n + block - 1) / block);
  c.block[0] = block;
  return c;
}

class ProgramTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CUMEM_ASSERT_OK(cumem_device_get_properties(device, &props));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
    CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &device_mr));
    CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned_mr));
  }
  void TearDown() override {
    for (cumem_kernel_t* k : kernels) cumem_kernel_release(k);
    for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
    cumem_resource_release(pinned_mr);
    cumem_resource_release(device_mr);
    cumem_stream_release(stream);
    GpuTest::TearDown();
  }

  std::string sm() const {
    return std::to_string(props.compute_capability_major * 10 + props.compute_capability_minor);
  }

  cumem_buffer_t* allocate(cumem_resource_t* mr, size_t bytes) {
    cumem_buffer_t* b = nullptr;
    const cumem_status_t s = cumem_resource_allocate(mr, bytes, stream, &b);
    EXPECT_EQ(s, CUMEM_SUCCESS) << cumem_last_error_message();
    if (b) buffers.push_back(b);
    return b;
  }

  static void* ptr(const cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    return p;
  }

  // Copies host values into a buffer through a pinned staging buffer.
  template <class T>
  void write(cumem_buffer_t* dst, const std::vector<T>& values) {
    cumem_buffer_t* staging = allocate(pinned_mr, values.size() * sizeof(T));
    ASSERT_NE(staging, nullptr);
    std::memcpy(ptr(staging), values.data(), values.size() * sizeof(T));
    CUMEM_ASSERT_OK(cumem_buffer_copy_to(staging, dst, stream));
  }

  // Copies a whole buffer back to the host through a pinned staging buffer.
  template <class T>
  std::vector<T> read(const cumem_buffer_t* src) {
    size_t size = 0;
    EXPECT_EQ(cumem_buffer_size(src, &size), CUMEM_SUCCESS);
    std::vector<T> out(size / sizeof(T));
    cumem_buffer_t* staging = allocate(pinned_mr, size);
    if (!staging) return out;
    EXPECT_EQ(cumem_buffer_copy_to(src, staging, stream), CUMEM_SUCCESS)
        << cumem_last_error_message();
    EXPECT_EQ(cumem_stream_synchronize(stream), CUMEM_SUCCESS) << cumem_last_error_message();
    std::memcpy(out.data(), ptr(staging), size);
    return out;
  }

  // Compiles, loads and gets one kernel; the program and library handles
  // are released at once (the kernel keeps what it needs alive).
  void build(const char* source, const char* name, cumem_kernel_t** out,
             const cumem_program_options_t* options = nullptr) {
    cumem_program_t* program = nullptr;
    cumem_library_t* library = nullptr;
    CUMEM_ASSERT_OK(cumem_program_compile(device, source, options, &program));
    const cumem_status_t loaded = cumem_program_load(program, &library);
    cumem_program_release(program);
    CUMEM_ASSERT_OK(loaded);
    const cumem_status_t got = cumem_library_get_kernel(library, name, out);
    cumem_library_release(library);
    CUMEM_ASSERT_OK(got);
    kernels.push_back(*out);
  }

  // A device buffer of n floats holding 0, 1, 2, ...
  cumem_buffer_t* iota_floats(size_t n) {
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i);
    cumem_buffer_t* b = allocate(device_mr, n * sizeof(float));
    if (b) write(b, values);
    return b;
  }

  void expect_add_one_ran(cumem_buffer_t* data, size_t n) {
    const std::vector<float> out = read<float>(data);
    ASSERT_EQ(out.size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(i) + 1.0f) << "i=" << i;
  }

  cumem_device_properties_t props = CUMEM_DEVICE_PROPERTIES_INIT;
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* device_mr = nullptr;
  cumem_resource_t* pinned_mr = nullptr;
  std::vector<cumem_buffer_t*> buffers;
  std::vector<cumem_kernel_t*> kernels;
};

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

TEST_F(ProgramTest, NameExpressionsGiveTemplateKernels) {
  const char* source = R"(
template <class T> __global__ void scale(T* data, T factor, size_t n) {
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t < n) data[t] *= factor;
}
)";
  const char* expressions[] = {"scale<float>", "scale<double>"};
  cumem_program_options_t options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.name_expressions = expressions;
  options.num_name_expressions = 2;
  cumem_program_t* program = nullptr;
  CUMEM_ASSERT_OK(cumem_program_compile(device, source, &options, &program));
  const char* float_name = nullptr;
  const char* double_name = nullptr;
  CUMEM_ASSERT_OK(cumem_program_lowered_name(program, "scale<float>", &float_name));
  CUMEM_ASSERT_OK(cumem_program_lowered_name(program, "scale<double>", &double_name));
  EXPECT_NE(std::string(float_name).find("scale"), std::string::npos) << float_name;
  EXPECT_STRNE(float_name, double_name);
  const char* untouched = "sentinel";
  CUMEM_EXPECT_ERROR(cumem_program_lowered_name(program, "scale<int>", &untouched),
                     CUMEM_ERROR_NOT_FOUND, "scale<int>");
  EXPECT_STREQ(untouched, "sentinel");

  cumem_library_t* library = nullptr;
  CUMEM_ASSERT_OK(cumem_program_load(program, &library));
  cumem_kernel_t* scale_float = nullptr;
  cumem_kernel_t* scale_double = nullptr;
  CUMEM_ASSERT_OK(cumem_library_get_kernel(library, float_name, &scale_float));
  kernels.push_back(scale_float);
  CUMEM_ASSERT_OK(cumem_library_get_kernel(library, double_name, &scale_double));
  kernels.push_back(scale_double);
  // The unmangled template name is not a kernel.
  cumem_kernel_t* none = nullptr;
  CUMEM_EXPECT_ERROR(cumem_library_get_kernel(library, "scale", &none), CUMEM_ERROR_NOT_FOUND,
                     "scale");
  cumem_library_release(library);
  cumem_program_release(program);

  size_t n = 512;
  std::vector<float> fv(n);
  std::vector<double> dv(n);
  for (size_t i = 0; i < n; ++i) fv[i] = static_cast<float>(i), dv[i] = static_cast<double>(i);
  cumem_buffer_t* fb = allocate(device_mr, n * sizeof(float));
  cumem_buffer_t* db = allocate(device_mr, n * sizeof(double));
  ASSERT_TRUE(fb && db);
  write(fb, fv);
  write(db, dv);
  void* fp = ptr(fb);
  void* dp = ptr(db);
  float ff = 3.0f;
  double df = -0.5;
  void* fargs[] = {&fp, &ff, &n};
  void* dargs[] = {&dp, &df, &n};
  const cumem_launch_config_t config = config_1d(n);
  CUMEM_ASSERT_OK(cumem_launch(scale_float, stream, &config, fargs, 3));
  CUMEM_ASSERT_OK(cumem_launch(scale_double, stream, &config, dargs, 3));
  const std::vector<float> got_f = read<float>(fb);
  const std::vector<double> got_d = read<double>(db);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_f[i], 3.0f * static_cast<float>(i)) << "i=" << i;
    ASSERT_EQ(got_d[i], -0.5 * static_cast<double>(i)) << "i=" << i;
  }
}

TEST_F(ProgramTest, PtxIsLoadedAndJitCompiledByTheDriver) {
  cumem_program_options_t options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.code_type = CUMEM_CODE_PTX;
  cumem_program_t* program = nullptr;
  CUMEM_ASSERT_OK(cumem_program_compile(device, add_one_source, &options, &program));
  const void* code = nullptr;
  size_t size = 0;
  CUMEM_ASSERT_OK(cumem_program_code(program, &code, &size));
  ASSERT_GT(size, 1u);
  const char* text = static_cast<const char*>(code);
  EXPECT_EQ(text[size - 1], '\0') << "PTX comes with its terminating NUL";
  EXPECT_NE(std::string(text).find(".entry add_one"), std::string::npos);
  EXPECT_NE(std::string(text).find(".target sm_" + sm()), std::string::npos)
      << "PTX targets the device's architecture";
  cumem_library_t* library = nullptr;
  CUMEM_ASSERT_OK(cumem_program_load(program, &library));
  cumem_program_release(program);
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t got = cumem_library_get_kernel(library, "add_one", &kernel);
  cumem_library_release(library);
  CUMEM_ASSERT_OK(got);
  kernels.push_back(kernel);

  size_t n = 1024;
  cumem_buffer_t* data = iota_floats(n);
  ASSERT_NE(data, nullptr);
  void* data_ptr = ptr(data);
  void* args[] = {&data_ptr, &n};
  const cumem_launch_config_t config = config_1d(n);
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &config, args, 2));
  expect_add_one_ran(data, n);
}

TEST_F(ProgramTest, PrecompiledCubinLoadsFromBytes) {
  cumem_program_t* program = nullptr;
  CUMEM_ASSERT_OK(cumem_program_compile(device, add_one_source, nullptr, &program));
  const void* code = nullptr;
  size_t size = 0;
  CUMEM_ASSERT_OK(cumem_program_code(program, &code, &size));
  ASSERT_GT(size, 4u);
  const std::vector<char> cubin(static_cast<const char*>(code), static_cast<const char*>(code) + size);
  cumem_program_release(program);
  EXPECT_EQ(std::memcmp(cubin.data(), "\x7f" "ELF", 4), 0) << "a cubin is an ELF image";

  cumem_library_t* library = nullptr;
  CUMEM_ASSERT_OK(cumem_library_load_data(device, cubin.data(), cubin.size(), &library));
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t got = cumem_library_get_kernel(library, "add_one", &kernel);
  cumem_library_release(library);
  CUMEM_ASSERT_OK(got);
  kernels.push_back(kernel);
  size_t n = 700;
  cumem_buffer_t* data = iota_floats(n);
  ASSERT_NE(data, nullptr);
  void* data_ptr = ptr(data);
  void* args[] = {&data_ptr, &n};
  const cumem_launch_config_t config = config_1d(n);
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &config, args, 2));
  expect_add_one_ran(data, n);
}

TEST_F(ProgramTest, BadImagesAreRefused) {
  cumem_library_t* library = reinterpret_cast<cumem_library_t*>(0x1);
  const char text[] = "this is not PTX";
  CUMEM_EXPECT_ERROR(cumem_library_load_data(device, text, 0, &library),
                     CUMEM_ERROR_INVALID_ARGUMENT, "empty");
  CUMEM_EXPECT_ERROR(cumem_library_load_data(device, text, sizeof text - 1, &library),
                     CUMEM_ERROR_INVALID_ARGUMENT, "NUL");
  CUMEM_EXPECT_ERROR(cumem_library_load_data(device, text, sizeof text, &library),
                     CUMEM_ERROR_DRIVER, "code image");
  EXPECT_EQ(library, reinterpret_cast<cumem_library_t*>(0x1));

  // A cubin for another architecture family: SASS does not run across majors.
  cumem_program_options_t options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.arch = props.compute_capability_major >= 9 ? "sm_80" : "sm_90";
  cumem_program_t* foreign = nullptr;
  CUMEM_ASSERT_OK(cumem_program_compile(device, add_one_source, &options, &foreign));
  CUMEM_EXPECT_ERROR(cumem_program_load(foreign, &library), CUMEM_ERROR_DRIVER,
                     "another architecture");
  cumem_program_release(foreign);
  EXPECT_EQ(library, reinterpret_cast<cumem_library_t*>(0x1));
}

TEST_F(ProgramTest, CompileErrorCarriesTheLog) {
  cumem_program_options_t options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.name = "broken_kernels.cu";
  cumem_program_t* program = reinterpret_cast<cumem_program_t*>(0x1);
  CUMEM_EXPECT_ERROR(
      cumem_program_compile(device,
                            "extern \"C\" __global__ void broken(int* p) { p[0] = undeclared_thing_xyz; }",
                            &options, &program),
      CUMEM_ERROR_COMPILATION, "undeclared_thing_xyz");
  EXPECT_NE(std::string(cumem_last_error_message()).find("broken_kernels.cu"), std::string::npos)
      << cumem_last_error_message();
  EXPECT_EQ(program, reinterpret_cast<cumem_program_t*>(0x1));
}

TEST_F(ProgramTest, ExtraOptionsReachTheCompiler) {
  const char* source = R"(
extern "C" __global__ void value(int* out) { out[0] = VALUE; }
)";
  const char* defines[] = {"-DVALUE=7", "-std=c++17"};
  cumem_program_options_t options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.options = defines;
  options.num_options = 2;
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(source, "value", &kernel, &options));
  cumem_buffer_t* out = allocate(device_mr, sizeof(int));
  ASSERT_NE(out, nullptr);
  void* out_ptr = ptr(out);
  void* args[] = {&out_ptr};
  const cumem_launch_config_t config = CUMEM_LAUNCH_CONFIG_INIT;
  CUMEM_ASSERT_OK(cumem_launch(kernel, stream, &config, args, 1));
  EXPECT_EQ(read<int>(out).at(0), 7);

  const char* bad[] = {"--no-such-nvrtc-option"};
  options.options = bad;
  options.num_options = 1;
  cumem_program_t* program = nullptr;
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, source, &options, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "no-such-nvrtc-option");
}

TEST_F(ProgramTest, ArchitectureCanBeChosen) {
  const std::string real = "sm_" + sm();
  const std::string virt = "compute_" + sm();
  cumem_program_options_t options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.arch = real.c_str();
  cumem_kernel_t* kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(build(add_one_source, "add_one", &kernel, &options));

  cumem_program_t* program = nullptr;
  options.arch = virt.c_str();  // virtual: PTX only, no cubin
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, add_one_source, &options, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "virtual");
  options.arch = "sm_1";
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, add_one_source, &options, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "gpu-architecture");
}

TEST_F(ProgramTest, MissingKernelIsNotFound) {
  cumem_program_t* program = nullptr;
  cumem_library_t* library = nullptr;
  CUMEM_ASSERT_OK(cumem_program_compile(device, add_one_source, nullptr, &program));
  CUMEM_ASSERT_OK(cumem_program_load(program, &library));
  cumem_kernel_t* kernel = reinterpret_cast<cumem_kernel_t*>(0x1);
  CUMEM_EXPECT_ERROR(cumem_library_get_kernel(library, "no_such_kernel", &kernel),
                     CUMEM_ERROR_NOT_FOUND, "no_such_kernel");
  EXPECT_EQ(kernel, reinterpret_cast<cumem_kernel_t*>(0x1));
  cumem_library_release(library);
  cumem_program_release(program);
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

  cumem_launch_config_t c = good;
  c.grid[0] = 0;
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     "at least 1");
  c = good;
  c.block[1] = 0;
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, args, 2), CUMEM_ERROR_INVALID_LAUNCH_CONFIG,
                     "at least 1");
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

TEST_F(ProgramTest, NullArgumentsAreNamed) {
  cumem_program_t* program = nullptr;
  CUMEM_EXPECT_ERROR(cumem_program_compile(nullptr, add_one_source, nullptr, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "device");
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, nullptr, nullptr, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "source");
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, add_one_source, nullptr, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_program");
  cumem_program_options_t options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.num_options = 1;
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, add_one_source, &options, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "options->options");
  options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.code_type = static_cast<cumem_code_type_t>(7);
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, add_one_source, &options, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "code_type");
  options = CUMEM_PROGRAM_OPTIONS_INIT;
  options.struct_size = 0;
  CUMEM_EXPECT_ERROR(cumem_program_compile(device, add_one_source, &options, &program),
                     CUMEM_ERROR_INVALID_ARGUMENT, "struct_size");
  EXPECT_EQ(program, nullptr);

  CUMEM_ASSERT_OK(cumem_program_compile(device, add_one_source, nullptr, &program));
  const char* text = nullptr;
  const void* code = nullptr;
  size_t size = 0;
  CUMEM_EXPECT_ERROR(cumem_program_log(nullptr, &text), CUMEM_ERROR_INVALID_ARGUMENT, "program");
  CUMEM_EXPECT_ERROR(cumem_program_log(program, nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "out_log");
  CUMEM_EXPECT_ERROR(cumem_program_code(program, nullptr, &size), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_code");
  CUMEM_EXPECT_ERROR(cumem_program_code(program, &code, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_size");
  CUMEM_EXPECT_ERROR(cumem_program_lowered_name(program, nullptr, &text),
                     CUMEM_ERROR_INVALID_ARGUMENT, "name_expression");
  CUMEM_EXPECT_ERROR(cumem_program_lowered_name(program, "x", nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_name");
  CUMEM_EXPECT_ERROR(cumem_program_retain(nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "program");
  cumem_library_t* library = nullptr;
  CUMEM_EXPECT_ERROR(cumem_program_load(nullptr, &library), CUMEM_ERROR_INVALID_ARGUMENT, "program");
  CUMEM_EXPECT_ERROR(cumem_program_load(program, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_library");
  CUMEM_EXPECT_ERROR(cumem_library_load_data(nullptr, "x", 2, &library),
                     CUMEM_ERROR_INVALID_ARGUMENT, "device");
  CUMEM_EXPECT_ERROR(cumem_library_load_data(device, nullptr, 2, &library),
                     CUMEM_ERROR_INVALID_ARGUMENT, "image");
  CUMEM_EXPECT_ERROR(cumem_library_load_data(device, "x", 2, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_library");
  CUMEM_ASSERT_OK(cumem_program_load(program, &library));
  cumem_program_release(program);

  cumem_kernel_t* kernel = nullptr;
  CUMEM_EXPECT_ERROR(cumem_library_get_kernel(nullptr, "add_one", &kernel),
                     CUMEM_ERROR_INVALID_ARGUMENT, "library");
  CUMEM_EXPECT_ERROR(cumem_library_get_kernel(library, nullptr, &kernel),
                     CUMEM_ERROR_INVALID_ARGUMENT, "name");
  CUMEM_EXPECT_ERROR(cumem_library_get_kernel(library, "add_one", nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_kernel");
  CUMEM_EXPECT_ERROR(cumem_library_retain(nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "library");
  CUMEM_ASSERT_OK(cumem_library_get_kernel(library, "add_one", &kernel));
  cumem_library_release(library);
  kernels.push_back(kernel);

  cumem_kernel_attributes_t attributes = CUMEM_KERNEL_ATTRIBUTES_INIT;
  void* native = nullptr;
  CUMEM_EXPECT_ERROR(cumem_kernel_get_attributes(nullptr, &attributes),
                     CUMEM_ERROR_INVALID_ARGUMENT, "kernel");
  CUMEM_EXPECT_ERROR(cumem_kernel_get_attributes(kernel, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "attributes");
  CUMEM_EXPECT_ERROR(cumem_kernel_native(nullptr, &native), CUMEM_ERROR_INVALID_ARGUMENT, "kernel");
  CUMEM_EXPECT_ERROR(cumem_kernel_native(kernel, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_native");
  CUMEM_EXPECT_ERROR(cumem_kernel_retain(nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "kernel");

  const cumem_launch_config_t c = CUMEM_LAUNCH_CONFIG_INIT;
  CUMEM_EXPECT_ERROR(cumem_launch(nullptr, stream, &c, nullptr, 0), CUMEM_ERROR_INVALID_ARGUMENT,
                     "kernel");
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, nullptr, nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "config");
  CUMEM_EXPECT_ERROR(cumem_launch(kernel, stream, &c, nullptr, 2), CUMEM_ERROR_INVALID_ARGUMENT,
                     "args");
  // A handle of another type is refused, not misused.
  CUMEM_EXPECT_ERROR(cumem_launch(reinterpret_cast<cumem_kernel_t*>(stream), stream, &c, nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "kernel");

  cumem_program_release(nullptr);
  cumem_library_release(nullptr);
  cumem_kernel_release(nullptr);
}

}  // namespace
