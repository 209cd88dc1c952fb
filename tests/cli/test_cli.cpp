// The cumem command-line tool, run as a user runs it: each subcommand's
// output, --help, exit statuses, errors that say what is wrong, the
// progress bar only on a terminal. $CUMEM_CLI names the tool; the fake
// drivers are named by $CUMEM_TEST_FAKE_MEMORY_CUDA and
// $CUMEM_TEST_FAKE_CAPTURE_CUDA (tests/cli/meson.build sets them).
#include <fcntl.h>
#include <pty.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cumem/cumem.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

extern char** environ;

namespace {

struct Outcome {
  int status = -1;
  std::string out, err;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "cumem_cli_" + std::to_string(getpid()) + "_" + name;
}

const char* cli() {
  const char* p = std::getenv("CUMEM_CLI");
  return p ? p : "";
}

// Runs the tool with `args`, the environment plus `env` ("NAME=value"),
// stdout and stderr to files (or stderr to `stderr_fd`).
Outcome run(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
        int stderr_fd = -1) {
  const std::string out_path = temp_path("out"), err_path = temp_path("err");
  std::vector<std::string> argv_s = {cli()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (const auto& mine : env)
      if (kv.substr(0, kv.find('=') + 1) == mine.substr(0, mine.find('=') + 1)) replaced = true;
    if (!replaced) env_s.push_back(kv);
  }
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(&e[0]);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (stderr_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  else
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  Outcome r;
  const int e = posix_spawn(&pid, cli(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (e != 0) {
    r.err = std::string("posix_spawn: ") + std::strerror(e);
    return r;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_all(out_path);
  if (stderr_fd < 0) r.err = read_all(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_STRNE(cli(), "") << "run with CUMEM_CLI set to the cumem tool"; }
};

TEST_F(Cli, HelpUsageAndExitStatuses) {
  Outcome r = run({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(has(r.out, "usage: cumem <command>")) << r.out;
  EXPECT_TRUE(has(r.out, "exit status: 0 done; 1 the command failed")) << r.out;
  r = run({});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "usage: cumem")) << r.err;
  r = run({"bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "no command 'bogus'")) << r.err;
  r = run({"help", "replay"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(has(r.out, "usage: cumem replay FILE.csv")) << r.out;
  r = run({"snapshot", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(has(r.out, "usage: cumem snapshot view")) << r.out;
  r = run({"--version"});
  EXPECT_EQ(r.status, 0);
  const uint32_t v = cumem_version();
  EXPECT_TRUE(has(r.out, "libcumem " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100)))
      << r.out;
}

TEST_F(Cli, InfoSaysNoDriverClearlyAndSucceeds) {
  const std::vector<std::string> env = {"CUMEM_LIBCUDA=/nonexistent/libcuda-for-cli-test.so.1"};
  Outcome r = run({"info"}, env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "driver: no driver (")) << r.out;
  EXPECT_TRUE(has(r.out, "/nonexistent/libcuda-for-cli-test.so.1")) << "the reason: " << r.out;
  EXPECT_TRUE(has(r.out, "devices: none (no driver)")) << r.out;
  EXPECT_TRUE(has(r.out, "environment: CUMEM_LIBCUDA=/nonexistent/")) << r.out;
  r = run({"info", "--json"}, env);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("{\"schema\":\"cumem.info\",\"version\":1,", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out, "\"driver\":{\"loaded\":false,\"error\":")) << r.out;
  EXPECT_TRUE(has(r.out, "\"devices\":[]")) << r.out;
  r = run({"info", "--bogus"}, env);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "unknown argument '--bogus'")) << r.err;
}

TEST_F(Cli, InfoListsDevicesPoolsAndDefaults) {
  const char* memory = std::getenv("CUMEM_TEST_FAKE_MEMORY_CUDA");
  const char* capture = std::getenv("CUMEM_TEST_FAKE_CAPTURE_CUDA");
  ASSERT_TRUE(memory && capture);
  // A device without memory pools: cuMemAlloc is its default.
  Outcome r = run({"info"}, {std::string("CUMEM_LIBCUDA=") + memory});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "driver: CUDA 13.0 (13000)")) << r.out;
  EXPECT_TRUE(has(r.out, "devices: 1")) << r.out;
  EXPECT_TRUE(has(r.out, "device 0: Fake Memory Device")) << r.out;
  EXPECT_TRUE(has(r.out, "memory: 16.00 GiB total, 8.00 GiB free")) << r.out;
  EXPECT_TRUE(has(r.out, "memory pools: no")) << r.out;
  EXPECT_TRUE(has(r.out, "default memory resource: legacy device resource")) << r.out;
  // One with pools: the default pool and its attributes.
  r = run({"info"}, {std::string("CUMEM_LIBCUDA=") + capture, "CUMEM_FRAMEWORK_RESOURCE=caching"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "memory pools: yes")) << r.out;
  EXPECT_TRUE(has(r.out, "default memory resource: default pool of device 0")) << r.out;
  EXPECT_TRUE(has(r.out, "pool: release threshold none (keeps all)")) << r.out;
  EXPECT_TRUE(has(r.out, "frameworks (cumem_torch_alloc, cumem_cupy_malloc): a caching adaptor")) << r.out;
  r = run({"info", "--json"}, {std::string("CUMEM_LIBCUDA=") + capture});
  EXPECT_TRUE(has(r.out, "\"name\":\"Fake Capturing Device\"")) << r.out;
  EXPECT_TRUE(has(r.out, "\"memory_resource\":{\"name\":\"default pool of device 0\",\"kind\":\"device\",\"pool\":{"))
      << r.out;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST_F(Cli, SnapshotViewMakesOneSelfContainedPage) {
  cumem_resource_t* host = nullptr;
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  CUMEM_ASSERT_OK(cumem_caching_resource_create(host, &cache));
  CUMEM_ASSERT_OK(cumem_memory_history_start(nullptr));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(cache, 3 << 20, nullptr, &p));
  cumem_snapshot_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_snapshot_take(cache, &s));
  const std::string json_path = temp_path("snapshot.json"), html_path = temp_path("snapshot.html");
  CUMEM_ASSERT_OK(cumem_snapshot_write_json(s, json_path.c_str()));
  Outcome r = run({"snapshot", "view", json_path, "-o", html_path});
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string html = read_all(html_path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_FALSE(has(html, "@CUMEM_SNAPSHOT_JSON@"));
  EXPECT_TRUE(has(html, "{\"schema\":\"cumem.snapshot\",\"version\":1,")) << "the data is in the page";
  EXPECT_FALSE(has(html, "http://") || has(html, "https://")) << "nothing from the network";
  EXPECT_FALSE(has(html, "<script src") || has(html, "<link")) << "script and styles inline";
  cumem_snapshot_release(s);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(cache, p, 3 << 20, nullptr));
  cumem_memory_history_stop();
  cumem_resource_release(cache);
  cumem_resource_release(host);

  // JSON that other tools wrote ('<' unescaped inside a string) cannot close the script.
  write_text(json_path, "{ \"schema\": \"cumem.snapshot\", \"version\": 1, \"note\": \"</script><b>\" }");
  r = run({"snapshot", "view", json_path, "-o", html_path});
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string page = read_all(html_path);
  EXPECT_FALSE(has(page, "</script><b>"));
  EXPECT_TRUE(has(page, "\\u003c/script>\\u003cb>"));

  write_text(json_path, "{\"schema\": \"cumem.snapshot\", \"version\": 1,}");
  r = run({"snapshot", "view", json_path, "-o", html_path});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "is not valid JSON: expected '\"' at byte 42")) << r.err;
  write_text(json_path, "{\"segments\": [], \"device_traces\": []}");
  r = run({"snapshot", "view", json_path, "-o", html_path});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "not a libcumem snapshot")) << r.err;
  r = run({"snapshot", "view", json_path});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "where to? (-o FILE.html)")) << r.err;
  r = run({"snapshot", "view", "/nonexistent/snapshot.json", "-o", html_path});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "cannot read '/nonexistent/snapshot.json'")) << r.err;
  r = run({"snapshot"});
  EXPECT_EQ(r.status, 2);
  r = run({"snapshot", "show"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "no snapshot command 'show'")) << r.err;
  std::remove(json_path.c_str());
  std::remove(html_path.c_str());
}

