// The C++ facade included under `#pragma GCC visibility push(hidden)`: its
// inline functions call cumem.h's, which must keep default visibility.
// <cstdio> comes first: the C library's own declarations (stderr) are not
// what this checks.
#include <cstdio>

#pragma GCC visibility push(hidden)
#include <cumem/cumem.hpp>
#pragma GCC visibility pop

extern "C" int hidden_consumer_check(void);  // from the shared object built from hidden_consumer.c

int main() {
  if (cumem::version() != CUMEM_VERSION_NUMBER) {
    std::fprintf(stderr, "cumem::version() = %u, the header says %u\n", cumem::version(),
                 static_cast<unsigned>(CUMEM_VERSION_NUMBER));
    return 1;
  }
  if (hidden_consumer_check() != 0) return 1;
  std::printf("C++ consumer and a -fPIC shared object under visibility(hidden): linked, libcumem %u\n",
              cumem::version());
  return 0;
}
