// A CUDA event of one device.
#pragma once

#include <cuda.h>

#include <atomic>

#include "device.hpp"
#include "object.hpp"

namespace cumem::core {

class Stream;

class Event : public Object {
 public:
  // `interprocess` events (no timing) can be opened by other processes.
  static Ref<Event> create(Ref<Device> device, bool enable_timing, bool blocking_sync,
                           bool interprocess = false);
  // Opens another process's interprocess event (the driver's 64 bytes).
  static Ref<Event> from_ipc_handle(Ref<Device> device, const uint8_t (&handle)[64]);
  // The driver's 64 bytes for other processes; invalid_state unless
  // interprocess.
  void get_ipc_handle(uint8_t (&out)[64]) const;

  CUevent native() const noexcept { return handle_; }
  const Device& device() const noexcept { return *device_; }
  bool timing_enabled() const noexcept { return timing_; }
  bool recorded() const noexcept { return recorded_.load(std::memory_order_acquire); }

  // Records on `stream`, or on the device's legacy default stream for null.
  void record(const Stream* stream) const;
  void synchronize() const;
  bool query() const;
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  Event(Ref<Device> device, CUevent handle, bool timing, bool interprocess)
      : Object(Tag::event), device_(std::move(device)), handle_(handle), timing_(timing),
        interprocess_(interprocess) {}
  ~Event() override;

  Ref<Device> device_;
  CUevent handle_;
  bool timing_;
  bool interprocess_;
  mutable std::atomic<bool> recorded_{false};
};

}  // namespace cumem::core
