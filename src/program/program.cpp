#include "program.hpp"

#include <algorithm>

#include "../driver/nvrtc.hpp"
#include "../error.hpp"

namespace cumem::core {
namespace {

// Destroys the nvrtcProgram on every way out of compile().
class ProgramGuard {
 public:
  explicit ProgramGuard(const nvrtc::Table& table) : table_(table) {}
  ~ProgramGuard() {
    if (program) table_.nvrtcDestroyProgram_fn(&program);
  }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;
  nvrtcProgram program = nullptr;

 private:
  const nvrtc::Table& table_;
};

std::string read_log(const nvrtc::Table& t, nvrtcProgram program) {
  size_t size = 0;
  if (t.nvrtcGetProgramLogSize_fn(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (t.nvrtcGetProgramLog_fn(program, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The device's architecture as NVRTC spells it, after checking that this
// NVRTC can target it (an older NVRTC would only say "invalid -arch").
std::string device_arch(const nvrtc::Table& t, const Device& device, CodeType code_type) {
  const int major = device.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = device.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  const int cc = major * 10 + minor;
  int count = 0;
  nvrtc::check(t.nvrtcGetNumSupportedArchs_fn(&count), "nvrtcGetNumSupportedArchs",
               "listing the architectures of " + nvrtc::describe(t));
  std::vector<int> archs(static_cast<size_t>(count > 0 ? count : 0));
  if (!archs.empty())
    nvrtc::check(t.nvrtcGetSupportedArchs_fn(archs.data()), "nvrtcGetSupportedArchs",
                 "listing the architectures of " + nvrtc::describe(t));
  if (std::find(archs.begin(), archs.end(), cc) == archs.end()) {
    std::string supported = "none";
    if (!archs.empty())
      supported = "sm_" + std::to_string(*std::min_element(archs.begin(), archs.end())) +
                  " to sm_" + std::to_string(*std::max_element(archs.begin(), archs.end()));
    fail(Status::not_supported,
         nvrtc::describe(t) + " cannot compile for " + device.describe() +
             " (compute capability " + std::to_string(major) + "." + std::to_string(minor) +
             ", sm_" + std::to_string(cc) + "); it supports " + supported +
             ". Use an NVRTC that knows sm_" + std::to_string(cc) +
             " (set $CUMEM_LIBNVRTC), or set options.arch to one it supports");
  }
  return (code_type == CodeType::cubin ? "sm_" : "compute_") + std::to_string(cc);
}

}  // namespace

void nvrtc_version(int& major, int& minor) {
  const nvrtc::Table& t = nvrtc::get();
  major = t.major;
  minor = t.minor;
}

Ref<Program> Program::compile(Ref<Device> device, const std::string& source,
                              const CompileOptions& options) {
  // NVRTC first: without a compiler nothing else matters.
  const nvrtc::Table& t = nvrtc::get();
  const std::string arch =
      options.arch.empty() ? device_arch(t, *device, options.code_type) : options.arch;
  const std::string what = "compiling '" + options.name + "' for " + arch + " (" +
                           device->describe() + ") with " + nvrtc::describe(t);

  ProgramGuard guard(t);
  nvrtc::check(t.nvrtcCreateProgram_fn(&guard.program, source.c_str(), options.name.c_str(), 0,
                                       nullptr, nullptr),
               "nvrtcCreateProgram", what);
  for (const std::string& expression : options.name_expressions)
    nvrtc::check(t.nvrtcAddNameExpression_fn(guard.program, expression.c_str()),
                 "nvrtcAddNameExpression", "adding name expression '" + expression + "'");

  const std::string arch_option = "-arch=" + arch;
  std::vector<const char*> argv{arch_option.c_str()};
  for (const std::string& o : options.options) argv.push_back(o.c_str());
  const nvrtcResult compiled = t.nvrtcCompileProgram_fn(
      guard.program, static_cast<int>(argv.size()), argv.data());
  Ref<Program> program =
      Ref<Program>::adopt(new Program(std::move(device), options.code_type, options.name));
  program->log_ = read_log(t, guard.program);
  nvrtc::check(compiled, "nvrtcCompileProgram", what, program->log_);

  for (const std::string& expression : options.name_expressions) {
    const char* lowered = nullptr;
    nvrtc::check(t.nvrtcGetLoweredName_fn(guard.program, expression.c_str(), &lowered),
                 "nvrtcGetLoweredName", "looking up name expression '" + expression + "'");
    program->lowered_names_.emplace_back(expression, lowered ? lowered : "");
  }

  size_t size = 0;
  if (options.code_type == CodeType::cubin) {
    nvrtc::check(t.nvrtcGetCUBINSize_fn(guard.program, &size), "nvrtcGetCUBINSize", what);
    // NVRTC makes no cubin for a virtual architecture (compute_XY).
    if (size == 0)
      fail(Status::invalid_argument,
           "no cubin was produced for architecture '" + arch +
               "': a virtual architecture (compute_XY) yields PTX only; use sm_XY for "
               "CUMEM_CODE_CUBIN, or ask for CUMEM_CODE_PTX");
    program->code_.resize(size);
    nvrtc::check(t.nvrtcGetCUBIN_fn(guard.program, program->code_.data()), "nvrtcGetCUBIN",
                 what);
  } else {
    nvrtc::check(t.nvrtcGetPTXSize_fn(guard.program, &size), "nvrtcGetPTXSize", what);
    program->code_.resize(size);
    nvrtc::check(t.nvrtcGetPTX_fn(guard.program, program->code_.data()), "nvrtcGetPTX", what);
  }
  return program;
}

const std::string& Program::lowered_name(const std::string& name_expression) const {
  for (const auto& [expression, lowered] : lowered_names_)
    if (expression == name_expression) return lowered;
  std::string given;
  for (const auto& entry : lowered_names_)
    given += (given.empty() ? "'" : ", '") + entry.first + "'";
  fail(Status::not_found, "name expression '" + name_expression +
                              "' was not given when '" + name_ + "' was compiled (given: " +
                              (given.empty() ? "none" : given) +
                              "); add it to the program options' name_expressions");
}

}  // namespace cumem::core
