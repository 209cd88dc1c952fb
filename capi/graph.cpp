// CUDA graphs: cumem_graph_* (executable graphs, and ending a capture into
// one) and the graph memory resource (cumem_graph_memory_resource_*).
#include "capi.hpp"

#include "../src/graph.hpp"
#include "../src/resources/graph_memory_resource.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {
const cumem_graph_options_t default_graph_options = CUMEM_GRAPH_OPTIONS_INIT;

GraphOptions graph_options(const cumem_graph_options_t* options) {
  const auto o = read_options(options, default_graph_options, "options");
  GraphOptions g;
  g.auto_free_on_launch = o.auto_free_on_launch != 0;
  g.use_node_priority = o.use_node_priority != 0;
  return g;
}

GraphMemory& graph_memory_of(const cumem_resource_t* resource) {
  const Resource& r = object(resource, "resource");
  auto* g = dynamic_cast<GraphMemory*>(const_cast<Resource*>(&r));
  if (!g) fail(Status::not_supported, r.describe() + " is not a graph memory resource");
  return *g;
}
}  // namespace

CUMEM_EXPORT void cumem_graph_options_init(cumem_graph_options_t* options) {
  if (options) *options = default_graph_options;
}

CUMEM_EXPORT cumem_status_t cumem_stream_end_capture_graph(const cumem_stream_t* stream,
                                                           const cumem_graph_options_t* options,
                                                           cumem_graph_t** out_graph) {
  CUMEM_TRY
  const Stream& s = object(stream, "stream");
  out(out_graph, "out_graph");
  const GraphOptions o = graph_options(options);
  *out_graph = to_handle<cumem_graph_t>(Graph::from_capture(s, o));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_instantiate(const cumem_device_t* device,
                                                    void* native_graph,
                                                    const cumem_graph_options_t* options,
                                                    cumem_graph_t** out_graph) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  if (!native_graph) null_argument("native_graph");
  out(out_graph, "out_graph");
  const GraphOptions o = graph_options(options);
  *out_graph = to_handle<cumem_graph_t>(
      Graph::instantiate(std::move(d), static_cast<CUgraph>(native_graph), o));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_retain(cumem_graph_t* graph) {
  CUMEM_TRY
  retain_handle(graph, "graph");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_release(cumem_graph_t* graph) {
  CUMEM_TRY
  release_handle(graph, "graph");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_launch(cumem_graph_t* graph,
                                               const cumem_stream_t* stream) {
  CUMEM_TRY
  Graph& g = object(graph, "graph");
  g.launch(optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_upload(cumem_graph_t* graph,
                                               const cumem_stream_t* stream) {
  CUMEM_TRY
  Graph& g = object(graph, "graph");
  g.upload(optional(stream, "stream"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_native(const cumem_graph_t* graph, void** out_native) {
  CUMEM_TRY
  const Graph& g = object(graph, "graph");
  out(out_native, "out_native");
  *out_native = static_cast<void*>(g.native());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_capture_id(const cumem_graph_t* graph, uint64_t* out_id) {
  CUMEM_TRY
  const Graph& g = object(graph, "graph");
  out(out_id, "out_id");
  *out_id = g.capture_id();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_memory_resource_create(const cumem_device_t* device,
                                                               cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(create_graph_memory_resource(std::move(d)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_memory_resource_get_attributes(
    const cumem_resource_t* resource, cumem_graph_memory_attributes_t* attributes) {
  CUMEM_TRY
  object(resource, "resource");
  check_out_struct(attributes, "attributes");
  const GraphMemoryAttributes a = graph_memory_of(resource).attributes();
  cumem_graph_memory_attributes_t v = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
  copy_fields(v, a);
  write_out_struct(attributes, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_memory_resource_trim(cumem_resource_t* resource) {
  CUMEM_TRY
  graph_memory_of(resource).trim();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_graph_memory_resource_reset_highs(cumem_resource_t* resource) {
  CUMEM_TRY
  graph_memory_of(resource).reset_highs();
  CUMEM_CATCH
}
