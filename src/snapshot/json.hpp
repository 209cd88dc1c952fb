// A small JSON writer for snapshots and statistics: objects, arrays,
// strings (escaped; invalid UTF-8 replaced by U+FFFD; '<', '>' and '&'
// written as \u escapes so that the text can sit inside an HTML <script>),
// integers and doubles (std::to_chars: the same in every locale).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cumem::core::snapshot {

class Json {
 public:
  Json& begin_object() { return open('{'); }
  Json& end_object() { return close('}'); }
  Json& begin_array() { return open('['); }
  Json& end_array() { return close(']'); }
  // The key of the next value of the object.
  Json& key(std::string_view k) {
    separate();
    string_literal(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  Json& value(std::string_view v) {
    separate();
    string_literal(v);
    return *this;
  }
  Json& value(const char* v) { return value(std::string_view(v)); }
  Json& value(const std::string& v) { return value(std::string_view(v)); }
  Json& value(uint64_t v) { return number(v); }
  Json& value(int64_t v) { return number(v); }
  Json& value(uint32_t v) { return number(static_cast<uint64_t>(v)); }
  Json& value(int v) { return number(static_cast<int64_t>(v)); }
  Json& value(double v) {
    separate();
    char text[32];
    const auto r = std::to_chars(text, text + sizeof text, v);
    out_.append(text, r.ptr);
    return *this;
  }
  Json& value(bool v) {
    separate();
    out_ += v ? "true" : "false";
    return *this;
  }
  Json& null() {
    separate();
    out_ += "null";
    return *this;
  }
  template <class T>
  Json& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  Json& open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  Json& close(char c) {
    out_ += c;
    first_.pop_back();
    return *this;
  }
  template <class T>
  Json& number(T v) {
    separate();
    char text[24];
    const auto r = std::to_chars(text, text + sizeof text, v);
    out_.append(text, r.ptr);
    return *this;
  }
  // A comma before every element but the first (and none after a key).
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
  void string_literal(std::string_view s);

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace cumem::core::snapshot