// A log of the logging adaptor over the host resource: 1 MiB x 3, one
// freed, 256 B, the rest freed. At most 3 MiB in use.
std::string make_log(size_t pairs = 0) {
  const std::string path = temp_path("trace.csv");
  cumem_resource_t* host = nullptr;
  cumem_resource_t* log = nullptr;
  EXPECT_EQ(cumem_host_resource_create(nullptr, &host), CUMEM_SUCCESS);
  EXPECT_EQ(cumem_logging_resource_create(host, path.c_str(), &log), CUMEM_SUCCESS)
      << cumem_last_error_message();
  const size_t MiB = size_t{1} << 20;
  void* a[3] = {};
  for (void*& p : a) EXPECT_EQ(cumem_resource_allocate_raw(log, MiB, nullptr, &p), CUMEM_SUCCESS);
  cumem_resource_deallocate_raw(log, a[1], MiB, nullptr);
  void* small = nullptr;
  cumem_resource_allocate_raw(log, 256, nullptr, &small);
  cumem_resource_deallocate_raw(log, a[0], MiB, nullptr);
  cumem_resource_deallocate_raw(log, a[2], MiB, nullptr);
  cumem_resource_deallocate_raw(log, small, 256, nullptr);
  for (size_t i = 0; i < pairs; ++i) {
    void* p = nullptr;
    cumem_resource_allocate_raw(log, 4096, nullptr, &p);
    cumem_resource_deallocate_raw(log, p, 4096, nullptr);
  }
  cumem_resource_release(log);  // flushes the file
  cumem_resource_release(host);
  return path;
}

