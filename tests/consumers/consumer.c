/* The program every packaging check builds from outside libcumem's tree
 * (CMake find_package, Meson dependency() through pkg-config and as a
 * subproject): the header and the library it links must agree on the
 * version, and the library must answer. Prints one line; exits 0 when it
 * counted the devices or was told clearly that there is no driver or device. */
#include <cumem/cumem.h>

#include <stdio.h>

int main(void) {
  const uint32_t v = cumem_version();
  int32_t count = 0;
  cumem_status_t s;
  if (v != CUMEM_VERSION_NUMBER) {
    fprintf(stderr, "consumer: the library is version %u, its header %u\n", (unsigned)v,
            (unsigned)CUMEM_VERSION_NUMBER);
    return 1;
  }
  s = cumem_device_count(&count);
  if (s == CUMEM_SUCCESS) {
    printf("consumer: libcumem %u, %d device(s)\n", (unsigned)v, (int)count);
    return 0;
  }
  printf("consumer: libcumem %u, %s: %s\n", (unsigned)v, cumem_status_string(s), cumem_last_error_message());
  return s == CUMEM_ERROR_NO_DRIVER || s == CUMEM_ERROR_NO_DEVICE ? 0 : 1;
}
