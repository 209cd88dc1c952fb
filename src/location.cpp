#include "location.hpp"

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
  if (location.type == LocationType::host_numa && location.id < 0)
    fail(Status::invalid_argument,
         std::string(what) + " names host NUMA node " + std::to_string(location.id));
}

}  // namespace cumem::core
