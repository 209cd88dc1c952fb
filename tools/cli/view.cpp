// cumem snapshot view FILE.json -o FILE.html: the snapshot's JSON inside the
// viewer page (viewer.html, embedded at build time), one file that opens
// anywhere with no network.
#include <cctype>
#include <string>

#include "cli.hpp"
#include "viewer_html.inc"

namespace cumem_cli {

const char* const kSnapshotUsage =
    "usage: cumem snapshot view FILE.json -o FILE.html\n"
    "\n"
    "Writes a memory snapshot (the JSON of cumem_snapshot_write_json, of\n"
    "cumem.memory_snapshot() in Python, or of $CUMEM_OOM_SNAPSHOT) as one\n"
    "self-contained HTML page: the timeline of reserved and in-use bytes with\n"
    "the history's events, the map of segments and blocks by state, the\n"
    "fragmentation, and the largest allocations with their stacks. The page\n"
    "loads nothing from the network.\n"
    "\n"
    "  -o, --output FILE.html   where to write the page (required)\n";

namespace {

// A strict JSON check (RFC 8259), for a clear message before a page is
// made that could not load.
class JsonCheck {
 public:
  explicit JsonCheck(const std::string& s) : s_(s) {}
  // "" when valid, else what is wrong and where.
  std::string run() {
    try {
      space();
      value(0);
      space();
      if (i_ != s_.size()) fail("text after the JSON value");
    } catch (const std::string& e) {
      return e;
    }
    return "";
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw what + " at byte " + std::to_string(i_);
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (i_ >= s_.size() || s_[i_] != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  void literal(const char* word) {
    for (const char* p = word; *p; ++p) expect(*p);
  }
  void value(int depth) {
    if (depth > 256) fail("nesting deeper than 256");
    if (i_ >= s_.size()) fail("unexpected end");
    const char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    number();
  }
  void object(int depth) {
    expect('{');
    space();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return;
    }
    for (;;) {
      space();
      string();
      space();
      expect(':');
      space();
      value(depth + 1);
      space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return;
    }
  }
  void array(int depth) {
    expect('[');
    space();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return;
    }
    for (;;) {
      space();
      value(depth + 1);
      space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return;
    }
  }
  void string() {
    expect('"');
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return;
      }
      if (c < 0x20) fail("a control character in a string");
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) break;
        const char e = s_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i_ + k >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_ + k])))
              fail("a bad \\u escape");
          i_ += 4;
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          fail("a bad escape");
        }
      }
      ++i_;
    }
    fail("an unterminated string");
  }
  void number() {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else {
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        i_ = start;
        fail("expected a value");
      }
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("a bad number");
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("a bad number");
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

// The value of the top-level string field `key`, or "" (the JSON is valid).
std::string top_string(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  size_t at = json.find(quoted);
  if (at == std::string::npos) return "";
  at += quoted.size();
  while (at < json.size() && std::isspace(static_cast<unsigned char>(json[at]))) ++at;
  if (at >= json.size() || json[at] != ':') return "";
  ++at;
  while (at < json.size() && std::isspace(static_cast<unsigned char>(json[at]))) ++at;
  if (at >= json.size() || json[at] != '"') return "";
  const size_t end = json.find('"', at + 1);
  return end == std::string::npos ? "" : json.substr(at + 1, end - at - 1);
}

}  // namespace

int snapshot_main(const Args& args) {
  if (args.empty()) throw UsageError("which snapshot command? (view)");
  if (args[0] != "view") throw UsageError("no snapshot command '" + args[0] + "' (view)");
  std::string input, output;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size()) throw UsageError(args[i] + " needs a file name");
      output = args[++i];
    } else if (!args[i].empty() && args[i][0] == '-' && args[i] != "-") {
      throw UsageError("unknown option '" + args[i] + "'");
    } else if (input.empty()) {
      input = args[i];
    } else {
      throw UsageError("one snapshot at a time ('" + input + "' and '" + args[i] + "')");
    }
  }
  if (input.empty()) throw UsageError("which snapshot? (a JSON file)");
  if (output.empty()) throw UsageError("where to? (-o FILE.html)");
  const std::string json = read_file(input);
  const std::string problem = JsonCheck(json).run();
  if (!problem.empty()) throw Failure("'" + input + "' is not valid JSON: " + problem);
  if (top_string(json, "schema") != "cumem.snapshot")
    throw Failure("'" + input + "' is JSON but not a libcumem snapshot (no \"schema\": "
                  "\"cumem.snapshot\"); a PyTorch snapshot opens in pytorch.org/memory_viz");
  // In valid JSON '<' is only ever inside a string, where \u003c means the
  // same: so nothing in the data can close the <script> element.
  std::string data;
  data.reserve(json.size());
  for (char c : json) {
    if (c == '<') data += "\\u003c";
    else data += c;
  }
  std::string page = kViewerHtml;
  const std::string placeholder = "@CUMEM_SNAPSHOT_JSON@";
  page.replace(page.find(placeholder), placeholder.size(), data);
  write_file(output, page);
  return kOk;
}

}  // namespace cumem_cli
