// The limit adaptor: at most `limit` bytes in use at once through it; an
// allocation that would pass the limit is refused with out_of_memory before
// the upstream is asked.
#include "../error.hpp"
#include "adaptor.hpp"
#include "byte_budget.hpp"

namespace cumem::core {
namespace {

class LimitResource final : public Adaptor {
 public:
  LimitResource(Ref<Resource> upstream, uint64_t limit)
      : Adaptor(std::move(upstream), ResourceKind::limit), budget_(limit) {}
  std::string describe() const override {
    return "limit of " + describe_bytes(budget_.limit()) + " over " + upstream().describe();
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    if (!budget_.try_take(size))
      fail(Status::out_of_memory, "the limit of " + describe_bytes(budget_.limit()) +
                                      " allows " + describe_bytes(budget_.limit() - budget_.used()) +
                                      " more, and " + describe_bytes(size) + " were asked for");
    try {
      return upstream().allocate_raw(size, stream);
    } catch (...) {
      budget_.give_back(size);
      throw;
    }
  }
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    upstream().deallocate_raw(ptr, size, stream);
    budget_.give_back(size);
  }

 private:
  ByteBudget budget_;
};

}  // namespace

Ref<Resource> create_limit_resource(Ref<Resource> upstream, uint64_t limit_bytes) {
  if (limit_bytes == 0)
    fail(Status::invalid_argument, "a limit of 0 bytes would refuse every allocation");
  return Ref<Resource>::adopt(new LimitResource(std::move(upstream), limit_bytes));
}

}  // namespace cumem::core
