// libFuzzer target for the framework configuration's parser
// (alloc_conf.hpp; tests/fuzz/meson.build: its seeds replayed in the host
// suite, fuzzed by tools/fuzz.sh). The input is CUMEM_ALLOC_CONF's text,
// and after a first newline CUMEM_FRAMEWORK_RESOURCE's. Parsing either
// throws core::Error, or gives a configuration whose text() parses back to
// the same configuration and the same text; the environment's pair
// likewise. Any other exception, a crash or a sanitizer report is a
// failure.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "alloc_conf.hpp"
#include "error.hpp"

namespace {

using namespace cumem::core;

bool same(const AllocConf& a, const AllocConf& b) {
  return a.automatic == b.automatic && a.kind == b.kind && a.expandable == b.expandable &&
         a.page_size == b.page_size && a.limit == b.limit && a.own_pool == b.own_pool &&
         a.release_threshold == b.release_threshold && a.managed == b.managed;
}

// `conf` was accepted: what it says of itself must read back as it.
void check_round_trip(const AllocConf& conf) {
  const std::string text = conf.text();
  AllocConf again;
  try {
    again = parse_alloc_conf(text, "");
  } catch (const Error&) {
    std::abort();  // an accepted configuration writes text that is refused
  }
  if (!same(conf, again) || again.text() != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string alloc_conf = input.substr(0, newline);
  try {
    check_round_trip(parse_alloc_conf(alloc_conf, "CUMEM_ALLOC_CONF"));
  } catch (const Error& e) {
    if (std::string_view(e.what()).empty()) std::abort();  // a refusal says why
  }
  if (newline == std::string::npos) return 0;
  // The environment reads C strings: each value ends at its first NUL.
  const std::string framework_resource = input.substr(newline + 1);
  try {
    check_round_trip(alloc_conf_from_environment(alloc_conf.c_str(), framework_resource.c_str()));
  } catch (const Error& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
