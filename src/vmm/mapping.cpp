#include "mapping.hpp"

#include <cstdio>

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core::vmm {
namespace {

std::string at(CUdeviceptr address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
  return buf;
}

}  // namespace

std::unique_ptr<Mapping> Mapping::map(CUdeviceptr address, std::shared_ptr<Chunk> chunk) {
  const size_t size = chunk->size();
  CUMEM_CU(cuMemMap, (address, size, 0, chunk->handle(), 0),
           "mapping " + describe_bytes(size) + " of " + chunk->spec().describe() + " at " +
               at(address));
  try {
    return std::unique_ptr<Mapping>(new Mapping(address, std::move(chunk)));
  } catch (...) {
    CUMEM_CU_CLEANUP(cuMemUnmap, (address, size), "unmapping a mapping nobody owns");
    throw;
  }
}

Mapping::~Mapping() {
  if (mapped_) CUMEM_CU_CLEANUP(cuMemUnmap, (address_, chunk_->size()), "unmapping virtual memory");
}

void Mapping::unmap() {
  if (!mapped_) return;
  CUMEM_CU(cuMemUnmap, (address_, chunk_->size()),
           "unmapping " + describe_bytes(size()) + " of " + chunk_->spec().describe() +
               " mapped at " + at(address_) + " (it stays mapped)");
  mapped_ = false;
}

void Mapping::set_access(const std::vector<CUmemAccessDesc>& descriptors) const {
  if (descriptors.empty()) return;
  CUMEM_CU(cuMemSetAccess, (address_, size(), descriptors.data(), descriptors.size()),
           "setting the access to " + describe_bytes(size()) + " of " +
               chunk_->spec().describe() + " mapped at " + at(address_));
}

}  // namespace cumem::core::vmm
