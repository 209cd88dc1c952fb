// The framework configuration's text (src/alloc_conf.cpp) alone, without a
// driver: every key, sizes and booleans, the refusals and their messages,
// the canonical text, and CUMEM_FRAMEWORK_RESOURCE as the older spelling.
#include <gtest/gtest.h>

#include <string>

#include "alloc_conf.hpp"
#include "error.hpp"

using cumem::core::AllocConf;
using cumem::core::Error;
using cumem::core::Status;
using cumem::core::alloc_conf_from_environment;
using cumem::core::parse_alloc_conf;

namespace {

AllocConf parse(const std::string& text) { return parse_alloc_conf(text, "CUMEM_ALLOC_CONF"); }

// The message of the refusal of `text`, which must be invalid_argument.
std::string refusal(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument) << text;
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' was accepted";
  return "";
}

#define EXPECT_REFUSED(text, part)                                             \
  do {                                                                         \
    const std::string m = refusal(text);                                       \
    EXPECT_NE(m.find(part), std::string::npos) << "message: " << m;            \
    EXPECT_EQ(m.rfind("CUMEM_ALLOC_CONF: ", 0), 0u) << "message: " << m;       \
  } while (0)

TEST(AllocConf, EmptyIsTheDefaults) {
  for (const char* text : {"", "   ", ",", " , ,"}) {
    const AllocConf c = parse(text);
    EXPECT_TRUE(c.automatic) << text;
    EXPECT_EQ(c.kind, AllocConf::Kind::device) << text;
    EXPECT_FALSE(c.expandable);
    EXPECT_EQ(c.page_size, 0u);
    EXPECT_EQ(c.limit, 0u);
    EXPECT_FALSE(c.own_pool);
    EXPECT_FALSE(c.managed);
    EXPECT_TRUE(c.uses_device_memory_resource());
    EXPECT_EQ(c.text(), "");
  }
}

TEST(AllocConf, EveryKey) {
  const AllocConf c =
      parse(" kind : caching , expandable:True,page_size:40MiB, limit:40GiB,release_threshold:1GB ");
  EXPECT_EQ(c.kind, AllocConf::Kind::caching);
  EXPECT_TRUE(c.expandable);
  EXPECT_EQ(c.page_size, 40ull << 20);
  EXPECT_EQ(c.limit, 40ull << 30);
  EXPECT_TRUE(c.own_pool);
  EXPECT_EQ(c.release_threshold, 1000000000ull);
  EXPECT_FALSE(c.uses_device_memory_resource());
  const AllocConf m = parse("managed:1,kind:device,limit:0");
  EXPECT_TRUE(m.managed);
  EXPECT_FALSE(m.uses_device_memory_resource());
  EXPECT_EQ(m.limit, 0u) << "limit 0 is no limit";
  EXPECT_EQ(parse("release_threshold:0").release_threshold, 0u) << "0 keeps nothing";
  EXPECT_TRUE(parse("release_threshold:0").own_pool);
  EXPECT_FALSE(parse("expandable:false,managed:FALSE").managed);
}

TEST(AllocConf, Sizes) {
  struct {
    const char* text;
    unsigned long long bytes;
  } cases[] = {
      {"limit:4096", 4096},          {"limit:4096B", 4096},       {"limit:1KiB", 1024},
      {"limit:3mib", 3ull << 20},    {"limit:2 GiB", 2ull << 30}, {"limit:1TiB", 1ull << 40},
      {"limit:1KB", 1000},           {"limit:5MB", 5000000},      {"limit:7gb", 7000000000ull},
      {"limit:2TB", 2000000000000ull},
  };
  for (const auto& c : cases) EXPECT_EQ(parse(c.text).limit, c.bytes) << c.text;
  EXPECT_EQ(parse("limit:18446744073709551615").limit, UINT64_MAX);
  EXPECT_REFUSED("limit:18446744073709551616", "limit:18446744073709551616 is too large");
  EXPECT_REFUSED("limit:16777216TiB", "is too large");
  EXPECT_REFUSED("limit:1.5GiB", "limit:1.5GiB is not a size");
  EXPECT_REFUSED("limit:-1", "is not a size");
  EXPECT_REFUSED("limit:GiB", "is not a size");
  EXPECT_REFUSED("limit:12 parsecs", "e.g. 40GiB");
}

