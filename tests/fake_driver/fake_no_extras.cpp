// The plain fake driver: no entry points beyond fake_cuda.cpp's.
#include "fake_cuda.hpp"

namespace fake {
void* extra_entry(const char*) noexcept { return nullptr; }
}  // namespace fake
