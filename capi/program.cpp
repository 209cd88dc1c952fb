// cumem_program_*, cumem_library_*, cumem_kernel_*, cumem_launch and
// cumem_nvrtc_version entry points.
#include "capi.hpp"

#include <string>
#include <vector>

#include "../src/device.hpp"
#include "../src/program/kernel.hpp"
#include "../src/program/launch.hpp"
#include "../src/program/library.hpp"
#include "../src/program/program.hpp"
#include "../src/stream.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {
const cumem_program_options_t default_program_options = CUMEM_PROGRAM_OPTIONS_INIT;
const cumem_launch_config_t default_launch_config = CUMEM_LAUNCH_CONFIG_INIT;
const cumem_kernel_attributes_t default_kernel_attributes = CUMEM_KERNEL_ATTRIBUTES_INIT;

// A (list, count) pair of C strings, checked: the list may be NULL only
// when count is 0, and no entry may be NULL.
std::vector<std::string> string_list(const char* const* list, uint32_t count,
                                     const std::string& name) {
  if (count > 0 && !list)
    fail(Status::invalid_argument, name + " is NULL but its count is " + std::to_string(count));
  std::vector<std::string> out;
  for (uint32_t i = 0; i < count; ++i) {
    if (!list[i])
      fail(Status::invalid_argument, name + "[" + std::to_string(i) + "] is NULL");
    out.emplace_back(list[i]);
  }
  return out;
}

CompileOptions compile_options(const cumem_program_options_t* options) {
  const auto o = read_options(options, default_program_options, "options");
  CompileOptions c;
  if (o.code_type == CUMEM_CODE_CUBIN)
    c.code_type = CodeType::cubin;
  else if (o.code_type == CUMEM_CODE_PTX)
    c.code_type = CodeType::ptx;
  else
    fail(Status::invalid_argument, "options->code_type " +
                                       std::to_string(static_cast<int>(o.code_type)) +
                                       " is neither CUMEM_CODE_CUBIN nor CUMEM_CODE_PTX");
  if (o.arch) c.arch = o.arch;
  c.options = string_list(o.options, o.num_options, "options->options");
  c.name_expressions =
      string_list(o.name_expressions, o.num_name_expressions, "options->name_expressions");
  if (o.name && *o.name) c.name = o.name;
  return c;
}
}  // namespace

CUMEM_EXPORT void cumem_program_options_init(cumem_program_options_t* options) {
  if (options) *options = default_program_options;
}

CUMEM_EXPORT cumem_status_t cumem_nvrtc_version(int32_t* out_major, int32_t* out_minor) {
  CUMEM_TRY
  out(out_major, "out_major");
  out(out_minor, "out_minor");
  int major = 0, minor = 0;
  nvrtc_version(major, minor);
  *out_major = major;
  *out_minor = minor;
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_program_compile(const cumem_device_t* device,
                                                  const char* source,
                                                  const cumem_program_options_t* options,
                                                  cumem_program_t** out_program) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  if (!source) null_argument("source");
  out(out_program, "out_program");
  const CompileOptions o = compile_options(options);
  *out_program = to_handle<cumem_program_t>(Program::compile(std::move(d), source, o));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_program_retain(cumem_program_t* program) {
  CUMEM_TRY
  retain_handle(program, "program");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_program_release(cumem_program_t* program) {
  CUMEM_TRY
  release_handle(program, "program");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_program_log(const cumem_program_t* program,
                                              const char** out_log) {
  CUMEM_TRY
  const Program& p = object(program, "program");
  out(out_log, "out_log");
  *out_log = p.log().c_str();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_program_code(const cumem_program_t* program,
                                               const void** out_code, size_t* out_size) {
  CUMEM_TRY
  const Program& p = object(program, "program");
  out(out_code, "out_code");
  out(out_size, "out_size");
  *out_code = p.code().data();
  *out_size = p.code().size();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_program_lowered_name(const cumem_program_t* program,
                                                       const char* name_expression,
                                                       const char** out_name) {
  CUMEM_TRY
  const Program& p = object(program, "program");
  if (!name_expression) null_argument("name_expression");
  out(out_name, "out_name");
  *out_name = p.lowered_name(name_expression).c_str();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_program_load(const cumem_program_t* program,
                                               cumem_library_t** out_library) {
  CUMEM_TRY
  const Program& p = object(program, "program");
  out(out_library, "out_library");
  *out_library = to_handle<cumem_library_t>(
      Library::load(p.device_ref(), p.code().data(), p.code().size()));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_library_load_data(const cumem_device_t* device,
                                                    const void* image, size_t size,
                                                    cumem_library_t** out_library) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  if (!image) null_argument("image");
  out(out_library, "out_library");
  *out_library = to_handle<cumem_library_t>(Library::load(std::move(d), image, size));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_library_retain(cumem_library_t* library) {
  CUMEM_TRY
  retain_handle(library, "library");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_library_release(cumem_library_t* library) {
  CUMEM_TRY
  release_handle(library, "library");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_library_get_kernel(const cumem_library_t* library,
                                                     const char* name,
                                                     cumem_kernel_t** out_kernel) {
  CUMEM_TRY
  const Library& l = object(library, "library");
  if (!name) null_argument("name");
  out(out_kernel, "out_kernel");
  *out_kernel = to_handle<cumem_kernel_t>(
      Kernel::get(Ref<Library>::share(&const_cast<Library&>(l)), name));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_kernel_retain(cumem_kernel_t* kernel) {
  CUMEM_TRY
  retain_handle(kernel, "kernel");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_kernel_release(cumem_kernel_t* kernel) {
  CUMEM_TRY
  release_handle(kernel, "kernel");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_kernel_get_attributes(const cumem_kernel_t* kernel,
                                                        cumem_kernel_attributes_t* attributes) {
  CUMEM_TRY
  const Kernel& k = object(kernel, "kernel");
  check_out_struct(attributes, "attributes");
  const KernelAttributes a = k.attributes();
  cumem_kernel_attributes_t value = default_kernel_attributes;
  copy_fields(value, a);
  write_out_struct(attributes, value);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_kernel_native(const cumem_kernel_t* kernel, void** out_native) {
  CUMEM_TRY
  const Kernel& k = object(kernel, "kernel");
  out(out_native, "out_native");
  *out_native = static_cast<void*>(k.native());
  CUMEM_CATCH
}

CUMEM_EXPORT void cumem_launch_config_init(cumem_launch_config_t* config) {
  if (config) *config = default_launch_config;
}

CUMEM_EXPORT cumem_status_t cumem_launch(const cumem_kernel_t* kernel,
                                         const cumem_stream_t* stream,
                                         const cumem_launch_config_t* config, void** args,
                                         uint32_t num_args) {
  CUMEM_TRY
  const Kernel& k = object(kernel, "kernel");
  const Stream* s = optional(stream, "stream");
  if (!config) null_argument("config");
  if (num_args > 0 && !args)
    fail(Status::invalid_argument,
         "argument 'args' must not be NULL when num_args is " + std::to_string(num_args));
  const auto c = read_options(config, default_launch_config, "config");
  LaunchConfig lc;
  for (int i = 0; i < 3; ++i) {
    // 0, the default (a zero-filled config), counts as 1.
    lc.grid[i] = c.grid[i] == 0 ? 1 : c.grid[i];
    lc.block[i] = c.block[i] == 0 ? 1 : c.block[i];
    lc.cluster[i] = c.cluster[i];
  }
  lc.shared_memory_bytes = c.shared_memory_bytes;
  launch(k, s, lc, args, num_args);
  CUMEM_CATCH
}
