#include "location.hpp"

#include <cstdio>
#include <cstdlib>

#include "device.hpp"
#include "error.hpp"

namespace cumem::core {

CUmemLocation to_cu(Location location) {
  CUmemLocation l{};
  l.type = static_cast<CUmemLocationType>(location.type);
  l.id = location.id;
  return l;
}

std::string describe(Location location) {
  switch (location.type) {
    case LocationType::none: return "no location";
    case LocationType::device: return "device " + std::to_string(location.id);
    case LocationType::host: return "the host";
    case LocationType::host_numa: return "host NUMA node " + std::to_string(location.id);
    case LocationType::host_numa_current: return "the calling thread's host NUMA node";
  }
  return "location type " + std::to_string(static_cast<int>(location.type));
}

void validate(Location location, std::initializer_list<LocationType> allowed, const char* what) {
  bool ok = false;
  for (LocationType t : allowed) ok = ok || t == location.type;
  if (!ok) fail(Status::invalid_argument, std::string(what) + " cannot be " + describe(location));
  if (location.type == LocationType::device) {
    const int n = Device::count();
    if (location.id < 0 || location.id >= n)
      fail(Status::no_device, std::string(what) + " names device " + std::to_string(location.id) +
                                  ", which does not exist (" + std::to_string(n) + " device" +
                                  (n == 1 ? "" : "s") + " present)");
  }
  if (location.type == LocationType::host_numa) check_host_numa_node(location.id, what);
}

namespace {

// The node list of /sys/devices/system/node/online ("0", "0-3,6"), or ""
// where the file cannot be read (no NUMA support, or no sysfs).
std::string read_online_nodes() {
  std::FILE* f = std::fopen("/sys/devices/system/node/online", "r");
  if (!f) return "";
  char line[4096] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  if (!read) return "";
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// Read once: nodes do not come and go while a process runs (and a batch may
// check a thousand locations).
const std::string& online_nodes() {
  static const std::string* nodes = new std::string(read_online_nodes());
  return *nodes;
}

// Whether `node` is in a list of ranges such as "0-3,6".
bool in_node_list(const std::string& list, int node) {
  size_t i = 0;
  while (i < list.size()) {
    char* end = nullptr;
    const long first = std::strtol(list.c_str() + i, &end, 10);
    if (end == list.c_str() + i) return false;  // not a list we can read
    long last = first;
    i = static_cast<size_t>(end - list.c_str());
    if (i < list.size() && list[i] == '-') {
      const char* from = list.c_str() + i + 1;
      last = std::strtol(from, &end, 10);
      if (end == from) return false;
      i = static_cast<size_t>(end - list.c_str());
    }
    if (node >= first && node <= last) return true;
    if (i < list.size() && list[i] == ',') ++i;
  }
  return false;
}

}  // namespace

void check_host_numa_node(int node, const std::string& what) {
  if (node < 0)
    fail(Status::invalid_argument,
         what + " names host NUMA node " + std::to_string(node) + "; a node is >= 0");
  const std::string& nodes = online_nodes();
  if (!nodes.empty() && !in_node_list(nodes, node))
    fail(Status::invalid_argument, what + " names host NUMA node " + std::to_string(node) +
                                       ", which this system does not have (its nodes: " + nodes +
                                       ")");
}

}  // namespace cumem::core
