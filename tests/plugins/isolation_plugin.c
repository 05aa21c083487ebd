/* Correct attention (test_attention.h) with one behaviour that tests the
 * host's limits and isolation (issue #30), chosen by $ATTNCHECK_TEST_ISOLATION:
 *   burn          spends $ATTNCHECK_TEST_BURN_MS of CPU time in every call
 *                 (with $ATTNCHECK_TEST_BURN_BATCHED_ONLY set: in every call
 *                 of more than one batch x head, so the probes' calls are not
 *                 slowed) before answering: a slow but correct kernel, whose time
 *                 limit must be judged on CPU time, not on a busy clock;
 *   sleep         sleeps $ATTNCHECK_TEST_SLEEP_MS (default 100) in every call of
 *                 more than one batch x head: a run that takes seconds by the
 *                 clock and almost no CPU (the terminal tests' clock, cheap beside
 *                 the other tests and under a sanitizer);
 *   child_burn    every call forks a child that spins forever and waits for
 *                 it: the host itself spends no CPU, its process tree does;
 *   scribble      from load on, a thread looks in /proc/self/maps for shared
 *                 call regions it was not handed (another plugin's) and
 *                 writes into them, forever;
 *   fork_memory   the first call forks three children that each touch
 *                 $ATTNCHECK_TEST_CHILD_MIB MiB (default 100) and sleep;
 *   kill_supervisor  the first call of each host starts a daemon (double
 *                 fork, setsid), appends its pid to $ATTNCHECK_TEST_PID_FILE,
 *                 and kills the host's parent (its supervisor);
 *   slow_crash    loading takes $ATTNCHECK_TEST_LOAD_DELAY_MS of CPU time, and
 *                 every call dies of SIGSEGV: each restart costs a slow load;
 *   core_limit    every call raises its core-dump limit as far as it may and
 *                 answers ATTNCHECK_ERROR with "core soft=S hard=H".
 * Any other value (or none): plain correct attention. Built with
 * ISOLATION_ALWAYS_SCRIBBLE (scribble_plugin.so) it always scribbles, so one
 * run can check it beside a correct instance of itself. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_attention.h"

static const char *behaviour(void) {
#ifdef ISOLATION_ALWAYS_SCRIBBLE
  return "scribble";  /* scribble_plugin.so: hostile whatever the environment says */
#endif
  const char *b = getenv("ATTNCHECK_TEST_ISOLATION");
  return b ? b : "";
}

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void burn(double ms) {
  volatile double x = 0;
  const double until = cpu_ms() + ms;
  while (cpu_ms() < until)
    for (int i = 0; i < 10000; ++i) x += 1e-9;
}

/* Scribbles into every "attncheck-call" shared mapping this process has. */
__attribute__((no_sanitize("address", "undefined")))
static void *scribbler(void *unused) {
  (void)unused;
  for (;;) {
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof line, maps)) {
      if (!strstr(line, "attncheck-call")) continue;
      unsigned long lo = 0, hi = 0;
      char perms[8] = {0};
      if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[1] != 'w') continue;
      for (unsigned long a = lo; a < hi; a += 61) *(volatile unsigned char *)a ^= 0x5a;
    }
    if (maps) fclose(maps);
    usleep(1000);
  }
  return NULL;
}

__attribute__((constructor)) static void on_load(void) {
  if (strcmp(behaviour(), "slow_crash") == 0) {
    const char *ms = getenv("ATTNCHECK_TEST_LOAD_DELAY_MS");
    burn(ms ? atof(ms) : 0);
  }
  if (strcmp(behaviour(), "scribble") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, scribbler, NULL);
    pthread_detach(t);
  }
}

static int first_call = 1;

static void fork_memory(void) {
  const char *mib_text = getenv("ATTNCHECK_TEST_CHILD_MIB");
  const size_t mib = mib_text ? (size_t)atoi(mib_text) : 100;
  for (int k = 0; k < 3; ++k)
    if (fork() == 0) {
      char *p = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) memset(p, 1, mib << 20);
      for (;;) pause();
    }
  sleep(2);  /* long enough for any memory watcher to see them */
}

static void kill_supervisor(void) {
  const pid_t supervisor = getppid();
  const pid_t middle = fork();
  if (middle == 0) {
    setsid();
    const pid_t daemon = fork();
    if (daemon == 0) {
      for (int fd = 0; fd < 1024; ++fd) close(fd);
      for (;;) pause();
    }
    const char *file = getenv("ATTNCHECK_TEST_PID_FILE");
    FILE *f = file ? fopen(file, "a") : NULL; /* one line per restarted host's daemon */
    if (f) {
      fprintf(f, "%d\n", (int)daemon);
      fclose(f);
    }
    _exit(0);
  }
  waitpid(middle, NULL, 0);
  kill(supervisor, SIGKILL);
  sleep(1);  /* the host follows its supervisor (PR_SET_PDEATHSIG) */
}

static int isolation_forward(const attncheck_call *c, char *err, size_t err_len) {
  const char *b = behaviour();
  if (strcmp(b, "burn") == 0) {
    const char *ms = getenv("ATTNCHECK_TEST_BURN_MS");
    if (!getenv("ATTNCHECK_TEST_BURN_BATCHED_ONLY") || c->batch * c->heads > 1) burn(ms ? atof(ms) : 100);
  } else if (strcmp(b, "sleep") == 0) {
    const char *ms = getenv("ATTNCHECK_TEST_SLEEP_MS");
    if (c->batch * c->heads > 1) usleep((useconds_t)((ms ? atof(ms) : 100) * 1000));
  } else if (strcmp(b, "child_burn") == 0) {
    const pid_t child = fork();
    if (child == 0) burn(1e12);
    waitpid(child, NULL, 0);
  } else if (strcmp(b, "fork_memory") == 0 && first_call) {
    first_call = 0;
    fork_memory();
  } else if (strcmp(b, "kill_supervisor") == 0 && first_call) {
    first_call = 0;
    kill_supervisor();
  } else if (strcmp(b, "slow_crash") == 0) {
    raise(SIGSEGV);
  } else if (strcmp(b, "core_limit") == 0) {
    struct rlimit r;
    getrlimit(RLIMIT_CORE, &r);
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_CORE, &r);
    getrlimit(RLIMIT_CORE, &r);
    snprintf(err, err_len, "core soft=%llu hard=%llu", (unsigned long long)r.rlim_cur,
             (unsigned long long)r.rlim_max);
    return 2; /* an error: the text is the answer */
  }
  return test_attention(c, err, err_len);
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {ATTNCHECK_ABI_VERSION, "isolation_plugin", isolation_forward};
  return &impl;
}
