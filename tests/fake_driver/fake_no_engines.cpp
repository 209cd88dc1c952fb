// The VMM fake without the engines extras (fake_engines.cpp).
#include "fake_cuda.hpp"

void* fake::engine_entry(const char*) noexcept { return nullptr; }
