#include "reservation.hpp"

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core::vmm {

std::unique_ptr<Reservation> Reservation::reserve(size_t size, size_t alignment, CUdeviceptr hint,
                                                  const char* what) {
  CUdeviceptr address = 0;
  CUMEM_CU(cuMemAddressReserve, (&address, size, alignment, hint, 0),
           "reserving " + describe_bytes(size) + " of address space for " + what);
  try {
    return std::unique_ptr<Reservation>(new Reservation(address, size));
  } catch (...) {
    CUMEM_CU_CLEANUP(cuMemAddressFree, (address, size), "freeing a reservation nobody owns");
    throw;
  }
}

std::unique_ptr<Reservation> Reservation::reserve_at(CUdeviceptr address, size_t size,
                                                     size_t alignment) {
  CUdeviceptr got = 0;
  // A refusal here is an answer, not an error: the caller moves instead.
  if (CUMEM_CU_RESULT(cuMemAddressReserve, (&got, size, alignment, address, 0)) != CUDA_SUCCESS)
    return nullptr;
  if (got != address) {
    CUMEM_CU_CLEANUP(cuMemAddressFree, (got, size), "freeing a reservation placed elsewhere");
    return nullptr;
  }
  try {
    return std::unique_ptr<Reservation>(new Reservation(got, size));
  } catch (...) {
    CUMEM_CU_CLEANUP(cuMemAddressFree, (got, size), "freeing a reservation nobody owns");
    throw;
  }
}

Reservation::~Reservation() {
  CUMEM_CU_CLEANUP(cuMemAddressFree, (address_, size_), "freeing reserved address space");
}

}  // namespace cumem::core::vmm
