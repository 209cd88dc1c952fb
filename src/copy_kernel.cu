// The batch copy kernels (cub::DeviceMemcpy::Batched's idea, smaller): many
// small copies in one launch, done by the SMs. Each block takes copies by
// index (grid-stride over the copies); its threads copy one copy together
// with the widest access the source and destination allow relative to each
// other (16 bytes when both are equally aligned modulo 16, else 8, 4, 2 or
// 1), bytes before the first aligned word and after the last one done one
// per thread. The descriptors come by value (__grid_constant__: read in
// place from the parameter space, never copied to local memory).
//
// libcumem does not need nvcc: tools/gen_copy_kernel.py compiles this file
// to PTX (compute_75) into src/copy_kernel_ptx.hpp, which is committed and
// loaded at run time (copy_kernel.cpp). Edit this file, then run the script.
#include "copy_kernel_params.hpp"

namespace {

using cumem::core::copy_kernel::Copies;

// `bytes` bytes as words of T, both pointers aligned to sizeof(T); four
// loads in flight per thread before their stores (pinned host memory is far).
template <class T>
__device__ __forceinline__ void copy_words(unsigned char* __restrict__ dst,
                                           const unsigned char* __restrict__ src,
                                           unsigned long long bytes) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  const unsigned long long n = bytes / sizeof(T);
  const unsigned long long step = blockDim.x;
  unsigned long long k = threadIdx.x;
  for (; k + 3 * step < n; k += 4 * step) {
    const T a = s[k], b = s[k + step], c = s[k + 2 * step], e = s[k + 3 * step];
    d[k] = a;
    d[k + step] = b;
    d[k + 2 * step] = c;
    d[k + 3 * step] = e;
  }
  for (; k < n; k += step) d[k] = s[k];
}

// One copy, by the whole block (blockDim.x >= 16).
__device__ __forceinline__ void copy_one(unsigned char* dst, const unsigned char* src,
                                         unsigned long long n) {
  const unsigned long long d = reinterpret_cast<unsigned long long>(dst);
  const unsigned long long s = reinterpret_cast<unsigned long long>(src);
  // The lowest bit in which the addresses differ bounds the word both can
  // use; 16 at most.
  const unsigned long long differ = (d ^ s) | 16;
  const unsigned long long width = differ & (~differ + 1);
  unsigned long long head = (width - (d & (width - 1))) & (width - 1);
  if (head > n) head = n;
  const unsigned long long body = (n - head) & ~(width - 1);
  const unsigned long long tail = n - head - body;
  const unsigned t = threadIdx.x;
  if (t < head) dst[t] = src[t];
  unsigned char* bd = dst + head;
  const unsigned char* bs = src + head;
  switch (width) {
    case 16: copy_words<uint4>(bd, bs, body); break;
    case 8: copy_words<unsigned long long>(bd, bs, body); break;
    case 4: copy_words<unsigned int>(bd, bs, body); break;
    case 2: copy_words<unsigned short>(bd, bs, body); break;
    default: copy_words<unsigned char>(bd, bs, body); break;
  }
  if (t < tail) bd[body + t] = bs[body + t];
}

template <unsigned N>
__device__ __forceinline__ void copy_all(const Copies<N>& c) {
  for (unsigned i = blockIdx.x; i < c.count; i += gridDim.x)
    copy_one(reinterpret_cast<unsigned char*>(c.dst[i]),
             reinterpret_cast<const unsigned char*>(c.src[i]), c.size[i]);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(cumem::core::copy_kernel::kThreads)
    cumem_copy_batch_small(const __grid_constant__ Copies<cumem::core::copy_kernel::kSmallCopies> c) {
  copy_all(c);
}

extern "C" __global__ void __launch_bounds__(cumem::core::copy_kernel::kThreads)
    cumem_copy_batch_large(const __grid_constant__ Copies<cumem::core::copy_kernel::kLargeCopies> c) {
  copy_all(c);
}
