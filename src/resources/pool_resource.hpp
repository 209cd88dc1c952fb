// Stream-ordered allocation from a cuMemPool, and the pool's administration
// (attributes, trim, access, the native handle). The device, pinned and
// managed kinds differ only in how their pool is made (their factories);
// create_pool() and check_pool_options() are the shared builder.
#pragma once

#include <atomic>
#include <memory>

#include "byte_budget.hpp"
#include "dmabuf_source.hpp"
#include "ipc_shareable.hpp"
#include "peer_access.hpp"
#include "resource.hpp"
#include "snapshottable.hpp"
#include "trimmable.hpp"

namespace cumem::core {

struct PoolAttributes {
  bool reuse_follow_event_dependencies = false;
  bool reuse_allow_opportunistic = false;
  bool reuse_allow_internal_dependencies = false;
  uint64_t release_threshold = 0;
  uint64_t reserved_mem_current = 0, reserved_mem_high = 0;
  uint64_t used_mem_current = 0, used_mem_high = 0;
};

class PoolResource : public Resource,
                     public IpcShareable,
                     public Trimmable,
                     public Snapshottable,
                     public DmaBufSource,
                     public PeerAccessible {
 public:
  // Takes `pool`; destroys it at the end when `owned`. A max_size above 0 is
  // enforced here on the bytes in use (the driver only caps what it
  // reserves, at its own granularity). An IPC-enabled pool gets a random
  // pool id and key, unless `pool_id` and `pool_key` (an imported pool's)
  // are given.
  PoolResource(Ref<Device> device, const ResourceProperties& properties, CUmemoryPool pool,
               bool owned, std::string name, uint64_t max_size,
               const std::array<uint8_t, 16>& pool_id = {}, const IpcKey& pool_key = {});
  std::string describe() const override { return name_; }

  CUmemoryPool pool_native() const noexcept { return pool_; }
  PoolAttributes pool_get_attributes() const;
  // Sets the three reuse flags and the release threshold.
  void pool_set_attributes(const PoolAttributes& attributes);
  void pool_reset_highs();
  // Releases unused reserved memory, keeping at least min_bytes_to_keep.
  void pool_trim(uint64_t min_bytes_to_keep);
  // Trimmable: what an adaptor above asks for, pool_trim(0).
  void trim_unused() override { pool_trim(0); }
  void pool_set_access(const Device& peer, bool read_write);
  bool pool_get_access(const Device& peer) const;
  // PeerAccessible: the pool's access (what an adaptor above asks for).
  void set_peer_access(const Device& peer, bool read_write) override {
    pool_set_access(peer, read_write);
  }
  bool peer_access(const Device& peer) const override { return pool_get_access(peer); }
  // 0 when unlimited.
  uint64_t max_size() const noexcept { return budget_ ? budget_->limit() : 0; }
  // Snapshottable: the pool's attributes (the driver lists no allocations:
  // the snapshot has those from the memory history).
  void snapshot(snapshot::Builder& out) const override;
  // DmaBufSource: the driver's allocation (cuMemGetAddressRange); refused
  // for memory imported from another process.
  DmaBufRanges dmabuf_ranges(void* ptr, size_t size, uintptr_t first,
                             size_t bytes) const override;

  // IPC (properties().ipc_enabled): the pool's file descriptor, and a
  // buffer's export data (cuMemPoolExportPointer).
  Ref<AllocationHandle> get_allocation_handle() const override;
  IpcDescriptor get_ipc_descriptor(void* ptr, size_t size) const override;
  const std::array<uint8_t, 16>& pool_id() const noexcept { return pool_id_; }
  // What signs this pool's buffer descriptors (src/ipc/descriptor.hpp).
  const IpcKey& pool_key() const noexcept { return pool_key_; }

 protected:
  ~PoolResource() override;
  void* do_allocate(size_t size, const Stream* stream) override;
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override;
  std::string usage_details() const override;

 private:
  // unmap::Reason pool_trim or pool_destroy (an int: the header stays
  // free of unmap_events.hpp).
  void notify_pool(int reason) const noexcept;

  CUmemoryPool pool_;
  bool owned_;
  std::string name_;
  std::unique_ptr<ByteBudget> budget_;
  std::array<uint8_t, 16> pool_id_{};
  IpcKey pool_key_{};
  mutable std::atomic<bool> exported_{false};  // cuMemPoolExportToShareableHandle done
};

// What a new pool is: where its memory lives, whether it can be shared with
// other processes (POSIX file descriptors), and its max_size (0: none).
struct PoolSpec {
  CUmemLocation location{};
  CUmemAllocationType allocation_type = CU_MEM_ALLOCATION_TYPE_PINNED;
  bool ipc_enabled = false;
  uint64_t max_size = 0;
};

// max_size and ipc_enabled describe new pools; refuse them with a default pool.
void check_pool_options(const PoolOptions& options);
// A new cuMemPool; `where` names the location in messages. The caller
// hands it to a PoolResource with owned = true.
CUmemoryPool create_pool(const PoolSpec& spec, const std::string& where);
// Sets a pool's release threshold (UINT64_MAX keeps all freed memory).
void set_release_threshold(CUmemoryPool pool, uint64_t threshold);

}  // namespace cumem::core