TEST(AllocConf, Refusals) {
  EXPECT_REFUSED("colour:blue", "unknown key 'colour' (the keys are kind, expandable, page_size, "
                                "limit, release_threshold, managed)");
  EXPECT_REFUSED("kind", "'kind' has no value (write key:value");
  EXPECT_REFUSED("kind:", "'kind:' has no value");
  EXPECT_REFUSED("kind:caching,kind:device", "the key 'kind' is given twice");
  EXPECT_REFUSED("kind:pool", "kind:pool is not a kind (device or caching)");
  EXPECT_REFUSED("expandable:yes", "expandable:yes is not a boolean (true, false, 1 or 0)");
  EXPECT_REFUSED("expandable:true", "expandable:true needs kind:caching");
  EXPECT_REFUSED("kind:device,expandable:true", "needs kind:caching");
  EXPECT_REFUSED("kind:caching,page_size:2MiB", "page_size is the expandable segments' page");
  EXPECT_REFUSED("managed:true,release_threshold:1GiB", "do not go together");
  EXPECT_REFUSED("kind:caching,managed:true,expandable:true", "expandable segments map device memory");
  // Keys are exact (values are not case-sensitive).
  EXPECT_REFUSED("Kind:caching", "unknown key 'Kind'");
  EXPECT_EQ(parse("kind:CACHING").kind, AllocConf::Kind::caching);
}

TEST(AllocConf, NoOriginNoPrefix) {
  try {
    parse_alloc_conf("x:1", "");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("unknown key 'x'", 0), 0u) << e.what();
  }
}

TEST(AllocConf, TextParsesBackToTheSameConfiguration) {
  for (const char* text :
       {"kind:caching", "kind:caching,expandable:true,page_size:2MiB",
        "limit:12345", "release_threshold:0", "release_threshold:3GiB,kind:caching,limit:1TiB",
        "managed:true,limit:64MiB", "limit:1000000"}) {
    const AllocConf a = parse(text);
    const AllocConf b = parse(a.text());
    EXPECT_EQ(a.text(), b.text()) << text;
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.expandable, a.expandable);
    EXPECT_EQ(b.page_size, a.page_size);
    EXPECT_EQ(b.limit, a.limit);
    EXPECT_EQ(b.own_pool, a.own_pool);
    EXPECT_EQ(b.release_threshold, a.release_threshold);
    EXPECT_EQ(b.managed, a.managed);
  }
  EXPECT_EQ(parse("limit:40GiB , kind:caching").text(), "kind:caching,limit:40GiB");
  EXPECT_EQ(parse("limit:1000").text(), "limit:1000");
}

// Only a limit leaves the choice of memory to the framework; every other
// key, kind:device too, makes it.
TEST(AllocConf, OnlyALimitLeavesTheMemoryToTheFramework) {
  EXPECT_TRUE(parse("limit:1GiB").automatic);
  for (const char* text : {"kind:device", "kind:caching", "kind:caching,expandable:false",
                           "release_threshold:0", "managed:false", "limit:1GiB,kind:device"}) {
    EXPECT_FALSE(parse(text).automatic) << text;
  }
  EXPECT_EQ(parse("kind:device").text(), "kind:device");
  EXPECT_FALSE(parse(parse("kind:device").text()).automatic);
  EXPECT_EQ(parse("kind:device,limit:2GiB").text(), "kind:device,limit:2GiB");
  EXPECT_EQ(parse("kind:device,release_threshold:1GiB").text(), "release_threshold:1GiB");
}

TEST(AllocConf, TheOlderVariableIsKind) {
  EXPECT_EQ(alloc_conf_from_environment(nullptr, nullptr).text(), "");
  EXPECT_EQ(alloc_conf_from_environment("", "").text(), "");
  EXPECT_TRUE(alloc_conf_from_environment(nullptr, nullptr).automatic);
  EXPECT_EQ(alloc_conf_from_environment(nullptr, "device").text(), "kind:device");
  EXPECT_FALSE(alloc_conf_from_environment(nullptr, "device").automatic);
  EXPECT_EQ(alloc_conf_from_environment(nullptr, "caching").text(), "kind:caching");
  EXPECT_EQ(alloc_conf_from_environment(nullptr, "expandable").text(),
            "kind:caching,expandable:true");
  // Both: they must agree; the new one's other keys apply.
  EXPECT_EQ(alloc_conf_from_environment("kind:caching,limit:1GiB", "caching").text(),
            "kind:caching,limit:1GiB");
  EXPECT_EQ(alloc_conf_from_environment("limit:1GiB", "device").text(), "kind:device,limit:1GiB");
  EXPECT_EQ(alloc_conf_from_environment("limit:1GiB", "expandable").text(),
            "kind:caching,expandable:true,limit:1GiB");
  try {
    alloc_conf_from_environment("kind:device", "caching");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUMEM_FRAMEWORK_RESOURCE=caching and "
                                         "CUMEM_ALLOC_CONF=kind:device disagree"),
              std::string::npos)
        << e.what();
  }
  try {
    alloc_conf_from_environment(nullptr, "bogus");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUMEM_FRAMEWORK_RESOURCE is 'bogus'"), std::string::npos)
        << e.what();
  }
  try {
    alloc_conf_from_environment("kind:caching,limit:lots", nullptr);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("CUMEM_ALLOC_CONF: limit:lots is not a size", 0), 0u)
        << e.what();
  }
}

}  // namespace
