// A fake CUDA 13.0 driver that captures (loaded by libcumem through
// $CUMEM_LIBCUDA), for host tests of libcumem under stream capture. One
// device; "device" memory is host memory. It keeps the rules of the real
// driver that libcumem must live with:
//  - streams capture (cuStreamBeginCapture/EndCapture) in the three modes;
//    a stream that waits for an event recorded in a capture joins it, and
//    cuStreamGetCaptureInfo reports the capture's id on every stream in it;
//  - a "potentially unsafe" call (synchronous allocations and frees, pool
//    attributes and trims, waits, instantiation, ...) is refused with
//    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and invalidates the captures that
//    forbid it, when the calling thread's mode forbids it: its own capture
//    in a mode other than relaxed, or another thread's global capture while
//    this thread is in global mode (cuThreadExchangeStreamCaptureMode);
//  - waiting for or querying a capturing stream, or waiting for the device
//    while any stream captures, is refused and invalidates;
//  - using the legacy default stream while a blocking stream captures is
//    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates (except the
//    cuStreamIsCapturing question, which only answers);
//  - stream-ordered allocations and frees on a stream that does not capture
//    count as potentially unsafe (seen on 580.159: another thread's global
//    capture is invalidated by them), and cuStreamGetDevice on a capturing
//    stream is refused and invalidates the capture;
//  - stream-ordered allocations on a capturing stream become graph
//    allocations; a graph may free only graph memory (else
//    CUDA_ERROR_INVALID_VALUE, and the capture is invalidated);
//  - copies and fills on a capturing stream become graph nodes, run at
//    each launch of the instantiated graph; elsewhere they run at once.
// Tests reach the fake's own state through the extern "C" fake_* functions
// at the end (dlopen the same file: the same instance).
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Capture;

struct FakeStream {
  bool blocking = false;
  std::shared_ptr<Capture> capture;  // the capture this stream is in, if any
};

struct Node {
  std::function<void()> run;
};

struct Capture {
  uint64_t id = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  FakeStream* origin = nullptr;
  bool invalidated = false;
  std::vector<Node> nodes;
};

struct FakeEvent {
  std::shared_ptr<Capture> captured_in;  // recorded in a capture
};

struct FakeGraph {
  std::vector<Node> nodes;
};

struct FakePool {
  cuuint64_t release_threshold = 0;
  int reuse[3] = {1, 1, 1};
};

int primary_context_object;
const CUcontext primary_context = reinterpret_cast<CUcontext>(&primary_context_object);
thread_local CUcontext current_context = nullptr;
thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

std::recursive_mutex mutex;  // guards everything below
std::set<FakeStream*> streams;
// Destroyed streams are kept (never deleted), so that no stream made later
// gets a destroyed one's CUstream by chance. Never destroyed (reachable for
// LeakSanitizer, as graph_heap below).
std::set<FakeStream*>& destroyed_streams = *new std::set<FakeStream*>;
std::vector<std::shared_ptr<Capture>> captures;  // active or invalidated, not ended
uint64_t next_capture_id = 1000;
std::map<void*, size_t> graph_allocations;  // address -> bytes, while live
// Graph memory is never given back: a graph's launches keep writing it
// after its free node, as the real graph memory keeps its backing while
// the graph lives. Never destroyed, so that it stays reachable (not a leak)
// when LeakSanitizer looks, after the static destructors ran.
std::vector<void*>& graph_heap = *new std::vector<void*>;
uint64_t graph_used_high = 0;
FakePool default_pool;
std::map<std::string, int> calls;
int invalidations = 0;

void count(const char* name) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls[name];
}

FakeStream* stream_of(CUstream s) {
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return nullptr;
  return reinterpret_cast<FakeStream*>(s);
}

void invalidate(const std::shared_ptr<Capture>& c) {
  if (c && !c->invalidated) {
    c->invalidated = true;
    ++invalidations;
  }
}

