// A memory location: a device, the host, or a host NUMA node. Managed
// resources, prefetch and advice take one; buffers report theirs.
#pragma once

#include <cuda.h>

#include <initializer_list>
#include <string>

namespace cumem::core {

// The values are CUmemLocationType's (and the C ABI's cumem_location_type_t).
enum class LocationType { none = 0, device = 1, host = 2, host_numa = 3, host_numa_current = 4 };

struct Location {
  LocationType type = LocationType::none;
  int id = 0;
};

CUmemLocation to_cu(Location location);
// "device 0", "the host", "host NUMA node 1", ... for messages.
std::string describe(Location location);

// The one rule for every call that takes a location: its type must be one of
// `allowed` (else invalid_argument naming `what`), and a device location
// must name an existing device (else no_device). Needs the driver only for
// device locations.
void validate(Location location, std::initializer_list<LocationType> allowed, const char* what);

// A host NUMA node must be one the system has: where Linux lists its nodes
// (/sys/devices/system/node/online), a node not listed is invalid_argument
// naming `what` and the nodes there are; where it does not, only a negative
// node is refused.
void check_host_numa_node(int node, const std::string& what);

}  // namespace cumem::core
