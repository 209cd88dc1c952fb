#include "log.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <strings.h>

namespace cumem::core::log {

std::atomic<int> current_level{kUnresolved};

namespace {

constexpr Level kDefault = Level::warning;
std::atomic<const Sink*> sink{nullptr};
// Set while this thread delivers: a message the sink causes (a libcumem
// call made by the user's callback) is dropped instead of recursing.
thread_local bool delivering = false;

const char* const kNames[] = {"off", "error", "warning", "info", "debug"};

// CUMEM_LOG_LEVEL, case-insensitive; unset or empty is the default.
int parse_environment(const char** bad_value) noexcept {
  const char* value = std::getenv("CUMEM_LOG_LEVEL");
  if (!value || !*value) return static_cast<int>(kDefault);
  for (int i = 0; i <= static_cast<int>(Level::debug); ++i)
    if (strcasecmp(value, kNames[i]) == 0) return i;
  *bad_value = value;
  return static_cast<int>(kDefault);
}

// The level in force, reading CUMEM_LOG_LEVEL the first time. Threads may
// race here: one wins the exchange, and only it reports a bad value.
int resolve() noexcept {
  int current = current_level.load(std::memory_order_acquire);
  if (current != kUnresolved) return current;
  const char* bad = nullptr;
  const int parsed = parse_environment(&bad);
  if (!current_level.compare_exchange_strong(current, parsed, std::memory_order_acq_rel))
    return current;
  if (bad) {
    std::string message = std::string("CUMEM_LOG_LEVEL='") + bad +
                          "' is not one of off, error, warning, info, debug (case-insensitive); "
                          "ignored: the level is " + kNames[parsed];
    write(Level::warning, message.c_str());
  }
  return parsed;
}

void deliver_default(Level level, const char* message) noexcept {
  std::fprintf(stderr, "libcumem: %s: %s\n", level_name(level), message);
}

}  // namespace

bool valid_level(int level) noexcept {
  return level >= static_cast<int>(Level::off) && level <= static_cast<int>(Level::debug);
}

const char* level_name(Level level) noexcept {
  const int i = static_cast<int>(level);
  return valid_level(i) ? kNames[i] : "unknown";
}

Level level() noexcept { return static_cast<Level>(resolve()); }

void set_level(Level level) noexcept {
  resolve();  // so that a later first use does not read the environment over it
  current_level.store(static_cast<int>(level), std::memory_order_release);
}

void set_sink(const Sink* s) noexcept { sink.store(s, std::memory_order_release); }

void write(Level level, const char* message) noexcept {
  if (level == Level::off || static_cast<int>(level) > resolve() || delivering) return;
  delivering = true;
  const Sink* s = sink.load(std::memory_order_acquire);
  if (s)
    s->deliver(*s, level, message);
  else
    deliver_default(level, message);
  delivering = false;
}

void swallowed(const char* doing) noexcept {
  if (!enabled(Level::warning)) return;
  try {
    throw;
  } catch (const std::exception& e) {
    try {
      write(Level::warning, std::string(doing) + " failed: " + e.what() + "; ignored");
    } catch (...) {
      write(Level::warning, doing);
    }
  } catch (...) {
    write(Level::warning, doing);
  }
}

}  // namespace cumem::core::log
