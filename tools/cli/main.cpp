// cumem: see libcumem's devices and memory from a shell.
//   cumem info             the driver, NVRTC, devices, pools, libcumem's defaults
//   cumem snapshot view    a snapshot's JSON as a self-contained page
//   cumem replay           a logging adaptor's CSV replayed against a resource stack
#include <cumem/cumem.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"

namespace cumem_cli {

std::string human_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char text[32];
  if (u == 0) std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(text, sizeof text, "%.2f %s", v, units[u]);
  return text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Failure("cannot read '" + path + "': " + std::strerror(errno));
  return text.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Failure("cannot write '" + path + "': " + std::strerror(errno));
  out << text;
  out.close();
  if (!out) throw Failure("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace cumem_cli

namespace {

const char* const kToolUsage =
    "usage: cumem <command> [options]\n"
    "\n"
    "See libcumem's devices and memory.\n"
    "\n"
    "commands:\n"
    "  info [--json]                        the driver, NVRTC, each device with its memory and\n"
    "                                       pool, and what libcumem picks by default\n"
    "  snapshot view FILE.json -o FILE.html a memory snapshot as one self-contained page\n"
    "  replay FILE.csv [-r STACK]...        replay a logging adaptor's CSV against resource\n"
    "                                       stacks: time, peak reserved, fragmentation\n"
    "  help [COMMAND]                       this text, or a command's\n"
    "\n"
    "options: -h, --help (also after a command), --version\n"
    "\n"
    "exit status: 0 done; 1 the command failed (the message says why); 2 bad usage;\n"
    "3 (replay) an allocation of the trace ran out of memory.\n";

int usage_of(const std::string& command, std::FILE* to) {
  if (command == "info") std::fputs(cumem_cli::kInfoUsage, to);
  else if (command == "snapshot") std::fputs(cumem_cli::kSnapshotUsage, to);
  else if (command == "replay") std::fputs(cumem_cli::kReplayUsage, to);
  else {
    std::fputs(kToolUsage, to);
    return command.empty() ? cumem_cli::kOk : cumem_cli::kUsage;
  }
  return cumem_cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cumem_cli;
  Args args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kToolUsage, stderr);
    return kUsage;
  }
  const std::string command = args[0];
  if (command == "-h" || command == "--help") return usage_of("", stdout);
  if (command == "--version") {
    const uint32_t v = cumem_version();
    std::printf("cumem (libcumem %u.%u.%u)\n", v / 10000, v / 100 % 100, v % 100);
    return kOk;
  }
  if (command == "help") {
    if (args.size() > 1 && usage_of(args[1], stdout) != kOk) {
      std::fprintf(stderr, "cumem: no command '%s'\n", args[1].c_str());
      return kUsage;
    }
    return args.size() > 1 ? kOk : usage_of("", stdout);
  }
  Args rest(args.begin() + 1, args.end());
  for (const std::string& a : rest)
    if (a == "-h" || a == "--help") return usage_of(command, stdout);
  try {
    if (command == "info") return info_main(rest);
    if (command == "snapshot") return snapshot_main(rest);
    if (command == "replay") return replay_main(rest);
    std::fprintf(stderr, "cumem: no command '%s'\n\n%s", command.c_str(), kToolUsage);
    return kUsage;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "cumem %s: %s\n\n", command.c_str(), e.what());
    usage_of(command, stderr);
    return kUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cumem %s: %s\n", command.c_str(), e.what());
    return kFailed;
  }
}
