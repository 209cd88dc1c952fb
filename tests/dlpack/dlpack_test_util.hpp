// Tensors made by hand for the DLPack tests, with deleters that count.
#pragma once

#include <cumem/dlpack.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "test_util.hpp"

// A versioned or legacy tensor over caller memory whose deleter counts its
// calls (and nothing else: the memory stays the test's).
struct HandTensor {
  static inline std::atomic<int> deleted{0};
  std::vector<int64_t> shape, strides;
  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy{};

  HandTensor(void* data, std::vector<int64_t> shape_in, DLDataType dtype = {kDLUInt, 8, 1},
             DLDevice device = {kDLCPU, 0})
      : shape(std::move(shape_in)) {
    DLTensor t{};
    t.data = data;
    t.device = device;
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.empty() ? nullptr : shape.data();
    t.strides = nullptr;
    t.byte_offset = 0;
    versioned.version = {1, 1};
    versioned.dl_tensor = t;
    versioned.deleter = [](DLManagedTensorVersioned*) { deleted.fetch_add(1); };
    legacy.dl_tensor = t;
    legacy.deleter = [](DLManagedTensor*) { deleted.fetch_add(1); };
  }
  void set_strides(std::vector<int64_t> s) {
    strides = std::move(s);
    versioned.dl_tensor.strides = strides.data();
    legacy.dl_tensor.strides = strides.data();
  }
  DLTensor& t() { return versioned.dl_tensor; }
};
