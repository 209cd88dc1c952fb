// Programs and libraries on device 0: compile with NVRTC (options, name
// expressions, PTX, architectures), load compiled or precompiled code, and
// the errors of each step; NULL arguments of every entry point.
#include "program_fixture.hpp"

namespace {

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
  ASSERT_NO_FATAL_FAILURE(kernel_of(library, "add_one", &kernel));
  expect_add_one_works(kernel, 1024);
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
  ASSERT_NO_FATAL_FAILURE(kernel_of(library, "add_one", &kernel));
  expect_add_one_works(kernel, 700);
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
