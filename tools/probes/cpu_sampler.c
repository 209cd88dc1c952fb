/* A CPU sampling profiler for the GPU machine, which has no perf: preload it
 * into a process (LD_PRELOAD), and at exit it writes where the process spent
 * its CPU time, by function, to $CPU_SAMPLER_OUT.
 *
 *   gcc -O2 -shared -fPIC tools/probes/cpu_sampler.c -o build/cpu_sampler.so -ldl -lrt
 *   CPU_SAMPLER_OUT=/tmp/prof LD_PRELOAD=build/cpu_sampler.so python3 x.py
 *   python3 tools/probes/cpu_sampler_report.py /tmp/prof.<pid>
 *
 * Every millisecond of the process's CPU time (a POSIX CPU-time timer, on a
 * realtime signal) the thread that takes the signal records its
 * stack (glibc's backtrace, 24 frames); at exit each distinct return address
 * is written with its module, its offset there and the nearest dynamic
 * symbol dladdr finds, with two counts: samples where it is the innermost
 * frame (self) and samples where it is anywhere on the stack (total).
 * Offsets of modules built with symbols (libcumem, the PyTorch extension)
 * are resolved by the report with addr2line; dladdr's names are only the
 * exported ones. Each process that took samples writes
 * $CPU_SAMPLER_OUT.<pid> (child processes inherit LD_PRELOAD). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define FRAMES 24
#define SAMPLES 400000

static void* stacks[SAMPLES][FRAMES];
static unsigned char depths[SAMPLES];
static atomic_uint taken;
static int active;

static void on_prof(int sig) {
  (void)sig;
  unsigned i = atomic_fetch_add(&taken, 1);
  if (i >= SAMPLES) return;
  int n = backtrace(stacks[i], FRAMES);
  depths[i] = (unsigned char)(n > 0 ? n : 0);
}

static timer_t timer;
/* A realtime signal of its own, which no profiler or handler of the
 * process (Python's, PyTorch's) uses, rather than SIGPROF. */
#define SAMPLE_SIGNAL (SIGRTMIN + 7)

__attribute__((constructor)) static void start(void) {
  if (!getenv("CPU_SAMPLER_OUT")) return;
  void* warm[4];
  backtrace(warm, 4); /* loads libgcc_s outside the handler */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prof;
  sa.sa_flags = SA_RESTART;
  sigaction(SAMPLE_SIGNAL, &sa, NULL);
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SAMPLE_SIGNAL;
  if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &timer) != 0) return;
  struct itimerspec t = {{0, 1000000}, {0, 1000000}};
  timer_settime(timer, 0, &t, NULL);
  active = 1;
}

static int by_address(const void* a, const void* b) {
  uintptr_t x = (uintptr_t) * (void* const*)a, y = (uintptr_t) * (void* const*)b;
  return x < y ? -1 : x > y;
}

/* The stack of sample i without the handler's two frames (on_prof and the
 * signal trampoline): [first, depth). */
enum { kSkip = 2 };

__attribute__((destructor)) static void finish(void) {
  if (!active) return;
  timer_delete(timer);
  signal(SAMPLE_SIGNAL, SIG_IGN);
  unsigned n = atomic_load(&taken);
  if (n > SAMPLES) n = SAMPLES;
  if (n == 0) return;
  size_t count = 0;
  for (unsigned i = 0; i < n; ++i) count += depths[i] > kSkip ? depths[i] - kSkip : 0;
  void** pcs = malloc((count + 1) * sizeof *pcs);
  if (!pcs) return;
  size_t k = 0;
  for (unsigned i = 0; i < n; ++i)
    for (int f = kSkip; f < depths[i]; ++f) pcs[k++] = stacks[i][f];
  qsort(pcs, count, sizeof *pcs, by_address);
  char path[4096];
  const char* base = getenv("CPU_SAMPLER_OUT");
  snprintf(path, sizeof path, "%s.%d", base, (int)getpid());
  FILE* out = fopen(path, "w");
  if (!out) return;
  fprintf(out, "# samples %u (1 ms of CPU each)\n", n);
  /* Each distinct address: "A address module offset symbol". */
  for (size_t i = 0; i < count; ++i) {
    if (i > 0 && pcs[i] == pcs[i - 1]) continue;
    Dl_info info;
    memset(&info, 0, sizeof info);
    const char* module = "?";
    const char* symbol = "?";
    uintptr_t offset = (uintptr_t)pcs[i];
    if (dladdr(pcs[i], &info)) {
      if (info.dli_fname && *info.dli_fname) module = info.dli_fname;
      offset = (uintptr_t)pcs[i] - (uintptr_t)info.dli_fbase;
      if (info.dli_sname) symbol = info.dli_sname;
    }
    fprintf(out, "A %lx %s %lx %s\n", (unsigned long)(uintptr_t)pcs[i], module,
            (unsigned long)offset, symbol);
  }
  /* Each sample: "S address..." innermost first. */
  for (unsigned i = 0; i < n; ++i) {
    fputs("S", out);
    for (int f = kSkip; f < depths[i]; ++f) fprintf(out, " %lx", (unsigned long)(uintptr_t)stacks[i][f]);
    fputc('\n', out);
  }
  fclose(out);
  free(pcs);
}
