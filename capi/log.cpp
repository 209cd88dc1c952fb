// The log: cumem_set_log_callback, cumem_set_log_level, cumem_get_log_level.
// A callback and its user_data form one immutable record, published to the
// core with one atomic pointer; records are never freed (a thread may be
// delivering through an old one), and a pair set again reuses its record.
#include <mutex>

#include "capi.hpp"

#include "../src/log.hpp"

namespace cumem::capi {
namespace {

namespace log = cumem::core::log;

struct CallbackSink : log::Sink {
  cumem_log_callback_t callback;
  void* user_data;
  CallbackSink* next;  // every record made, so that each pair has one
};

void deliver(const log::Sink& sink, log::Level level, const char* message) {
  const auto& s = static_cast<const CallbackSink&>(sink);
  s.callback(static_cast<cumem_log_level_t>(level), message, s.user_data);
}

std::mutex records_mutex;
CallbackSink* records = nullptr;

const CallbackSink* record_of(cumem_log_callback_t callback, void* user_data) {
  std::lock_guard<std::mutex> lock(records_mutex);
  for (CallbackSink* r = records; r; r = r->next)
    if (r->callback == callback && r->user_data == user_data) return r;
  auto* r = new CallbackSink{};
  r->deliver = &deliver;
  r->callback = callback;
  r->user_data = user_data;
  r->next = records;
  records = r;
  return r;
}

}  // namespace
}  // namespace cumem::capi

using namespace cumem::capi;
namespace core_log = cumem::core::log;

CUMEM_EXPORT cumem_status_t cumem_set_log_callback(cumem_log_callback_t callback, void* user_data) {
  CUMEM_TRY
  core_log::set_sink(callback ? record_of(callback, user_data) : nullptr);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_set_log_level(cumem_log_level_t level) {
  CUMEM_TRY
  if (!core_log::valid_level(static_cast<int>(level)))
    fail(Status::invalid_argument,
         "argument 'level' is " + std::to_string(static_cast<int32_t>(level)) +
             ", not a cumem_log_level_t (CUMEM_LOG_LEVEL_OFF 0 to CUMEM_LOG_LEVEL_DEBUG 4)");
  core_log::set_level(static_cast<core_log::Level>(level));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_get_log_level(cumem_log_level_t* out_level) {
  CUMEM_TRY
  out(out_level, "out_level");
  *out_level = static_cast<cumem_log_level_t>(core_log::level());
  CUMEM_CATCH
}
