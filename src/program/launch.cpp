#include "launch.hpp"

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core {
namespace {

const std::string axis[3] = {"x", "y", "z"};

std::string dims(const uint32_t d[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

[[noreturn]] void bad_config(const std::string& message) {
  fail(Status::invalid_launch_config, message);
}

void check_dimensions(const Kernel& kernel, const LaunchConfig& c) {
  const Device& device = kernel.device();
  const DeviceLimits& limits = device.limits();
  for (int i = 0; i < 3; ++i) {
    if (c.grid[i] == 0 || c.block[i] == 0)
      bad_config("grid " + dims(c.grid) + ", block " + dims(c.block) +
                 " has a zero dimension: every grid and block dimension must be at least 1");
  }
  for (int i = 0; i < 3; ++i) {
    const int grid_limit = limits.max_grid[i];
    if (static_cast<int64_t>(c.grid[i]) > grid_limit)
      bad_config("grid " + axis[i] + " dimension " + std::to_string(c.grid[i]) +
                 " exceeds the maximum grid " + axis[i] + " dimension " +
                 std::to_string(grid_limit) + " of " + device.describe());
    const int block_limit = limits.max_block[i];
    if (static_cast<int64_t>(c.block[i]) > block_limit)
      bad_config("block " + axis[i] + " dimension " + std::to_string(c.block[i]) +
                 " exceeds the maximum block " + axis[i] + " dimension " +
                 std::to_string(block_limit) + " of " + device.describe());
  }
  const uint64_t threads = uint64_t{c.block[0]} * c.block[1] * c.block[2];
  const int max_threads = kernel.max_threads_per_block();
  if (threads > static_cast<uint64_t>(max_threads))
    bad_config("block " + dims(c.block) + " has " + std::to_string(threads) +
               " threads, above the maximum threads per block of " + kernel.describe() +
               " (" + std::to_string(max_threads) + ")");
}

// Dynamic shared memory above the kernel's current allowance is allowed by
// raising the allowance, up to the device's opt-in limit minus the kernel's
// static shared memory.
void check_shared_memory(const Kernel& kernel, const LaunchConfig& c) {
  if (c.shared_memory_bytes == 0) return;
  const int64_t asked = c.shared_memory_bytes;
  if (asked <= kernel.attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)) return;
  const int64_t optin = kernel.device().limits().max_shared_memory_per_block_optin;
  const int64_t static_bytes = kernel.static_shared_bytes();
  if (asked > optin - static_bytes)
    bad_config(std::to_string(asked) + " bytes of dynamic shared memory exceed what " +
               kernel.describe() + " can use: the maximum shared memory per block (opt-in) of " +
               std::to_string(optin) + " bytes minus its " + std::to_string(static_bytes) +
               " bytes of static shared memory leaves " + std::to_string(optin - static_bytes) +
               " bytes");
  kernel.raise_max_dynamic_shared(static_cast<int>(asked));
}

// Returns whether the launch uses clusters.
bool check_cluster(const Kernel& kernel, const LaunchConfig& c) {
  if (c.cluster[0] == 0 && c.cluster[1] == 0 && c.cluster[2] == 0) return false;
  if (c.cluster[0] == 0 || c.cluster[1] == 0 || c.cluster[2] == 0)
    bad_config("cluster " + dims(c.cluster) +
               " has a zero dimension: use 0x0x0 for no clusters, or make every "
               "dimension at least 1");
  const Device& device = kernel.device();
  if (!device.limits().cluster_launch)
    bad_config("cluster " + dims(c.cluster) + " asked, but " + device.describe() +
               " does not support thread-block cluster launch (compute capability 9.0 or "
               "newer needed)");
  for (int i = 0; i < 3; ++i) {
    if (c.grid[i] % c.cluster[i] != 0)
      bad_config("grid " + dims(c.grid) + " is not a multiple of cluster " + dims(c.cluster) +
                 ": grid " + axis[i] + " dimension " + std::to_string(c.grid[i]) +
                 " is not divisible by cluster " + axis[i] + " dimension " +
                 std::to_string(c.cluster[i]));
  }
  return true;
}

}  // namespace

void launch(const Kernel& kernel, const Stream* stream, const LaunchConfig& config,
            void** args, uint32_t num_args) {
  const Device& device = kernel.device();
  if (stream && &stream->device() != &device)
    fail(Status::wrong_device, "cannot launch " + kernel.describe() + " on " +
                                   stream->describe() + ": the stream must belong to " +
                                   device.describe());
  if (num_args > 0 && !args)
    fail(Status::invalid_argument,
         "args is NULL but num_args is " + std::to_string(num_args));
  check_dimensions(kernel, config);
  const bool clustered = check_cluster(kernel, config);
  check_shared_memory(kernel, config);

  CUlaunchAttribute cluster_attribute{};
  cluster_attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster_attribute.value.clusterDim.x = config.cluster[0];
  cluster_attribute.value.clusterDim.y = config.cluster[1];
  cluster_attribute.value.clusterDim.z = config.cluster[2];
  CUlaunchConfig native{};
  native.gridDimX = config.grid[0];
  native.gridDimY = config.grid[1];
  native.gridDimZ = config.grid[2];
  native.blockDimX = config.block[0];
  native.blockDimY = config.block[1];
  native.blockDimZ = config.block[2];
  native.sharedMemBytes = config.shared_memory_bytes;
  native.hStream = native_or_legacy(stream);
  native.attrs = clustered ? &cluster_attribute : nullptr;
  native.numAttrs = clustered ? 1 : 0;

  ScopedContext scope(device);
  // A CUkernel is accepted where a CUfunction is expected (CUDA 12.0+): the
  // driver picks the kernel's code for the current context.
  const CUresult r = CUMEM_CU_RESULT(
      cuLaunchKernelEx, (&native, reinterpret_cast<CUfunction>(kernel.native()), args, nullptr));
  if (r == CUDA_SUCCESS) return;  // the message below is for failures only: keep launches cheap
  const std::string what =
      "launching " + kernel.describe() + " with grid " + dims(config.grid) + ", block " +
      dims(config.block) + ", " + std::to_string(config.shared_memory_bytes) +
      " bytes of dynamic shared memory" +
      (clustered ? ", cluster " + dims(config.cluster) : std::string()) + " on " +
      (stream ? stream->describe() : "the legacy default stream of " + device.describe());
  if (r == CUDA_ERROR_INVALID_CLUSTER_SIZE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    bad_config("cuLaunchKernelEx refused the configuration with " + driver::describe(r) +
               " while " + what);
  driver::check(r, "cuLaunchKernelEx", what);
}

}  // namespace cumem::core