TEST_F(Cli, ReplayReportsTimePeaksAndFragmentationPerStack) {
  const std::string log = make_log();
  const std::string MiB3 = std::to_string(3 << 20);
  Outcome r = run({"replay", log, "-r", "host", "-r", "caching:host", "--json"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\"operations\":8,\"allocations\":4,\"frees\":4,\"failed_in_log\":0,"
                         "\"trace_peak_in_use\":" + MiB3))
      << r.out;
  EXPECT_TRUE(has(r.out, "{\"stack\":\"host\",\"time_ns\":")) << r.out;
  EXPECT_TRUE(has(r.out, "\"peak_in_use\":" + MiB3 + ",\"peak_reserved\":" + MiB3 + ","))
      << "the host resource reserves what it hands out: " << r.out;
  EXPECT_TRUE(has(r.out, "{\"stack\":\"caching:host\"")) << r.out;
  EXPECT_TRUE(has(r.out, "\"peak_reserved\":" + std::to_string((20 << 20) + 512)))
      << "one 20 MiB segment for the three blocks and a small block of 512 B: " << r.out;
  EXPECT_TRUE(has(r.out, "\"failed_allocations\":0,\"unmatched_frees\":0")) << r.out;
  // The table.
  r = run({"replay", log, "-r", "caching:host"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "replay of " + log + ": 8 operations (4 allocations, 4 frees), 3.00 MiB at most in use"))
      << r.out;
  EXPECT_TRUE(has(r.out, "peak reserved")) << r.out;
  EXPECT_TRUE(has(r.out, "caching:host")) << r.out;
  EXPECT_TRUE(has(r.out, "20.00 MiB")) << r.out;
  // Without -r and without a driver: the host stacks.
  r = run({"replay", log}, {"CUMEM_LIBCUDA=/nonexistent/libcuda.so.1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\nhost ") && has(r.out, "\ncaching:host ")) << r.out;
  // A limit the trace does not fit in: counted, and status 3.
  r = run({"replay", log, "-r", "limit=2M:host", "--json"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(has(r.out, "\"failed_allocations\":1,")) << r.out;
  std::remove(log.c_str());
}

TEST_F(Cli, ReplaySaysWhatIsWrong) {
  const std::string csv = temp_path("bad.csv");
  write_text(csv, "a,b,c\n");
  Outcome r = run({"replay", csv, "-r", "host"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "is not a logging adaptor's CSV")) << r.err;
  write_text(csv, "time_ns,thread,operation,ptr,size,stream\n1,0,allocate,0x10,64,0x1\n2,0,allocate,0x20\n");
  r = run({"replay", csv, "-r", "host"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "line 3 has 4 fields, not 6")) << r.err;
  write_text(csv, "time_ns,thread,operation,ptr,size,stream\n1,0,resize,0x10,64,0x1\n");
  r = run({"replay", csv, "-r", "host"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "line 2: unknown operation 'resize'")) << r.err;
  write_text(csv, "time_ns,thread,operation,ptr,size,stream\n1,0,allocate,0x10,64,0x1\n");
  r = run({"replay", csv, "-r", "bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "'bogus' in stack 'bogus' is not a resource")) << r.err;
  r = run({"replay", csv, "-r", "limit=lots:host"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "is not a byte count")) << r.err;
  r = run({"replay", csv, "-r", "device"}, {"CUMEM_LIBCUDA=/nonexistent/libcuda.so.1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "stack 'device' needs device 0")) << r.err;
  r = run({"replay"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "which CSV?")) << r.err;
  std::remove(csv.c_str());
}

TEST_F(Cli, TheProgressBarShowsOnlyOnATerminal) {
  const std::string log = make_log(6000);  // 12008 operations: a long replay
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0) << std::strerror(errno);
  std::string seen;
  std::thread reader([&] {
    char buf[4096];
    for (;;) {
      const ssize_t n = read(master, buf, sizeof buf);
      if (n <= 0) break;  // EIO once the child and our copy of the slave are closed
      seen.append(buf, static_cast<size_t>(n));
    }
  });
  Outcome r = run({"replay", log, "-r", "host"}, {}, slave);
  close(slave);
  reader.join();
  close(master);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(has(seen, "] 100% 12008/12008")) << "a bar on a terminal: " << seen.substr(0, 200);
  r = run({"replay", log, "-r", "host"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "") << "no bar when stderr is a file";
  r = run({"replay", log, "-r", "host", "--no-progress"}, {}, -1);
  EXPECT_EQ(r.err, "");
  std::remove(log.c_str());
}

}  // namespace
