// memory_ops with memory pools, with libcumem's C++ facade: the same kernel
// and checks as memory_ops.cpp, with managed (unified) memory that prefers
// the device instead of device memory, and pinned host memory from a
// stream-ordered pool instead of cuMemHostAlloc. Managed memory is
// prefetched to the device before the launch and back to the host before
// the host reads it. Exits non-zero on any error or mismatch, and with 77
// (what test harnesses read as "skipped") where there is no GPU.
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

  cumem_managed_resource_options_t managed_options = cumem::managed_resource_options();
  managed_options.preferred_location = cumem::location::device(0);
  cumem::Resource managed_mr = cumem::Resource::managed(device, managed_options);
  cumem::Resource pinned_mr = cumem::Resource::pinned(device);
  cumem::Buffer managed_buffer = managed_mr.allocate(bytes, stream);
  cumem::Buffer pinned_buffer = pinned_mr.allocate(bytes, stream);
  // Stream-ordered allocations are usable by the host once the stream has
  // reached them.
  stream.synchronize();
  float* managed = managed_buffer.data<float>();
  float* pinned = pinned_buffer.data<float>();

  // Random data, written directly: both kinds of memory are host-accessible.
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> original_managed(N), original_pinned(N), plus_one(N), times_three(N);
  for (size_t i = 0; i < N; ++i) {
    original_managed[i] = uniform(rng);
    original_pinned[i] = uniform(rng);
    plus_one[i] = original_managed[i] + 1.0f;
    times_three[i] = original_pinned[i] * 3.0f;
  }
  std::copy(original_managed.begin(), original_managed.end(), managed);
  std::copy(original_pinned.begin(), original_pinned.end(), pinned);

  const cumem::LaunchConfig config(static_cast<uint32_t>((N + block - 1) / block), block);
  managed_buffer.prefetch(cumem::location::device(0), stream);
  cumem::launch(kernel, stream, config, managed_buffer, pinned_buffer, size_t{N});
  managed_buffer.prefetch(cumem::location::host(), stream);
  stream.synchronize();

  int mismatches = 0;
  mismatches += compare("managed_data[i] == original + 1", managed, plus_one);
  mismatches += compare("pinned_data[i] == original * 3", pinned, times_three);

  // Managed -> pinned: the pinned buffer now holds the kernel's results.
  std::fill(pinned, pinned + N, 0.0f);
  managed_buffer.copy_to(pinned_buffer, stream);
  stream.synchronize();
  mismatches += compare("pinned after copy from managed", pinned, plus_one);

  // Pinned -> a new managed buffer, read on the host after a prefetch.
  cumem::Buffer new_managed_buffer = managed_mr.allocate(bytes, stream);
  pinned_buffer.copy_to(new_managed_buffer, stream);
  new_managed_buffer.prefetch(cumem::location::host(), stream);
  stream.synchronize();
  mismatches += compare("new managed buffer after copy from pinned",
                        new_managed_buffer.data<float>(), plus_one);

  new_managed_buffer.close(stream);
  pinned_buffer.close(stream);
  managed_buffer.close(stream);
  stream.synchronize();
  std::printf("%s\n", mismatches ? "memory_pools: FAILED" : "memory_pools: all checks passed");
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
