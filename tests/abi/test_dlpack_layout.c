/* include/cumem/dlpack.h against the DLPack 1.1 specification's layout on
 * LP64 (x86-64, aarch64): every size and offset a consumer relies on. Exits
 * non-zero, naming the field, when one differs. */
#include <cumem/dlpack.h>
#include <stdio.h>

static int failures = 0;

static void expect(const char* what, size_t got, size_t spec) {
  if (got != spec) {
    fprintf(stderr, "%s is %zu, the specification says %zu\n", what, got, spec);
    ++failures;
  }
}

#define SIZE(T, n) expect("sizeof(" #T ")", sizeof(T), n)
#define AT(T, f, n) expect("offsetof(" #T ", " #f ")", offsetof(T, f), n)

int main(void) {
  SIZE(DLPackVersion, 8);
  AT(DLPackVersion, major, 0);
  AT(DLPackVersion, minor, 4);
  SIZE(DLDeviceType, 4);
  SIZE(DLDevice, 8);
  AT(DLDevice, device_type, 0);
  AT(DLDevice, device_id, 4);
  SIZE(DLDataType, 4);
  AT(DLDataType, code, 0);
  AT(DLDataType, bits, 1);
  AT(DLDataType, lanes, 2);
  SIZE(DLTensor, 48);
  AT(DLTensor, data, 0);
  AT(DLTensor, device, 8);
  AT(DLTensor, ndim, 16);
  AT(DLTensor, dtype, 20);
  AT(DLTensor, shape, 24);
  AT(DLTensor, strides, 32);
  AT(DLTensor, byte_offset, 40);
  SIZE(DLManagedTensor, 64);
  AT(DLManagedTensor, dl_tensor, 0);
  AT(DLManagedTensor, manager_ctx, 48);
  AT(DLManagedTensor, deleter, 56);
  SIZE(DLManagedTensorVersioned, 80);
  AT(DLManagedTensorVersioned, version, 0);
  AT(DLManagedTensorVersioned, manager_ctx, 8);
  AT(DLManagedTensorVersioned, deleter, 16);
  AT(DLManagedTensorVersioned, flags, 24);
  AT(DLManagedTensorVersioned, dl_tensor, 32);
  /* The values libcumem's memory kinds map to, and the flags. */
  expect("kDLCPU", kDLCPU, 1);
  expect("kDLCUDA", kDLCUDA, 2);
  expect("kDLCUDAHost", kDLCUDAHost, 3);
  expect("kDLCUDAManaged", kDLCUDAManaged, 13);
  expect("kDLBfloat", kDLBfloat, 4);
  expect("kDLBool", kDLBool, 6);
  expect("DLPACK_FLAG_BITMASK_READ_ONLY", DLPACK_FLAG_BITMASK_READ_ONLY, 1);
  expect("DLPACK_FLAG_BITMASK_IS_COPIED", DLPACK_FLAG_BITMASK_IS_COPIED, 2);
  expect("DLPACK_MAJOR_VERSION", DLPACK_MAJOR_VERSION, 1);
  if (failures == 0) printf("dlpack.h: every size, offset and value as specified\n");
  return failures == 0 ? 0 : 1;
}
