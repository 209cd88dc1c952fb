#include "graph.hpp"

#include "driver/driver.hpp"
#include "error.hpp"
#include "log.hpp"

namespace cumem::core {
namespace {

unsigned long long flags_of(const GraphOptions& o) {
  unsigned long long flags = 0;
  if (o.auto_free_on_launch) flags |= CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
  if (o.use_node_priority) flags |= CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  return flags;
}

// Instantiation builds the executable synchronously: relaxed, so that it
// neither fails on a capturing thread nor invalidates another's capture.
CUgraphExec instantiate_native(const Device& device, CUgraph graph, const GraphOptions& o) {
  ScopedContext scope(device);
  RelaxedCaptureMode relaxed;
  CUgraphExec exec = nullptr;
  CUMEM_CU(cuGraphInstantiateWithFlags, (&exec, graph, flags_of(o)),
           "instantiating a CUDA graph on " + device.describe() +
               " (a graph whose memory allocations are still live from another instantiation, "
               "or that frees memory it did not allocate, cannot be instantiated)");
  return exec;
}

}  // namespace

Ref<Graph> Graph::from_capture(const Stream& stream, const GraphOptions& options) {
  uint64_t id = 0;
  try {
    id = capture_info(&stream).id;
  } catch (const Error&) {
    // A driver that cannot tell the id (before CUDA 12.3): 0.
  }
  CUgraph graph = end_capture(stream);  // throws when the capture was invalidated
  try {
    CUgraphExec exec = instantiate_native(stream.device(), graph, options);
    return Ref<Graph>::adopt(new Graph(stream.device_ref(), graph, exec, id));
  } catch (...) {
    ScopedContext scope(stream.device());
    RelaxedCaptureMode relaxed;
    CUMEM_CU_CLEANUP(cuGraphDestroy, (graph), "destroying a graph that failed to instantiate");
    throw;
  }
}

Ref<Graph> Graph::instantiate(Ref<Device> device, CUgraph native, const GraphOptions& options) {
  if (!native) fail(Status::invalid_argument, "cannot instantiate a NULL CUgraph");
  CUgraphExec exec = instantiate_native(*device, native, options);
  return Ref<Graph>::adopt(new Graph(std::move(device), nullptr, exec, 0));
}

void Graph::check_stream(const Stream* stream, const char* operation) const {
  if (stream && &stream->device() != device_.get())
    fail(Status::wrong_device, std::string("cannot ") + operation + " a graph of " +
                                   device_->describe() + " on " + stream->describe());
}

void Graph::launch(const Stream* stream) {
  check_stream(stream, "launch");
  ScopedContext scope(*device_);
  std::lock_guard<std::mutex> lock(launch_mutex_);
  CUMEM_CU(cuGraphLaunch, (exec_, native_or_legacy(stream)),
           "launching a graph on " +
               (stream ? stream->describe() : "the legacy default stream of " + device_->describe()) +
               " (a graph whose allocations are still live from its last launch needs "
               "auto_free_on_launch, or those allocations freed first)");
}

void Graph::upload(const Stream* stream) {
  check_stream(stream, "upload");
  ScopedContext scope(*device_);
  std::lock_guard<std::mutex> lock(launch_mutex_);
  CUMEM_CU(cuGraphUpload, (exec_, native_or_legacy(stream)),
           "uploading a graph on " +
               (stream ? stream->describe() : "the legacy default stream of " + device_->describe()));
}

Graph::~Graph() {
  // A destructor cannot report; the driver finishes pending launches first.
  try {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;
    CUMEM_CU_CLEANUP(cuGraphExecDestroy, (exec_), "destroying an executable graph");
    if (graph_) CUMEM_CU_CLEANUP(cuGraphDestroy, (graph_), "destroying a graph");
  } catch (...) {
    log::swallowed("destroying a graph");
  }
}

}  // namespace cumem::core
