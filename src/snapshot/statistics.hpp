// A resource's numbers, without its segments: for statistics as JSON
// (cumem_resource_statistics_json) and the process's summary
// (cumem_memory_summary, as torch.cuda.memory_summary()).
#pragma once

#include <string>

#include "json.hpp"
#include "snapshot.hpp"

namespace cumem::core::snapshot {

// Its statistics, and those of its kind: a cache's, a pool's attributes, a
// virtual resource's, a tracking adaptor's count (an error, if the driver
// failed to say, in `error`).
ResourceEntry describe_resource(const Resource& r);
// One resource as JSON (snapshot_json.cpp); totals only for snapshots.
void write_resource(Json& j, const ResourceEntry& e, bool with_totals);

// {"schema": "cumem.statistics", "version": 1, "resources": [...]}: the
// resource and its upstreams (top first), or with null every live resource.
std::string statistics_json(const Resource* root);
// The live resources as a tree (adaptors above their upstreams), each with
// its numbers, in text.
std::string memory_summary();

}  // namespace cumem::core::snapshot
