// A CUDA C++ program compiled by NVRTC for one device: the code (cubin or
// PTX), the compiler's log and the lowered names of its name expressions.
// Immutable once compiled, so every call on it may run concurrently.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "../device.hpp"
#include "../object.hpp"

namespace cumem::core {

enum class CodeType { cubin, ptx };

struct CompileOptions {
  CodeType code_type = CodeType::cubin;
  std::string arch;  // "sm_90", "compute_90"; empty: the device's
  std::vector<std::string> options;
  std::vector<std::string> name_expressions;
  std::string name = "cumem_program.cu";
};

// NVRTC's version, loading it on first use. Throws no_compiler.
void nvrtc_version(int& major, int& minor);

class Program : public Object {
 public:
  // Throws no_compiler (NVRTC missing), compilation (with the log),
  // not_supported (NVRTC cannot target the device), invalid_argument (a bad
  // NVRTC option).
  static Ref<Program> compile(Ref<Device> device, const std::string& source,
                              const CompileOptions& options);

  const Device& device() const noexcept { return *device_; }
  const Ref<Device>& device_ref() const noexcept { return device_; }
  CodeType code_type() const noexcept { return code_type_; }
  const std::string& log() const noexcept { return log_; }
  // Cubin bytes, or PTX text with its terminating NUL.
  const std::vector<char>& code() const noexcept { return code_; }
  // The mangled name of a name expression given at compile time; throws
  // not_found for one that was not given.
  const std::string& lowered_name(const std::string& name_expression) const;
  const std::string& name() const noexcept { return name_; }

 private:
  Program(Ref<Device> device, CodeType code_type, std::string name)
      : Object(Tag::program), device_(std::move(device)), code_type_(code_type),
        name_(std::move(name)) {}
  ~Program() override = default;

  Ref<Device> device_;
  CodeType code_type_;
  std::string name_;
  std::string log_;
  std::vector<char> code_;
  std::vector<std::pair<std::string, std::string>> lowered_names_;  // expression, name
};

}  // namespace cumem::core
