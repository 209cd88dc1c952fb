// A minimal NVTX tool for tests/log/test_nvtx.cpp: NVTX v3 loads it from
// NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2, which points the
// domain functions we care about at recorders. The test reads what was
// recorded through nvtx_test_* (dlsym).
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::mutex mutex;
std::vector<std::string> events;
int initialized = 0;

struct Domain {
  std::string name;
};

void add(std::string event) {
  std::lock_guard<std::mutex> lock(mutex);
  events.push_back(std::move(event));
}

std::string name_of(nvtxDomainHandle_t domain) {
  return domain ? reinterpret_cast<Domain*>(domain)->name : std::string("(global)");
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  add(std::string("domain ") + name);
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name});
}

nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t domain, const char* string) {
  add("string " + name_of(domain) + " " + string);
  return reinterpret_cast<nvtxStringHandle_t>(strdup(string));
}

int NVTX_API range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  std::string message = "(none)";
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
    message = reinterpret_cast<const char*>(a->message.registered);
  else if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
    message = std::string("ascii:") + a->message.ascii;
  add("push " + name_of(domain) + " " + message);
  return 0;
}

int NVTX_API range_pop(nvtxDomainHandle_t domain) {
  add("pop " + name_of(domain));
  return 0;
}

template <class Fn>
void set(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id <= size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

int initialize(NvtxGetExportTableFunc_t get_export_table) {
  ++initialized;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || !callbacks->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
  set(table, size, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
  set(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  set(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &range_push);
  set(table, size, NVTX_CBID_CORE2_DomainRangePop, &range_pop);
  return 1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  return initialize(get_export_table);
}

__attribute__((visibility("default"))) int nvtx_test_initialized() { return initialized; }

// The recorded events, one per line.
__attribute__((visibility("default"))) void nvtx_test_events(std::string* out) {
  std::lock_guard<std::mutex> lock(mutex);
  out->clear();
  for (const std::string& e : events) *out += e + "\n";
}

__attribute__((visibility("default"))) void nvtx_test_clear() {
  std::lock_guard<std::mutex> lock(mutex);
  events.clear();
}

}  // extern "C"
