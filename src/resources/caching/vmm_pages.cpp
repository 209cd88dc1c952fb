#include "vmm_pages.hpp"

#include "../../error.hpp"
#include "../../log.hpp"
#include "../../vmm/range.hpp"
#include "../../vmm/spec.hpp"

namespace cumem::core::caching {
namespace {

class VmmRange final : public PageRange {
 public:
  VmmRange(std::unique_ptr<vmm::Range> range, uint64_t page)
      : range_(std::move(range)), page_(page) {}
  char* base() const override { return reinterpret_cast<char*>(range_->address()); }
  uint64_t size() const override { return range_->reserved(); }
  uint64_t page_size() const override { return page_; }
  void map(uint64_t offset, uint64_t bytes) override {
    range_->map(static_cast<size_t>(offset), static_cast<size_t>(bytes),
                static_cast<size_t>(page_));
  }
  uint64_t unmap(uint64_t offset, uint64_t bytes) noexcept override {
    try {
      range_->unmap(static_cast<size_t>(offset), static_cast<size_t>(bytes));
      return bytes;
    } catch (...) {
      log::swallowed("unmapping pages of an expandable range (the refused page stays mapped)");
    }
    // The range unmapped its chunks (pages) from `offset` up to the refused one.
    uint64_t done = 0;
    while (done < bytes && !range_->is_mapped(static_cast<size_t>(offset + done),
                                              static_cast<size_t>(page_)))
      done += page_;
    return done;
  }
  void set_access(int ordinal, bool read_write) override {
    range_->set_access(Location{LocationType::device, ordinal},
                       read_write ? vmm::Access::read_write : vmm::Access::none);
  }
  void export_pages(uint64_t offset, uint64_t bytes, std::vector<std::pair<uint64_t, uint64_t>>& pages,
                    OwnedFds& fds) const override {
    if (!(range_->spec().prop().requestedHandleTypes & vmm::kHandlePosixFd))
      fail(Status::not_supported, "the pages of " + range_->spec().describe() +
                                      " were made without the POSIX fd handle type");
    // Each page is a chunk of its own (map() maps page-sized chunks), so
    // [offset, offset + bytes) is whole chunks.
    uint64_t at = offset;
    for (const vmm::ChunkInfo& c : range_->chunks(static_cast<size_t>(offset), static_cast<size_t>(bytes))) {
      if (c.offset != at || c.offset + c.size > offset + bytes)
        fail(Status::internal, "the pages under [" + std::to_string(offset) + ", " +
                                   std::to_string(offset + bytes) + ") of an expandable range are "
                                   "not whole mapped chunks (one at " + std::to_string(c.offset) +
                                   " of " + describe_bytes(c.size) + ")");
      fds.add(c.chunk->export_fd());
      pages.emplace_back(c.offset - offset, c.size);
      at += c.size;
    }
    if (at != offset + bytes)
      fail(Status::internal, "the pages under [" + std::to_string(offset) + ", " +
                                 std::to_string(offset + bytes) + ") of an expandable range are not "
                                 "all mapped (they end at " + std::to_string(at) + ")");
  }

 private:
  std::unique_ptr<vmm::Range> range_;
  uint64_t page_;
};

class VmmPages final : public PageSource {
 public:
  VmmPages(std::shared_ptr<const vmm::Spec> spec, uint64_t page, uint64_t large, uint64_t range)
      : spec_(std::move(spec)), page_(page), large_(large), range_(range) {}
  uint64_t page_size() const override { return page_; }
  uint64_t range_size() const override { return range_; }
  uint64_t large_page_size() const override { return large_; }
  void set_owner(uint64_t resource_id) override { owner_ = resource_id; }
  bool shareable() const override {
    return (spec_->prop().requestedHandleTypes & vmm::kHandlePosixFd) != 0;
  }
  uint64_t granularity() const override { return spec_->granularity(); }
  std::unique_ptr<PageRange> reserve(uint64_t bytes, uint64_t page) override {
    std::unique_ptr<vmm::Range> r = vmm::Range::reserve(spec_, static_cast<size_t>(bytes));
    r->set_owner(owner_);
    // The access list applies to every page mapped later.
    r->set_access(Location{LocationType::device, spec_->device().ordinal()},
                  vmm::Access::read_write);
    return std::make_unique<VmmRange>(std::move(r), page);
  }

 private:
  std::shared_ptr<const vmm::Spec> spec_;
  uint64_t page_, large_, range_;
  uint64_t owner_ = 0;
};

}  // namespace

std::unique_ptr<PageSource> device_pages(Ref<Device> device, uint64_t page_size,
                                         uint32_t handle_types) {
  vmm::SpecOptions o;
  o.location = Location{LocationType::device, device->ordinal()};
  o.granularity = vmm::Granularity::recommended;
  o.handle_types = handle_types;
  const uint64_t total = device->properties().total_memory;
  auto spec = vmm::Spec::create(std::move(device), o);
  const uint64_t g = spec->granularity();
  uint64_t page = page_size, large = page_size;
  if (page == 0) {
    page = (kDefaultPageSize + g - 1) / g * g;
    large = (kDefaultLargePageSize + page - 1) / page * page;
  } else if (page % g != 0) {
    fail(Status::invalid_argument, "the page size of " + describe_bytes(page_size) +
                                       " is not a multiple of the granularity of " +
                                       spec->describe() + ", " + describe_bytes(g));
  }
  // Address space for the device's whole memory and an eighth more, so
  // that pages unmapped early in a range can be mapped again at its end.
  const uint64_t range = (total + total / 8 + large - 1) / large * large;
  return std::make_unique<VmmPages>(std::move(spec), page, large, range > large ? range : large);
}

}  // namespace cumem::core::caching
