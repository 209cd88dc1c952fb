// What telling streams apart by cuStreamGetId would cost, and whether it is
// needed: the time of cuStreamGetId (and of cuStreamGetDevice and
// cuStreamIsCapturing, for scale) on a live stream, and whether the driver
// hands a destroyed stream's CUstream to the next stream made (the same
// handle, a new id), and whether cuStreamGetId may be asked of a capturing
// stream (cuStreamGetDevice may not: the refusal invalidates the capture).
// Built and run on the GPU machine by `tools/gpu_check.sh probes`.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    CUresult r_ = (call);                                                    \
    if (r_ != CUDA_SUCCESS) {                                                \
      fprintf(stderr, "%s failed: %d\n", #call, (int)r_);                    \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void) {
  enum { kCalls = 2000000, kStreams = 1000 };
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned long long id = 0, sum = 0;
  CUdevice d;
  CUstreamCaptureStatus st;
  for (int round = 0; round < 3; ++round) {
    double t = now_ns();
    for (int i = 0; i < kCalls; ++i) {
      CHECK(cuStreamGetId(s, &id));
      sum += id;
    }
    const double get_id = (now_ns() - t) / kCalls;
    t = now_ns();
    for (int i = 0; i < kCalls; ++i) {
      CHECK(cuStreamGetDevice(s, &d));
      sum += (unsigned)d;
    }
    const double get_device = (now_ns() - t) / kCalls;
    t = now_ns();
    for (int i = 0; i < kCalls; ++i) {
      CHECK(cuStreamIsCapturing(s, &st));
      sum += st;
    }
    const double capturing = (now_ns() - t) / kCalls;
    printf("round %d: cuStreamGetId %.1f ns, cuStreamGetDevice %.1f ns, cuStreamIsCapturing %.1f ns\n",
           round, get_id, get_device, capturing);
  }
  // With no context current.
  {
    CHECK(cuCtxSetCurrent(NULL));
    const CUresult r = cuStreamGetId(s, &id);
    printf("cuStreamGetId with no context current: %d\n", (int)r);
    CHECK(cuCtxSetCurrent(ctx));
  }
  // A capturing stream, in the strictest mode.
  {
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    const CUresult r = cuStreamGetId(s, &id);
    CUstreamCaptureStatus after = CU_STREAM_CAPTURE_STATUS_NONE;
    CHECK(cuStreamIsCapturing(s, &after));
    CUgraph g = NULL;
    const CUresult end = cuStreamEndCapture(s, &g);
    printf("cuStreamGetId on a capturing stream: %d; the capture after it: %s; ending it: %d\n",
           (int)r, after == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "active" : "invalidated", (int)end);
    if (g) CHECK(cuGraphDestroy(g));
  }
  // Handles reused: destroy a stream, make another, compare.
  int same_handle = 0, same_id = 0;
  for (int i = 0; i < kStreams; ++i) {
    CUstream a, b;
    unsigned long long ia, ib;
    CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamGetId(a, &ia));
    CHECK(cuStreamDestroy(a));
    CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamGetId(b, &ib));
    same_handle += a == b;
    same_id += ia == ib;
    CHECK(cuStreamDestroy(b));
  }
  printf("destroy then create, %d times: the same CUstream %d times, the same id %d times\n",
         kStreams, same_handle, same_id);
  CHECK(cuStreamDestroy(s));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  return sum == 42 ? 1 : 0;
}
