// A reserved span of virtual addresses (cuMemAddressReserve), owned alone
// and freed with the object (cuMemAddressFree). Nothing may be mapped in it
// when it goes: the range that owns it unmaps first.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>

namespace cumem::core::vmm {

class Reservation {
 public:
  // Reserves `size` bytes (a multiple of the granularity) at a multiple of
  // `alignment` (a power of two), at `hint` where the driver can (0:
  // anywhere; a hint is never a requirement). `what` names it in errors.
  static std::unique_ptr<Reservation> reserve(size_t size, size_t alignment, CUdeviceptr hint,
                                              const char* what);
  // Exactly [address, address + size), or nullptr (nothing reserved) when
  // the driver cannot or will not place it there: for growing in place.
  static std::unique_ptr<Reservation> reserve_at(CUdeviceptr address, size_t size,
                                                 size_t alignment);
  ~Reservation();  // cuMemAddressFree; a failure goes to the log
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

  CUdeviceptr address() const noexcept { return address_; }
  size_t size() const noexcept { return size_; }
  CUdeviceptr end() const noexcept { return address_ + size_; }

 private:
  Reservation(CUdeviceptr address, size_t size) : address_(address), size_(size) {}

  CUdeviceptr address_;
  size_t size_;
};

}  // namespace cumem::core::vmm
