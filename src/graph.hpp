// An executable CUDA graph: the CUgraphExec instantiated from a CUgraph
// (which the Graph owns when it came from a capture ended here), on one
// device. Launch and upload are serialised per graph (the driver's graph
// objects are not thread-safe); everything else may run concurrently.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>

#include "capture.hpp"
#include "device.hpp"
#include "object.hpp"
#include "stream.hpp"

namespace cumem::core {

struct GraphOptions {
  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH: a launch first frees
  // what the graph's previous launch allocated and did not free.
  bool auto_free_on_launch = false;
  // CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY: kernel nodes keep the
  // priority they were captured with.
  bool use_node_priority = false;
};

class Graph : public Object {
 public:
  // Ends the capture on `stream` and instantiates its graph, which the
  // Graph then owns. The capture ends whatever fails; on failure the
  // captured graph is destroyed.
  static Ref<Graph> from_capture(const Stream& stream, const GraphOptions& options);
  // Instantiates `native` (someone else's CUgraph, not owned: it may be
  // destroyed once this returns) for `device`.
  static Ref<Graph> instantiate(Ref<Device> device, CUgraph native, const GraphOptions& options);

  // Enqueues one run of the graph on `stream` (null: the legacy default
  // stream of the graph's device); wrong_device for another device's stream.
  void launch(const Stream* stream);
  // Uploads the graph's work to the device ahead of its first launch.
  void upload(const Stream* stream);
  CUgraphExec native() const noexcept { return exec_; }
  const Device& device() const noexcept { return *device_; }
  // The id of the capture the graph came from (capture_info's), 0 when it
  // was instantiated from someone else's CUgraph or the driver cannot tell:
  // what memory assigned to that capture is kept for (the caching
  // adaptor's private pools).
  uint64_t capture_id() const noexcept { return capture_id_; }

 private:
  Graph(Ref<Device> device, CUgraph graph, CUgraphExec exec, uint64_t capture_id)
      : Object(Tag::graph), device_(std::move(device)), graph_(graph), exec_(exec),
        capture_id_(capture_id) {}
  ~Graph() override;
  void check_stream(const Stream* stream, const char* operation) const;

  Ref<Device> device_;
  CUgraph graph_;  // owned; null when instantiated from someone else's
  CUgraphExec exec_;
  uint64_t capture_id_;
  std::mutex launch_mutex_;
};

}  // namespace cumem::core
