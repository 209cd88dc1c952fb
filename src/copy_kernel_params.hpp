// The parameters of the batch copy kernels (src/copy_kernel.cu), passed by
// value, so that a launch owns its copies' descriptors (nothing staged to
// keep alive; a captured kernel node keeps them). Included by the kernel
// source and by copy_kernel.cpp, which packs them: plain types only, no
// CUDA header, no padding.
#pragma once

namespace cumem::core::copy_kernel {

// Threads per block: a 4 KiB copy is one 16-byte access per thread.
constexpr unsigned kThreads = 256;

// Copies per launch of each kernel. The small kernel's parameters fit the
// classic 4 KiB limit (a small batch passes little); the large one's the
// 32,764 bytes of CUDA 12.1+ on Volta and newer: 8 + 20 * N bytes, N
// copies of a 64-bit destination, a 64-bit source and a 32-bit size.
constexpr unsigned kSmallCopies = 204;   // 4,088 bytes
constexpr unsigned kLargeCopies = 1637;  // 32,752 bytes

// Copy i (i < count) takes size[i] bytes from src[i] to dst[i]; sizes and
// addresses of any alignment.
template <unsigned N>
struct Copies {
  unsigned int count;
  unsigned int reserved;  // 0
  unsigned long long dst[N];
  unsigned long long src[N];
  unsigned int size[N];
};

}  // namespace cumem::core::copy_kernel
