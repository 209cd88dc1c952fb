// libcumem's own messages (failures swallowed in destructors, leak reports,
// every failing call at debug): one level, one sink. The level check is one
// relaxed atomic load, so a message costs nothing until it is produced.
#pragma once

#include <atomic>
#include <string>

namespace cumem::core::log {

// Ordered: a message is delivered when its level is at most the current one.
enum class Level : int { off = 0, error = 1, warning = 2, info = 3, debug = 4 };

inline constexpr int kUnresolved = 0x7f;  // CUMEM_LOG_LEVEL not read yet
extern std::atomic<int> current_level;

// Whether a message at `level` may be delivered: true before the level is
// first resolved too (write() resolves it and checks again). Check this
// before building a message.
inline bool enabled(Level level) noexcept {
  return static_cast<int>(level) <= current_level.load(std::memory_order_relaxed);
}

// Delivers `message` to the sink if `level` is enabled. Never throws.
void write(Level level, const char* message) noexcept;
inline void write(Level level, const std::string& message) noexcept { write(level, message.c_str()); }

// Inside a catch handler of a destructor or cleanup that cannot report:
// writes "<doing> failed: <what()>; ignored" at warning.
void swallowed(const char* doing) noexcept;

// The level in force (CUMEM_LOG_LEVEL read on first use; default warning).
Level level() noexcept;
void set_level(Level level) noexcept;
bool valid_level(int level) noexcept;
const char* level_name(Level level) noexcept;

// Where messages go. A sink is immutable and lives for the process; it is
// published with one atomic pointer, so a message never sees half of one.
struct Sink {
  void (*deliver)(const Sink& sink, Level level, const char* message);
};
// nullptr: the default sink, stderr ("libcumem: <level>: <message>").
void set_sink(const Sink* sink) noexcept;

}  // namespace cumem::core::log
