// Shared pieces of the cumem command-line tool: exit statuses, usage
// errors, byte counts for people, and the subcommands' entry points.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cumem_cli {

// The tool's exit statuses (--help lists them).
enum Exit : int {
  kOk = 0,
  kFailed = 1,       // the command could not do its work (the message says why)
  kUsage = 2,        // bad arguments
  kOutOfMemory = 3,  // replay: an allocation of the trace failed
};

// Bad arguments: the message, then the command's usage, and status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The work failed: the message and status 1.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string human_bytes(uint64_t bytes);
std::string read_file(const std::string& path);  // throws Failure
void write_file(const std::string& path, const std::string& text);  // throws Failure

using Args = std::vector<std::string>;
int info_main(const Args& args);
int snapshot_main(const Args& args);
int replay_main(const Args& args);

extern const char* const kInfoUsage;
extern const char* const kSnapshotUsage;
extern const char* const kReplayUsage;

}  // namespace cumem_cli
