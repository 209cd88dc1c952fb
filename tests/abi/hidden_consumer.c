/* A consumer that includes cumem.h under `#pragma GCC visibility push(hidden)`
 * (as code built with -fvisibility=hidden does for all of its own headers):
 * the library's functions must still be referred to with default visibility,
 * or the reference is to a hidden symbol of the consumer's own and neither an
 * executable nor a -fPIC shared object links. Built by
 * check_hidden_consumer.sh into both; main() checks the library answers. */
#pragma GCC visibility push(hidden)
#include <cumem/cumem.h>
#pragma GCC visibility pop

#include <stdio.h>
#include <string.h>

/* In the shared-object build, the one function the program calls. */
__attribute__((visibility("default"))) int hidden_consumer_check(void) {
  if (cumem_version() != CUMEM_VERSION_NUMBER) {
    fprintf(stderr, "cumem_version() = %u, the header says %u\n", (unsigned)cumem_version(),
            (unsigned)CUMEM_VERSION_NUMBER);
    return 1;
  }
  if (strcmp(cumem_status_string(CUMEM_ERROR_OUT_OF_MEMORY), "CUMEM_ERROR_OUT_OF_MEMORY") != 0) {
    fprintf(stderr, "cumem_status_string gave \"%s\"\n", cumem_status_string(CUMEM_ERROR_OUT_OF_MEMORY));
    return 1;
  }
  return 0;
}

#ifndef HIDDEN_CONSUMER_LIBRARY
int main(void) {
  if (hidden_consumer_check() != 0) return 1;
  printf("C consumer under visibility(hidden): linked, libcumem %u\n", (unsigned)cumem_version());
  return 0;
}
#endif
