/*
 * DLPack 1.1: the tensor structs libraries exchange (PyTorch, CuPy, JAX,
 * NumPy, ...), written for libcumem to be ABI-compatible with the
 * specification (dmlc/dlpack, dlpack.h, version 1.1). Debian's dlpack
 * package is 0.6 and lacks the versioned tensor, hence this copy of the
 * layout. It uses the specification's include guard, so that including the
 * official dlpack.h (1.0 or newer) as well is harmless: the first one wins.
 * tests/abi/test_dlpack_layout.c checks every size and offset.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/** The version of the DLPack ABI a tensor follows. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/** Where a tensor's memory lives. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
  kDLTrn = 18
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/** The kind of a tensor's elements. */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

/** An element type: code (DLDataTypeCode), bits per lane, lanes. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/** A tensor: data + byte_offset is the first element; shape and strides
 *  (in elements; NULL strides mean compact row-major) have ndim entries. */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

/** The legacy (unversioned) managed tensor. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

/** Bits of DLManagedTensorVersioned.flags. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/** The versioned managed tensor (DLPack 1.0 and later). */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */
