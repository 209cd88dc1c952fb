// Host memory other processes can map: one memfd of a fixed capacity,
// mapped shared, from which buffers are carved first-fit. Its allocation
// handle is the memfd; a buffer's descriptor is its offset and size. The
// imported side maps the same file and opens descriptors by offset. Needs no
// driver, so the whole IPC protocol can be exercised without a GPU.
//
// The file is sealed against shrinking and growing (and against new seals)
// when it is made, and an import refuses a file that is not sealed so: a
// peer that could shrink the file under a mapping would make every access
// past the new end a SIGBUS in this process.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "../error.hpp"
#include "../system_error.hpp"
#include "ipc_shareable.hpp"
#include "sync_resource.hpp"

namespace cumem::core {
namespace {

constexpr uint64_t kAlignment = 256;
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

ResourceProperties host_shared_properties(bool imported) {
  ResourceProperties p;
  p.kind = ResourceKind::host_shared;
  p.memory_kind = MemoryKind::host;
  p.host_accessible = true;
  p.ipc_enabled = true;
  p.is_imported = imported;
  return p;
}

// A shared mapping of the whole file.
void* map_file(int fd, uint64_t size) {
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED)
    fail(Status::out_of_memory, "cannot map " + describe_bytes(size) +
                                    " of shared host memory: " + std::strerror(errno));
  return base;
}

// Both sides: the file, its mapping, the pool descriptor; buffers come and
// go as offsets into the mapping.
class HostSharedBase : public SyncResource, public IpcShareable {
 public:
  // `exporter_pid`: the process that made the file, named in every
  // descriptor of it, whichever process describes a buffer (so that a
  // buffer opened from a descriptor gives the same descriptor again).
  HostSharedBase(int fd, uint64_t capacity, void* base, const std::array<uint8_t, 16>& pool_id,
                 const IpcKey& pool_key, bool imported, uint32_t exporter_pid)
      : SyncResource(nullptr, host_shared_properties(imported)),
        fd_(fd), capacity_(capacity), base_(static_cast<char*>(base)), pool_id_(pool_id),
        pool_key_(pool_key), exporter_pid_(exporter_pid) {}
  ~HostSharedBase() override {
    munmap(base_, capacity_);
    ::close(fd_);
  }

  Ref<AllocationHandle> get_allocation_handle() const override {
    IpcDescriptor d;
    d.type = IpcType::pool;
    d.memory_kind = MemoryKind::host;
    d.size = capacity_;
    d.pool_id = pool_id_;
    d.pool_key = pool_key_;
    d.exporter_pid = exporter_pid_;
    return AllocationHandle::take(duplicate_fd(fd_, "a host shared resource"), d);
  }

  IpcDescriptor get_ipc_descriptor(void* ptr, size_t size) const override {
    const uint64_t offset = static_cast<uint64_t>(static_cast<char*>(ptr) - base_);
    IpcDescriptor d;
    d.type = IpcType::host_shared_buffer;
    d.memory_kind = MemoryKind::host;
    d.size = size;
    d.offset = offset;
    d.pool_id = pool_id_;
    d.exporter_pid = exporter_pid_;
    sign(d, pool_key_);
    return d;
  }

  void* open_ipc_descriptor(const IpcDescriptor& d, const Stream*) override {
    if (d.type != IpcType::host_shared_buffer)
      fail(Status::invalid_argument,
           "a host shared resource opens host shared buffer descriptors, not " + core::describe(d));
    if (d.pool_id != pool_id_)
      fail(Status::invalid_argument, "the descriptor belongs to another pool than " + describe() +
                                         " (its pool id differs): import that pool first");
    if (!authentic(d, pool_key_))
      fail(Status::invalid_argument,
           "the descriptor's authentication tag does not match the key of " + describe() +
               ": it was not made by a process holding the pool, or a field was changed after "
               "it was made (nothing was opened)");
    if (d.offset > capacity_ || d.size > capacity_ - d.offset)
      fail(Status::invalid_argument,
           "the descriptor's range [" + std::to_string(d.offset) + ", +" + std::to_string(d.size) +
               ") passes the end of the shared file of " + std::to_string(capacity_) + " bytes");
    return base_ + d.offset;
  }

 protected:
  int fd_;
  uint64_t capacity_;
  char* base_;
  std::array<uint8_t, 16> pool_id_;
  IpcKey pool_key_;
  uint32_t exporter_pid_;
};

// The exporting side: allocates first-fit in the file.
class HostSharedResource final : public HostSharedBase {
 public:
  using HostSharedBase::HostSharedBase;
  std::string describe() const override {
    return "host shared resource of " + describe_bytes(capacity_);
  }
  void* open_ipc_descriptor(const IpcDescriptor& d, const Stream* stream) override {
    // Closing such a buffer would free the allocation itself.
    if (d.pool_id == pool_id_)
      fail(Status::invalid_argument, "the descriptor is of a buffer of this very resource; use "
                                     "the buffer itself (descriptors are for other processes)");
    return HostSharedBase::open_ipc_descriptor(d, stream);
  }

