#include "alloc_conf.hpp"

#include <cctype>
#include <string>
#include <vector>

#include "error.hpp"

namespace cumem::core {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view origin) : prefix_(origin.empty() ? "" : std::string(origin) + ": ") {}

  [[noreturn]] void refuse(const std::string& what) const {
    fail(Status::invalid_argument, prefix_ + what);
  }

  bool boolean(std::string_view key, std::string_view value) const {
    const std::string v = lower(value);
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
    refuse(std::string(key) + ":" + std::string(value) + " is not a boolean (true, false, 1 or 0)");
  }

  uint64_t size(std::string_view key, std::string_view value) const {
    size_t digits = 0;
    while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits])))
      ++digits;
    const std::string unit = lower(trim(value.substr(digits)));
    struct Unit {
      const char* name;
      uint64_t bytes;
    };
    static const Unit units[] = {
        {"", 1},           {"b", 1},
        {"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30}, {"tib", 1ull << 40},
        {"kb", 1000ull},   {"mb", 1000000ull}, {"gb", 1000000000ull}, {"tb", 1000000000000ull},
    };
    const Unit* found = nullptr;
    for (const Unit& u : units)
      if (unit == u.name) found = &u;
    if (digits == 0 || !found)
      refuse(std::string(key) + ":" + std::string(value) +
             " is not a size (a whole number of bytes, optionally with a unit: B, KiB, MiB, "
             "GiB, TiB, KB, MB, GB or TB; e.g. 40GiB)");
    uint64_t number = 0;
    for (size_t i = 0; i < digits; ++i) {
      const uint64_t d = static_cast<uint64_t>(value[i] - '0');
      if (number > (UINT64_MAX - d) / 10) refuse(std::string(key) + ":" + std::string(value) + " is too large");
      number = number * 10 + d;
    }
    if (number != 0 && found->bytes > UINT64_MAX / number)
      refuse(std::string(key) + ":" + std::string(value) + " is too large");
    return number * found->bytes;
  }

 private:
  std::string prefix_;
};

std::string size_text(uint64_t bytes) {
  static const struct {
    const char* name;
    uint64_t bytes;
  } units[] = {{"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}};
  for (const auto& u : units)
    if (bytes != 0 && bytes % u.bytes == 0) return std::to_string(bytes / u.bytes) + u.name;
  return std::to_string(bytes);
}

}  // namespace

std::string AllocConf::text() const {
  std::vector<std::string> items;
  if (kind == Kind::caching) items.push_back("kind:caching");
  if (kind == Kind::device && !automatic && !own_pool && !managed) items.push_back("kind:device");
  if (expandable) items.push_back("expandable:true");
  if (page_size) items.push_back("page_size:" + size_text(page_size));
  if (limit) items.push_back("limit:" + size_text(limit));
  if (own_pool) items.push_back("release_threshold:" + size_text(release_threshold));
  if (managed) items.push_back("managed:true");
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

AllocConf parse_alloc_conf(std::string_view text, std::string_view origin) {
  const Parser p(origin);
  AllocConf conf;
  std::vector<std::string> seen;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;  // "a:1,,b:2" and a trailing comma
    const size_t colon = item.find(':');
    const std::string key(trim(item.substr(0, colon)));
    if (colon == std::string_view::npos || trim(item.substr(colon + 1)).empty())
      p.refuse("'" + std::string(item) + "' has no value (write key:value, e.g. kind:caching)");
    const std::string_view value = trim(item.substr(colon + 1));
    for (const std::string& s : seen)
      if (s == key) p.refuse("the key '" + key + "' is given twice");
    seen.push_back(key);
    if (key != "limit") conf.automatic = false;  // every other key says what memory to use
    if (key == "kind") {
      const std::string v = lower(value);
      if (v == "device") conf.kind = AllocConf::Kind::device;
      else if (v == "caching") conf.kind = AllocConf::Kind::caching;
      else p.refuse("kind:" + std::string(value) + " is not a kind (device or caching)");
    } else if (key == "expandable") {
      conf.expandable = p.boolean(key, value);
    } else if (key == "page_size") {
      conf.page_size = p.size(key, value);
    } else if (key == "limit") {
      conf.limit = p.size(key, value);
    } else if (key == "release_threshold") {
      conf.own_pool = true;
      conf.release_threshold = p.size(key, value);
    } else if (key == "managed") {
      conf.managed = p.boolean(key, value);
    } else {
      p.refuse("unknown key '" + key + "' (the keys are " + kAllocConfKeys + ")");
    }
  }
  if (conf.expandable && conf.kind != AllocConf::Kind::caching)
    p.refuse("expandable:true needs kind:caching (expandable segments are the caching adaptor's)");
  if (conf.page_size && !conf.expandable)
    p.refuse("page_size is the expandable segments' page: it needs expandable:true");
  if (conf.managed && conf.own_pool)
    p.refuse("managed:true and release_threshold do not go together (release_threshold makes a "
             "device memory pool of the framework's own)");
  if (conf.managed && conf.expandable)
    p.refuse("managed:true and expandable:true do not go together (expandable segments map "
             "device memory)");
  return conf;
}

AllocConf alloc_conf_from_environment(const char* alloc_conf, const char* framework_resource) {
  AllocConf conf = parse_alloc_conf(alloc_conf ? alloc_conf : "", "CUMEM_ALLOC_CONF");
  if (!framework_resource || !*framework_resource) return conf;
  const std::string value = framework_resource;
  AllocConf old;
  if (value == "caching" || value == "expandable") old.kind = AllocConf::Kind::caching;
  else if (value != "device")
    fail(Status::invalid_argument, "CUMEM_FRAMEWORK_RESOURCE is '" + value +
                                       "'; it must be 'device', 'caching', 'expandable' or unset "
                                       "(or use CUMEM_ALLOC_CONF, e.g. kind:caching)");
  old.expandable = value == "expandable";
  old.automatic = false;
  if (!alloc_conf || !*alloc_conf) return old;
  if (conf.automatic) {  // the older variable names the kind; the other keys apply
    conf.automatic = false;
    conf.kind = old.kind;
    conf.expandable = old.expandable;
    return conf;
  }
  if (old.kind != conf.kind || old.expandable != conf.expandable)
    fail(Status::invalid_argument,
         "CUMEM_FRAMEWORK_RESOURCE=" + value + " and CUMEM_ALLOC_CONF=" + alloc_conf +
             " disagree on the kind (CUMEM_FRAMEWORK_RESOURCE is the older spelling of "
             "kind:device, kind:caching and kind:caching,expandable:true): unset one");
  return conf;
}

}  // namespace cumem::core
