// The failure-callback adaptor (RMM's failure_callback_resource_adaptor):
// an allocation the upstream refuses for lack of memory calls the user's
// function, which may free memory and ask for a retry. Retries are bounded
// by max_retries per allocation, so a callback that always asks again
// cannot spin forever; an allocation made from inside the callback that
// runs out of memory fails at once instead of calling it again.
#include <string>

#include "../error.hpp"
#include "failure_callback_resource.hpp"

namespace cumem::core {
namespace {

class FailureCallbackResource;

// The adaptor whose callback this thread is running (nested calls of other
// adaptors save and restore it), so that its own allocations inside the
// callback do not call it again.
thread_local const FailureCallbackResource* in_callback = nullptr;

class FailureCallbackResource final : public Adaptor {
 public:
  FailureCallbackResource(Ref<Resource> upstream, FailureCallback callback)
      : Adaptor(std::move(upstream), ResourceKind::failure_callback),
        callback_(std::move(callback)) {}
  std::string describe() const override {
    return "failure-callback adaptor over " + upstream().describe();
  }

 protected:
  ~FailureCallbackResource() override {
    if (callback_.on_destroy) callback_.on_destroy();
  }
  void* do_allocate(size_t size, const Stream* stream) override {
    for (uint32_t attempt = 1;; ++attempt) {
      try {
        return upstream().allocate_raw(size, stream);
      } catch (const Error& e) {
        if (e.status() != Status::out_of_memory) throw;
        if (in_callback == this)
          fail(Status::out_of_memory,
               std::string("(allocated from inside this adaptor's own failure callback, which "
                           "is not called again) ") + e.what());
        if (attempt > callback_.max_retries)
          fail(Status::out_of_memory,
               "the failure callback asked for " + std::to_string(callback_.max_retries) +
                   " retr" + (callback_.max_retries == 1 ? "y" : "ies") +
                   ", the most max_retries allows, and the upstream still refused: " + e.what());
        if (ask(attempt, size, stream, e.what()) != FailureAction::retry)
          fail(Status::out_of_memory, "the failure callback gave up (called " +
                                          std::to_string(attempt) + " time" +
                                          (attempt == 1 ? "" : "s") + "): " + e.what());
      }
    }
  }
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    upstream().deallocate_raw(ptr, size, stream);
  }

 private:
  FailureAction ask(uint32_t attempt, size_t size, const Stream* stream, const char* message) {
    FailureInfo info;
    info.attempt = attempt;
    info.size = size;
    info.stream = stream;
    info.statistics = statistics();
    info.message = message;
    const FailureCallbackResource* outer = in_callback;
    in_callback = this;
    FailureAction action = FailureAction::fail;
    try {
      action = callback_.callback(info);
    } catch (...) {
      in_callback = outer;
      throw;
    }
    in_callback = outer;
    return action;
  }

  FailureCallback callback_;
};

}  // namespace

Ref<Resource> create_failure_callback_resource(Ref<Resource> upstream, FailureCallback callback) {
  if (!callback.callback)
    fail(Status::invalid_argument, "the failure callback must not be NULL");
  if (callback.max_retries == 0 || callback.max_retries > kMaxFailureRetries)
    fail(Status::invalid_argument, "max_retries " + std::to_string(callback.max_retries) +
                                       " is outside 1.." + std::to_string(kMaxFailureRetries));
  return Ref<Resource>::adopt(new FailureCallbackResource(std::move(upstream), std::move(callback)));
}

}  // namespace cumem::core
