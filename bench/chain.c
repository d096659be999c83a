// chain.c: start a chain of idle processes, each the parent of the next, for benchmarking how
// gpuclean plans and draws a deep process tree (issue 33: `kill --dry-run ROOT` was quadratic
// in the chain's length).
//
//   chain N PIDFILE [-l LIFETIME_S] [-t SETUP_TIMEOUT_S]
//
// Forks one child, the chain's root; each chain process forks the next, N in all (so the last
// one is at depth N-1 below the root). Once all N are set up it writes PIDFILE atomically
// (write + rename): the chain's PIDs, root first, one a line. Its presence means "ready".
//
// Every chain process ends itself: alarm(LIFETIME_S) (default 600) and
// PR_SET_PDEATHSIG(SIGKILL), so the chain falls apart from the top as soon as one link goes.
// This parent is a child subreaper, so the links orphaned on the way are reparented to it and
// reaped here. On SIGTERM, SIGINT, SIGHUP or its own SIGALRM it SIGKILLs exactly one process:
// the root, its own unreaped child (by the PID fork() returned, which cannot have been reused),
// then reaps every process that comes back to it until it has none and exits. It never signals
// anything else. It has PR_SET_PDEATHSIG(SIGTERM) so it cleans up when whoever started it dies.
//
// Build: cc -O2 -o chain chain.c
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_tool.h"

static volatile sig_atomic_t g_stop;

static void on_stop(int sig) {
  g_stop = sig;
}

// One link after another, in the same loop: a fork's child goes round again as the next link,
// so the chain's depth costs no stack. Each link reports its PID (or an errno) on `ready_w`.
static void links(long n, pid_t parent, int ready_w, unsigned lifetime) {
  for (long i = 0;; ++i) {
    // The parent's handlers are inherited: a link ends on the default action of any signal.
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the parent died before prctl: no one to tie to
    alarm(lifetime);
    int32_t record[2] = {(int32_t)getpid(), 0};
    if (i + 1 < n) {
      pid_t child = fork();
      if (child == 0) {
        parent = (pid_t)record[0];
        continue;
      }
      if (child < 0) record[1] = errno;
    }
    // 8 bytes: below PIPE_BUF, so each link's write is one piece.
    if (write(ready_w, record, sizeof record) != (ssize_t)sizeof record) _exit(1);
    break;
  }
  close(ready_w);
  for (;;) pause();
}

// Reads the N records within `timeout` seconds; 0 when all came and none failed.
static int collect(int ready_r, long n, int32_t* pids, unsigned timeout) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long got = 0; got < n;) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long left_ms = (long)timeout * 1000 -
                   ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
    if (left_ms <= 0 || g_stop) return 1;
    struct pollfd p = {ready_r, POLLIN, 0};
    if (poll(&p, 1, (int)left_ms) <= 0) continue;
    int32_t record[2];
    ssize_t r = read(ready_r, record, sizeof record);
    if (r != (ssize_t)sizeof record) return 1;
    if (record[1] != 0) {
      fprintf(stderr, "chain: fork at link %ld: %s\n", got + 1, strerror(record[1]));
      return 1;
    }
    pids[got++] = record[0];
  }
  return 0;
}

static void write_pidfile(const char* path, const int32_t* pids, long n) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  if (f == NULL) die(tmp);
  for (long i = 0; i < n; ++i) fprintf(f, "%d\n", pids[i]);
  if (fclose(f) != 0) die(tmp);
  if (rename(tmp, path) != 0) die(path);
}

int main(int argc, char** argv) {
  bench_tool_name = "chain";
  if (argc < 3) {
    fprintf(stderr, "usage: chain N PIDFILE [-l LIFETIME_S] [-t SETUP_TIMEOUT_S]\n");
    return 2;
  }
  long n = parse_long(argv[1], "N");
  const char* pidfile = argv[2];
  unsigned lifetime = 600, timeout = 120;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-l") == 0) {
      lifetime = (unsigned)parse_long(argv[i + 1], "-l");
    } else if (strcmp(argv[i], "-t") == 0) {
      timeout = (unsigned)parse_long(argv[i + 1], "-t");
    } else {
      fprintf(stderr, "chain: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (n < 1) {
    fprintf(stderr, "chain: N must be at least 1\n");
    return 2;
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sigaction(SIGALRM, &sa, NULL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  alarm(lifetime);

  int ready[2];
  if (pipe(ready) != 0) die("pipe");
  const pid_t self = getpid();
  const pid_t root = fork();
  if (root < 0) die("fork");
  if (root == 0) {
    close(ready[0]);
    links(n, self, ready[1], lifetime);
  }
  close(ready[1]);
  int32_t* pids = calloc((size_t)n, sizeof *pids);
  if (pids == NULL) die("calloc");
  int failed = collect(ready[0], n, pids, timeout);
  if (!failed) write_pidfile(pidfile, pids, n);

  sigset_t none;
  sigemptyset(&none);
  while (!failed && !g_stop) sigsuspend(&none);
  kill(root, SIGKILL);  // our own child, not yet reaped: its PID is still ours
  // The rest die of PR_SET_PDEATHSIG, one link after another, and come back to us (subreaper).
  while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
  }
  free(pids);
  return failed ? 1 : 0;
}
