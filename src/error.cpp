#include "error.hpp"

#include <cstdio>

namespace cumem::core {

std::string describe_bytes(unsigned long long bytes) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB"};
  std::string out = std::to_string(bytes) + " bytes";
  if (bytes < 1024) return out;
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.2f %s)", value, units[unit]);
  return out + buf;
}

std::string address_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace cumem::core