// The rule for potentially unsafe calls (cuThreadExchangeStreamCaptureMode).
CUresult forbidden_here();
CUresult unsafe_call(const char* name) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls[name];
  return forbidden_here();
}
CUresult forbidden_here() {
  if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  std::vector<std::shared_ptr<Capture>> forbidding;
  for (const auto& c : captures) {
    if (c->invalidated) continue;
    const bool mine = c->thread == std::this_thread::get_id();
    if (mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) forbidding.push_back(c);
    if (!mine && thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
        c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
      forbidding.push_back(c);
  }
  for (const auto& c : forbidding) invalidate(c);
  return forbidding.empty() ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

// The capture a stream-ordered call on `s` goes into; null for one that
// runs now. The legacy stream joins a blocking stream's capture, which is
// invalid: *refused set.
std::shared_ptr<Capture> capture_of(CUstream s, CUresult* refused) {
  *refused = CUDA_SUCCESS;
  if (s == nullptr || s == CU_STREAM_LEGACY) {
    for (const auto& c : captures)
      if (!c->invalidated && c->origin && c->origin->blocking) {
        invalidate(c);
        *refused = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
    return nullptr;
  }
  FakeStream* fs = stream_of(s);
  if (!fs || !fs->capture) return nullptr;
  if (fs->capture->invalidated) *refused = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  return fs->capture;
}

// Runs `op` now, or records it into the capture of `s`.
CUresult stream_op(const char* name, CUstream s, std::function<void()> op) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls[name];
  CUresult refused = CUDA_SUCCESS;
  std::shared_ptr<Capture> c = capture_of(s, &refused);
  if (refused != CUDA_SUCCESS) return refused;
  if (c)
    c->nodes.push_back(Node{std::move(op)});
  else
    op();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGetErrorName(CUresult error, const char** out) {
  switch (error) {
    case CUDA_SUCCESS: *out = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *out = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *out = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
      *out = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
      return CUDA_SUCCESS;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
      *out = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
      return CUDA_SUCCESS;
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
      *out = "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
      return CUDA_SUCCESS;
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
      *out = "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD";
      return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_STATE: *out = "CUDA_ERROR_ILLEGAL_STATE"; return CUDA_SUCCESS;
    default: *out = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI fake_cuGetErrorString(CUresult error, const char** out) {
  const char* name = nullptr;
  if (fake_cuGetErrorName(error, &name) != CUDA_SUCCESS) {
    *out = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = "an error of the fake capturing driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGetName(char* name, int length, CUdevice) {
  std::strncpy(name, "Fake Capturing Device", static_cast<size_t>(length));
  name[length - 1] = '\0';
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGetUuid(CUuuid* uuid, CUdevice) {
  std::memset(uuid, 0x42, sizeof *uuid);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *value = -1; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice) {
  *ctx = primary_context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = current_context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxSetCurrent(CUcontext ctx) {
  current_context = ctx;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuCtxSynchronize() {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuCtxSynchronize"];
  // A device-wide wait conflicts with any capture on the device, in any mode.
  bool any = false;
  for (const auto& c : captures)
    if (!c->invalidated) {
      invalidate(c);
      any = true;
    }
  return any ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemGetInfo(size_t* free_bytes, size_t* total) {
  if (CUresult r = unsafe_call("cuMemGetInfo")) return r;
  *free_bytes = size_t{64} << 30;
  *total = size_t{80} << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamCreateWithPriority(CUstream* s, unsigned int flags, int) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  auto* fs = new FakeStream;
  fs->blocking = (flags & CU_STREAM_NON_BLOCKING) == 0;
  streams.insert(fs);
  *s = reinterpret_cast<CUstream>(fs);
  return CUDA_SUCCESS;
}
// A framework's stream (bench_capture's foreign rows).
CUresult CUDAAPI fake_cuStreamCreate(CUstream* s, unsigned int flags) {
  return fake_cuStreamCreateWithPriority(s, flags, 0);
}
CUresult CUDAAPI fake_cuStreamDestroy(CUstream s) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  FakeStream* fs = stream_of(s);
  if (!fs || !streams.count(fs)) return CUDA_ERROR_INVALID_HANDLE;
  streams.erase(fs);
  *fs = FakeStream{};
  destroyed_streams.insert(fs);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamGetPriority(CUstream, int* p) {
  *p = 0;
  return CUDA_SUCCESS;
}
// As the real driver (580.159): refused on a capturing stream, and the
// refusal invalidates the capture.
CUresult CUDAAPI fake_cuStreamGetDevice(CUstream s, CUdevice* d) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuStreamGetDevice"];
  FakeStream* fs = stream_of(s);
  if (fs && fs->capture) {
    invalidate(fs->capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamSynchronize(CUstream s) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (CUresult r = unsafe_call("cuStreamSynchronize")) return r;
  CUresult refused = CUDA_SUCCESS;
  std::shared_ptr<Capture> c = capture_of(s, &refused);
  if (refused != CUDA_SUCCESS) return refused;
  if (c) {  // a capturing stream's work has not run: waiting for it is invalid
    invalidate(c);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamQuery(CUstream s) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuStreamQuery"];
  CUresult refused = CUDA_SUCCESS;
  std::shared_ptr<Capture> c = capture_of(s, &refused);
  if (refused != CUDA_SUCCESS) return refused;
  if (c) {
    invalidate(c);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}
// The answer of both capture queries (under the lock).
CUresult capture_status(CUstream s, CUstreamCaptureStatus* status) {
  if (s == nullptr || s == CU_STREAM_LEGACY) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    for (const auto& c : captures)  // answers only: nothing is invalidated
      if (c->origin && c->origin->blocking) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    return CUDA_SUCCESS;
  }
  FakeStream* fs = stream_of(s);
  if (fs && !streams.count(fs)) {  // the real driver may crash here
    ++calls["capture query on a destroyed stream"];
    return CUDA_ERROR_INVALID_HANDLE;
  }
  *status = !fs || !fs->capture ? CU_STREAM_CAPTURE_STATUS_NONE
            : fs->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                       : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* status) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuStreamIsCapturing"];
  return capture_status(s, status);
}
CUresult CUDAAPI fake_cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* status,
                                             cuuint64_t* id, CUgraph*, const CUgraphNode**,
                                             const CUgraphEdgeData**, size_t*) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuStreamGetCaptureInfo"];
  const CUresult r = capture_status(s, status);
  if (r == CUDA_SUCCESS && id && *status != CU_STREAM_CAPTURE_STATUS_NONE)
    *id = stream_of(s)->capture->id;
  return r;
}
CUresult CUDAAPI fake_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuStreamBeginCapture"];
  FakeStream* fs = stream_of(s);
  if (!fs || fs->capture) return CUDA_ERROR_ILLEGAL_STATE;
  auto c = std::make_shared<Capture>();
  c->id = next_capture_id++;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = fs;
  fs->capture = c;
  captures.push_back(c);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamEndCapture(CUstream s, CUgraph* graph) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuStreamEndCapture"];
  FakeStream* fs = stream_of(s);
  if (!fs || !fs->capture || fs->capture->origin != fs) return CUDA_ERROR_ILLEGAL_STATE;
  std::shared_ptr<Capture> c = fs->capture;
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  for (FakeStream* other : streams)
    if (other->capture == c) other->capture.reset();
  for (auto it = captures.begin(); it != captures.end(); ++it)
    if (*it == c) {
      captures.erase(it);
      break;
    }
  *graph = nullptr;
  if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto* g = new FakeGraph;
  g->nodes = std::move(c->nodes);
  *graph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  count("cuThreadExchangeStreamCaptureMode");
  const CUstreamCaptureMode previous = thread_mode;
  thread_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventCreate(CUevent* e, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuEventCreate"];
  *e = reinterpret_cast<CUevent>(new FakeEvent);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventDestroy(CUevent e) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuEventDestroy"];
  delete reinterpret_cast<FakeEvent*>(e);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventRecord(CUevent e, CUstream s) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuEventRecord"];
  // The real driver crashes here (seen on the H200: a cache recorded on a
  // CuPy stream destroyed after its free); the fake counts it.
  if (FakeStream* fs = stream_of(s); fs && !streams.count(fs)) {
    ++calls["cuEventRecord on a destroyed stream"];
    return CUDA_ERROR_INVALID_HANDLE;
  }
  CUresult refused = CUDA_SUCCESS;
  std::shared_ptr<Capture> c = capture_of(s, &refused);
  if (refused != CUDA_SUCCESS) return refused;
  reinterpret_cast<FakeEvent*>(e)->captured_in = c;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuStreamWaitEvent(CUstream s, CUevent e, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuStreamWaitEvent"];
  const std::shared_ptr<Capture> from = reinterpret_cast<FakeEvent*>(e)->captured_in;
  CUresult refused = CUDA_SUCCESS;
  std::shared_ptr<Capture> into = capture_of(s, &refused);
  if (refused != CUDA_SUCCESS) return refused;
  if (from && from->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (into && from != into) {  // an event of outside (or of another capture)
    invalidate(into);
    invalidate(from);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (from && !into) {  // joins the capture (fork)
    FakeStream* fs = stream_of(s);
    if (!fs) {
      invalidate(from);
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    fs->capture = from;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventSynchronize(CUevent e) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (CUresult r = unsafe_call("cuEventSynchronize")) return r;
  if (reinterpret_cast<FakeEvent*>(e)->captured_in) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuEventQuery(CUevent e) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (CUresult r = unsafe_call("cuEventQuery")) return r;
  if (reinterpret_cast<FakeEvent*>(e)->captured_in) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

// Synchronous memory: host memory, refused as unsafe under capture.
CUresult CUDAAPI fake_cuMemAlloc(CUdeviceptr* p, size_t n) {
  if (CUresult r = unsafe_call("cuMemAlloc")) return r;
  *p = reinterpret_cast<CUdeviceptr>(std::calloc(1, n));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI fake_cuMemFree(CUdeviceptr p) {
  if (CUresult r = unsafe_call("cuMemFree")) return r;
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemHostAlloc(void** p, size_t n, unsigned int) {
  if (CUresult r = unsafe_call("cuMemHostAlloc")) return r;
  *p = std::calloc(1, n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI fake_cuMemFreeHost(void* p) {
  if (CUresult r = unsafe_call("cuMemFreeHost")) return r;
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned int) {
  if (CUresult r = unsafe_call("cuMemAllocManaged")) return r;
  *p = reinterpret_cast<CUdeviceptr>(std::calloc(1, n));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

// Stream-ordered memory: graph memory under capture.
CUresult alloc_async(const char* name, CUdeviceptr* p, size_t n, CUstream s) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls[name];
  CUresult refused = CUDA_SUCCESS;
  std::shared_ptr<Capture> c = capture_of(s, &refused);
  if (refused != CUDA_SUCCESS) return refused;
  // Outside a capture, a pool call is potentially unsafe (the real driver
  // refuses it during another thread's global capture, and invalidates it).
  if (!c)
    if (CUresult r = forbidden_here()) return r;
  void* mem = std::calloc(1, n);
  if (!mem) return CUDA_ERROR_OUT_OF_MEMORY;
  if (c) {
    graph_heap.push_back(mem);
    graph_allocations[mem] = n;
    uint64_t used = 0;
    for (const auto& [ptr, bytes] : graph_allocations) used += bytes;
    if (used > graph_used_high) graph_used_high = used;
  }
  *p = reinterpret_cast<CUdeviceptr>(mem);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t n, CUmemoryPool, CUstream s) {
  return alloc_async("cuMemAllocFromPoolAsync", p, n, s);
}
CUresult CUDAAPI fake_cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream s) {
  return alloc_async("cuMemAllocAsync", p, n, s);
}
CUresult CUDAAPI fake_cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuMemFreeAsync"];
  void* mem = reinterpret_cast<void*>(p);
  CUresult refused = CUDA_SUCCESS;
  std::shared_ptr<Capture> c = capture_of(s, &refused);
  if (refused != CUDA_SUCCESS) return refused;
  if (!c)
    if (CUresult r = forbidden_here()) return r;
  const bool graph_memory = graph_allocations.count(mem) != 0;
  if (c && !graph_memory) {  // a graph frees only graph memory
    invalidate(c);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (c) ++calls["graph free node"];
  const bool in_graph_heap = std::find(graph_heap.begin(), graph_heap.end(), mem) != graph_heap.end();
  graph_allocations.erase(mem);
  if (!in_graph_heap) std::free(mem);  // eager memory, freed in stream order (at once)
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice) {
  *pool = reinterpret_cast<CUmemoryPool>(&default_pool);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v) {
  if (CUresult r = unsafe_call("cuMemPoolSetAttribute")) return r;
  auto* p = reinterpret_cast<FakePool*>(pool);
  if (a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) p->release_threshold = *static_cast<cuuint64_t*>(v);
  if (a <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) p->reuse[a - 1] = *static_cast<int*>(v);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v) {
  if (CUresult r = unsafe_call("cuMemPoolGetAttribute")) return r;
  auto* p = reinterpret_cast<FakePool*>(pool);
  if (a <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
    *static_cast<int*>(v) = p->reuse[a - 1];
  else
    *static_cast<cuuint64_t*>(v) = a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ? p->release_threshold : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuMemPoolTrimTo(CUmemoryPool, size_t) { return unsafe_call("cuMemPoolTrimTo"); }
CUresult CUDAAPI fake_cuMemPoolSetAccess(CUmemoryPool, const CUmemAccessDesc*, size_t) {
  return unsafe_call("cuMemPoolSetAccess");
}
CUresult CUDAAPI fake_cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool, CUmemLocation*) {
  if (CUresult r = unsafe_call("cuMemPoolGetAccess")) return r;
  *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return stream_op("cuMemcpyAsync", s, [=] {
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  });
}
CUresult CUDAAPI fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  return stream_op("cuMemsetD8Async", s, [=] { std::memset(reinterpret_cast<void*>(dst), v, n); });
}
CUresult CUDAAPI fake_cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
  return stream_op("cuMemsetD32Async", s, [=] {
    auto* words = reinterpret_cast<unsigned int*>(dst);
    for (size_t i = 0; i < n; ++i) words[i] = v;
  });
}

CUresult CUDAAPI fake_cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                  unsigned long long) {
  if (CUresult r = unsafe_call("cuGraphInstantiateWithFlags")) return r;
  auto* e = new FakeGraph(*reinterpret_cast<FakeGraph*>(graph));
  *exec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuGraphLaunch(CUgraphExec exec, CUstream s) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ++calls["cuGraphLaunch"];
  CUresult refused = CUDA_SUCCESS;
  if (capture_of(s, &refused) || refused != CUDA_SUCCESS) return CUDA_ERROR_NOT_SUPPORTED;
  for (const Node& n : reinterpret_cast<FakeGraph*>(exec)->nodes) n.run();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuGraphUpload(CUgraphExec, CUstream) {
  count("cuGraphUpload");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuGraphExecDestroy(CUgraphExec exec) {
  if (CUresult r = unsafe_call("cuGraphExecDestroy")) return r;
  delete reinterpret_cast<FakeGraph*>(exec);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuGraphDestroy(CUgraph graph) {
  if (CUresult r = unsafe_call("cuGraphDestroy")) return r;
  delete reinterpret_cast<FakeGraph*>(graph);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGetGraphMemAttribute(CUdevice, CUgraphMem_attribute a, void* v) {
  if (CUresult r = unsafe_call("cuDeviceGetGraphMemAttribute")) return r;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  uint64_t used = 0;
  for (const auto& [ptr, bytes] : graph_allocations) used += bytes;
  cuuint64_t value = 0;
  switch (a) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: value = used; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: value = graph_used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  *static_cast<cuuint64_t*>(v) = value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceSetGraphMemAttribute(CUdevice, CUgraphMem_attribute a, void* v) {
  if (CUresult r = unsafe_call("cuDeviceSetGraphMemAttribute")) return r;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (*static_cast<cuuint64_t*>(v) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (a == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH || a == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
    uint64_t used = 0;
    for (const auto& [ptr, bytes] : graph_allocations) used += bytes;
    graph_used_high = used;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_cuDeviceGraphMemTrim(CUdevice) { return unsafe_call("cuDeviceGraphMemTrim"); }

struct Entry {
  const char* name;
  void* function;
};

// The static_cast to the PFN type libcumem uses (src/driver/driver.hpp)
// checks each signature at compile time.
#define FAKE_ENTRY(name, version) \
  Entry { #name, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&fake_##name)) }
const Entry served[] = {
    FAKE_ENTRY(cuGetErrorName, 6000),
    FAKE_ENTRY(cuGetErrorString, 6000),
    FAKE_ENTRY(cuDeviceGetCount, 2000),
    FAKE_ENTRY(cuDeviceGet, 2000),
    FAKE_ENTRY(cuDeviceGetName, 2000),
    FAKE_ENTRY(cuDeviceGetUuid, 11040),
    FAKE_ENTRY(cuDeviceTotalMem, 3020),
    FAKE_ENTRY(cuDeviceGetAttribute, 2000),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain, 7000),
    FAKE_ENTRY(cuDevicePrimaryCtxRelease, 11000),
    FAKE_ENTRY(cuCtxGetCurrent, 4000),
    FAKE_ENTRY(cuCtxSetCurrent, 4000),
    FAKE_ENTRY(cuCtxSynchronize, 2000),
    FAKE_ENTRY(cuCtxGetStreamPriorityRange, 5050),
    FAKE_ENTRY(cuMemGetInfo, 3020),
    FAKE_ENTRY(cuStreamCreate, 2000),
    FAKE_ENTRY(cuStreamCreateWithPriority, 5050),
    FAKE_ENTRY(cuStreamDestroy, 4000),
    FAKE_ENTRY(cuStreamGetPriority, 5050),
    FAKE_ENTRY(cuStreamGetDevice, 12080),
    FAKE_ENTRY(cuStreamSynchronize, 2000),
    FAKE_ENTRY(cuStreamQuery, 2000),
    FAKE_ENTRY(cuStreamWaitEvent, 3020),
    FAKE_ENTRY(cuStreamIsCapturing, 10000),
    FAKE_ENTRY(cuStreamGetCaptureInfo, 12030),
    FAKE_ENTRY(cuStreamBeginCapture, 10010),
    FAKE_ENTRY(cuStreamEndCapture, 10000),
    FAKE_ENTRY(cuThreadExchangeStreamCaptureMode, 10010),
    FAKE_ENTRY(cuEventCreate, 2000),
    FAKE_ENTRY(cuEventDestroy, 4000),
    FAKE_ENTRY(cuEventRecord, 2000),
    FAKE_ENTRY(cuEventSynchronize, 2000),
    FAKE_ENTRY(cuEventQuery, 2000),
    FAKE_ENTRY(cuMemAlloc, 3020),
    FAKE_ENTRY(cuMemFree, 3020),
    FAKE_ENTRY(cuMemHostAlloc, 2020),
    FAKE_ENTRY(cuMemFreeHost, 2000),
    FAKE_ENTRY(cuMemAllocManaged, 6000),
    FAKE_ENTRY(cuMemAllocFromPoolAsync, 11020),
    FAKE_ENTRY(cuMemAllocAsync, 11020),
    FAKE_ENTRY(cuMemFreeAsync, 11020),
    FAKE_ENTRY(cuDeviceGetDefaultMemPool, 11020),
    FAKE_ENTRY(cuMemPoolSetAttribute, 11020),
    FAKE_ENTRY(cuMemPoolGetAttribute, 11020),
    FAKE_ENTRY(cuMemPoolTrimTo, 11020),
    FAKE_ENTRY(cuMemPoolSetAccess, 11020),
    FAKE_ENTRY(cuMemPoolGetAccess, 11020),
    FAKE_ENTRY(cuMemcpyAsync, 4000),
    FAKE_ENTRY(cuMemsetD8Async, 3020),
    FAKE_ENTRY(cuMemsetD32Async, 3020),
    FAKE_ENTRY(cuGraphInstantiateWithFlags, 11040),
    FAKE_ENTRY(cuGraphLaunch, 10000),
    FAKE_ENTRY(cuGraphUpload, 11010),
    FAKE_ENTRY(cuGraphExecDestroy, 10000),
    FAKE_ENTRY(cuGraphDestroy, 10000),
    FAKE_ENTRY(cuDeviceGetGraphMemAttribute, 11040),
    FAKE_ENTRY(cuDeviceSetGraphMemAttribute, 11040),
    FAKE_ENTRY(cuDeviceGraphMemTrim, 11040),
};
#undef FAKE_ENTRY

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult CUDAAPI cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

__attribute__((visibility("default"))) CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult CUDAAPI cuGetProcAddress_v2(
    const char* symbol, void** pfn, int, cuuint64_t, CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  for (const Entry& e : served) {
    if (std::strcmp(e.name, symbol) == 0) {
      *pfn = e.function;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_SUCCESS;
}

// The test's window into the fake.

// How often the entry point `name` was called since the last reset.
__attribute__((visibility("default"))) int fake_calls(const char* name) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  auto it = calls.find(name);
  return it == calls.end() ? 0 : it->second;
}
__attribute__((visibility("default"))) void fake_reset_calls() {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  calls.clear();
}
// How many captures were invalidated so far.
__attribute__((visibility("default"))) int fake_invalidations() {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  return invalidations;
}
// The calling thread's capture mode now.
__attribute__((visibility("default"))) int fake_thread_mode() { return thread_mode; }

}  // extern "C"
