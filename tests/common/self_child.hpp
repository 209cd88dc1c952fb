// This test program run again as a child process with arguments of its
// own (its main() dispatches them): for cases that must start CUDA afresh,
// that may crash (a crash fails the one test, not the whole program), or
// that talk to the parent over a socket. fork + exec of /proc/self/exe, so
// the child is a new program image: gtest's death tests, which re-execute
// from a clone() of the test process, hang under compute-sanitizer, and a
// plain fork of a process that has started CUDA cannot use CUDA.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

// Replaces the calling process with this program run with `args`; exits 127
// where the exec fails.
[[noreturn]] inline void exec_self(const std::vector<std::string>& args) {
  static const char self_path[] = "/proc/self/exe";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(self_path));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(self_path, argv.data());
  _exit(127);
}

// Starts this program with `args` as a child; its pid, or -1.
inline pid_t start_self(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) exec_self(args);
  return pid;
}

// Waits for the child: its exit code, 128 + the signal that killed it, or
// -1 where it cannot be waited for.
inline int wait_exit_code(pid_t pid) {
  int status = 0;
  if (pid <= 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
