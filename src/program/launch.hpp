// Launching a kernel: the configuration is checked against the device's and
// the kernel's limits first, so that a bad one is reported by name instead
// of as CUDA_ERROR_INVALID_VALUE.
#pragma once

#include <cstdint>

#include "../stream.hpp"
#include "kernel.hpp"

namespace cumem::core {

struct LaunchConfig {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_memory_bytes = 0;  // dynamic, per block
  uint32_t cluster[3] = {0, 0, 0};   // all 0: no clusters
};

// `args` holds num_args pointers to the argument values (cuLaunchKernel's
// kernelParams); `stream` nullptr is the device's legacy default stream.
// Throws invalid_launch_config, wrong_device, invalid_argument (args NULL
// with num_args > 0).
void launch(const Kernel& kernel, const Stream* stream, const LaunchConfig& config,
            void** args, uint32_t num_args);

}  // namespace cumem::core