 protected:
  void* do_allocate(size_t size, const Stream*) override {
    if (size > capacity_) fail(Status::out_of_memory, describe() + " is smaller than that");
    const uint64_t rounded = (static_cast<uint64_t>(size) + kAlignment - 1) / kAlignment * kAlignment;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!initialised_) {
      free_[0] = capacity_ / kAlignment * kAlignment;
      initialised_ = true;
    }
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < rounded) continue;
      const uint64_t offset = it->first;
      const uint64_t left = it->second - rounded;
      free_.erase(it);
      if (left) free_[offset + rounded] = left;
      used_[offset] = rounded;
      return base_ + offset;
    }
    fail(Status::out_of_memory, "no free range of " + describe_bytes(rounded) + " is left in " +
                                    describe());
  }
  void free_now(void* ptr, size_t) override {
    const uint64_t offset = static_cast<uint64_t>(static_cast<char*>(ptr) - base_);
    std::lock_guard<std::mutex> lock(mutex_);
    auto used = used_.find(offset);
    if (used == used_.end()) return;  // opened from a descriptor: nothing to give back
    uint64_t start = offset, length = used->second;
    used_.erase(used);
    // Merge with the free neighbours.
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + length) {
      length += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        length += prev->second;
        free_.erase(prev);
      }
    }
    free_[start] = length;
  }

 private:
  std::mutex mutex_;
  bool initialised_ = false;
  std::map<uint64_t, uint64_t> free_;  // offset -> length
  std::map<uint64_t, uint64_t> used_;  // offset -> rounded length
};

// The importing side: opens descriptors, cannot allocate.
class ImportedHostSharedResource final : public HostSharedBase {
 public:
  using HostSharedBase::HostSharedBase;
  ~ImportedHostSharedResource() override { forget_imported(pool_id_, this); }
  std::string describe() const override {
    return "host shared resource of " + describe_bytes(capacity_) + " imported from another process";
  }

 protected:
  void* do_allocate(size_t, const Stream*) override {
    fail(Status::not_supported,
         "cannot allocate from " + describe() +
             ": allocate in the exporting process and share the buffer");
  }
  void free_now(void*, size_t) override {}  // the mapping stays until the resource goes
};

}  // namespace

Ref<Resource> create_host_shared_resource(uint64_t capacity) {
  if (capacity == 0) fail(Status::invalid_argument, "a host shared resource needs a capacity above 0");
  if (capacity > static_cast<uint64_t>(INT64_MAX))
    fail(Status::out_of_memory, "a shared memory file cannot hold " + describe_bytes(capacity));
  const int fd = memfd_create("cumem-host-shared", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) fail_errno(errno, "memfd_create for a host shared resource", Status::not_supported);
  try {
    if (ftruncate(fd, static_cast<off_t>(capacity)) != 0)
      fail_errno(errno == EFBIG || errno == EINVAL ? ENOMEM : errno,
                 "cannot size a shared memory file to " + describe_bytes(capacity),
                 Status::out_of_memory);
    if (fcntl(fd, F_ADD_SEALS, kSeals) != 0)
      fail_errno(errno, "sealing the shared memory file against shrinking and growing",
                 Status::not_supported);
    void* base = map_file(fd, capacity);
    return Ref<Resource>::adopt(new HostSharedResource(fd, capacity, base, random_pool_id(),
                                                       random_pool_key(), false,
                                                       static_cast<uint32_t>(getpid())));
  } catch (...) {
    ::close(fd);
    throw;
  }
}

Ref<Resource> import_host_shared(Ref<Device>, const AllocationHandle& handle) {
  const IpcDescriptor& pool = handle.pool();
  const int seals = fcntl(handle.fd(), F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals)
    fail(Status::invalid_argument,
         "the file descriptor is not a shared file sealed against shrinking and growing "
         "(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, as cumem_host_shared_resource_create "
         "makes it): a peer could shrink it under the mapping, so it is not imported");
  struct stat st {};
  if (fstat(handle.fd(), &st) != 0 || static_cast<uint64_t>(st.st_size) != pool.size)
    fail(Status::invalid_argument,
         "the file descriptor is not the shared file of " + std::to_string(pool.size) +
             " bytes that its descriptor announces");
  const int fd = handle.dup_fd();
  try {
    void* base = map_file(fd, pool.size);
    return Ref<Resource>::adopt(new ImportedHostSharedResource(
        fd, pool.size, base, pool.pool_id, pool.pool_key, true, pool.exporter_pid));
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace cumem::core
