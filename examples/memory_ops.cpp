// The seed example, cuda.core's memory_ops, with libcumem's C++ facade:
// compile a kernel at run time, allocate device memory (a stream-ordered
// pool) and pinned host memory (cuMemHostAlloc), launch, copy between them,
// and check every result. Exits non-zero on any error or mismatch, and with
// 77 (what test harnesses read as "skipped") where there is no GPU.
#include <cumem/cumem.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr size_t N = 1024;
constexpr uint32_t block = 256;

const char* const source = R"(
extern "C" __global__ void memory_ops(float* device_data, float* pinned_data, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) {
    device_data[i] += 1.0f;
    pinned_data[i] *= 3.0f;
  }
}
)";

// Prints the check; returns 0 when all values match, 1 otherwise.
int compare(const char* what, const float* got, const std::vector<float>& expected) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (got[i] != expected[i]) {
      std::printf("%s: MISMATCH at %zu: %g, expected %g\n", what, i, got[i], expected[i]);
      return 1;
    }
  }
  std::printf("%s: OK (%zu values)\n", what, expected.size());
  return 0;
}

int run() {
  const size_t bytes = N * sizeof(float);
  cumem::Device device = cumem::Device::get(0);
  cumem::Stream stream = cumem::Stream::create(device);
  cumem::Kernel kernel = cumem::Program::compile(device, source).load().get_kernel("memory_ops");

  // The device's memory resource: its default pool unless the program chose another.
  cumem::Resource device_mr = device.memory_resource();
  cumem::Resource pinned_mr = cumem::Resource::legacy_pinned(device);
  cumem::Buffer device_buffer = device_mr.allocate(bytes, stream);
  cumem::Buffer pinned_buffer = pinned_mr.allocate(bytes, stream);
  cumem::Buffer staging = pinned_mr.allocate(bytes, stream);  // for copies to and from the device
  float* pinned = pinned_buffer.data<float>();
  float* staged = staging.data<float>();

  // Random data: the device buffer gets it through the staging copy, the
  // pinned buffer directly through its host pointer.
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> original_device(N), original_pinned(N), plus_one(N), times_three(N);
  for (size_t i = 0; i < N; ++i) {
    original_device[i] = uniform(rng);
    original_pinned[i] = uniform(rng);
    plus_one[i] = original_device[i] + 1.0f;
    times_three[i] = original_pinned[i] * 3.0f;
  }
  std::copy(original_device.begin(), original_device.end(), staged);
  std::copy(original_pinned.begin(), original_pinned.end(), pinned);
  staging.copy_to(device_buffer, stream);

  // A Buffer argument passes its pointer; mapped pinned memory's host
  // pointer works on the device.
  const cumem::LaunchConfig config(static_cast<uint32_t>((N + block - 1) / block), block);
  cumem::launch(kernel, stream, config, device_buffer, pinned_buffer, size_t{N});
  stream.synchronize();

  int mismatches = 0;
  device_buffer.copy_to(staging, stream);
  stream.synchronize();
  mismatches += compare("device_data[i] == original + 1", staged, plus_one);
  mismatches += compare("pinned_data[i] == original * 3", pinned, times_three);

  // Device -> pinned: the pinned buffer now holds the device results.
  std::fill(pinned, pinned + N, 0.0f);
  device_buffer.copy_to(pinned_buffer, stream);
  stream.synchronize();
  mismatches += compare("pinned after copy from device", pinned, plus_one);

  // Pinned -> a new device buffer, read back through the cleared staging buffer.
  cumem::Buffer new_device_buffer = device_mr.allocate(bytes, stream);
  pinned_buffer.copy_to(new_device_buffer, stream);
  std::fill(staged, staged + N, 0.0f);
  new_device_buffer.copy_to(staging, stream);
  stream.synchronize();
  mismatches += compare("new device buffer after copy from pinned", staged, plus_one);

  new_device_buffer.close(stream);
  staging.close(stream);
  pinned_buffer.close(stream);
  device_buffer.close(stream);
  stream.synchronize();
  std::printf("%s\n", mismatches ? "memory_ops: FAILED" : "memory_ops: all checks passed");
  return mismatches ? 1 : 0;
}

}  // namespace

int main() {
  try {
    if (cumem::Device::count() == 0) {
      std::printf("no CUDA device to run on (the driver reports none)\n");
      return 77;
    }
  } catch (const cumem::Error& e) {
    std::printf("no CUDA device to run on (%s)\n", e.what());
    return 77;
  }
  try {
    return run();
  } catch (const cumem::Error& e) {
    std::fprintf(stderr, "%s: %s\n", cumem::status_string(e.status()), e.what());
    return 1;
  }
}
