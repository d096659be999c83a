// crowd.c: start a crowd of idle processes with busy fd tables, for benchmarking /proc scans.
//
//   crowd TARGET PIDFILE [-n PROCS] [-f FDS] [-h HOLDERS] [-z ZOMBIE_LED] [-l LIFETIME_S]
//                        [-t SETUP_TIMEOUT_S]
//
// Starts PROCS processes (default 2000). Each holds FDS open descriptors in all (default 50,
// at least 7): 0/1/2 and one more on /dev/null, one pipe (both ends), and then dup()s of
// /dev/null and of the pipe ends plus opens of a few temporary regular files. HOLDERS of them
// (default 40, spread evenly) have one of those FDS descriptors open on TARGET instead.
// ZOMBIE_LED of the holders (default 10) are "zombie-led": the main thread starts a second
// thread and calls pthread_exit(), so `ps` shows state Zl, /proc/PID/fd is empty and the
// descriptors are visible only under /proc/PID/task/TID/fd.
//
// Once every process is set up (a zombie-led one only when /proc/PID/stat of its leader really
// shows state Z), the crowd writes, each atomically (write + rename):
//   PIDFILE.all  every crowd process except this parent, one PID a line
//   PIDFILE.zl   the zombie-led holders, one PID a line
//   PIDFILE      the holders, one PID a line (written last: its presence means "ready")
//
// Every crowd process ends itself: alarm(LIFETIME_S) (default 600) in each process and
// PR_SET_PDEATHSIG(SIGKILL) in each child (per thread). The parent has PR_SET_PDEATHSIG(SIGTERM)
// so it cleans up when whoever started it dies. On SIGTERM, SIGINT, SIGHUP or its own SIGALRM
// the parent SIGKILLs exactly the children it forked (by the PIDs fork() returned; it never
// reaps one before that, so none of those PIDs can have been reused), reaps them, removes its
// temporary files and exits. It never signals anything else.
//
// Build: cc -O2 -pthread -o crowd crowd.c
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_tool.h"

#define NTMP 4                        // temporary regular files the crowd opens
#define ZL_STACK (64 * 1024)          // stack of the zombie-led groups' second thread
#define MIN_FDS 7                     // 0,1,2 + /dev/null + pipe pair + the TARGET fd

struct ready {
  int32_t pid;
  int32_t err;  // 0: set up; otherwise an errno value
};

static struct {
  const char* target;
  const char* pidfile;
  long n, f, h, z;
  unsigned lifetime;
  unsigned setup_timeout;
} opt = {NULL, NULL, 2000, 50, 40, 10, 600, 120};

static volatile sig_atomic_t g_stop;
static int g_devnull = -1;
static int g_ready_r = -1, g_ready_w = -1;
static char g_tmpdir[PATH_MAX];
static char g_tmpfiles[NTMP][PATH_MAX + 16];

static void on_stop(int sig) { g_stop = sig; }

static void usage(void) {
  fprintf(stderr,
          "usage: crowd TARGET PIDFILE [-n PROCS] [-f FDS] [-h HOLDERS] [-z ZOMBIE_LED]\n"
          "             [-l LIFETIME_S] [-t SETUP_TIMEOUT_S]\n");
  exit(2);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long read_long_file(const char* path) {
  FILE* f = fopen(path, "r");
  long v = -1;
  if (f != NULL) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

// Threads in the system now: the 4th field of /proc/loadavg is "running/total".
static long threads_now(void) {
  FILE* f = fopen("/proc/loadavg", "r");
  long running = 0, total = -1;
  if (f != NULL) {
    if (fscanf(f, "%*s %*s %*s %ld/%ld", &running, &total) != 2) total = -1;
    fclose(f);
  }
  return total;
}

// Makes sure the crowd fits: fds per process, processes per user, PIDs and threads in total.
static void check_limits(void) {
  struct rlimit rl;
  const rlim_t want_nofile = (rlim_t)opt.f + 16;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < want_nofile) {
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want_nofile) {
      fprintf(stderr, "crowd: RLIMIT_NOFILE hard limit %llu < %llu needed\n",
              (unsigned long long)rl.rlim_max, (unsigned long long)want_nofile);
      exit(2);
    }
    rl.rlim_cur = want_nofile;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) die("setrlimit(RLIMIT_NOFILE)");
  }
  const long extra = opt.n + opt.z + 1;  // processes + the zombie-led groups' second threads
  const long in_use = threads_now();
  if (geteuid() != 0 && getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const rlim_t want = (rlim_t)(extra + (in_use > 0 ? in_use : 0) + 64);
    if (rl.rlim_cur < want) {
      if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        fprintf(stderr, "crowd: RLIMIT_NPROC (ulimit -u) %llu too small for %ld more tasks\n",
                (unsigned long long)rl.rlim_max, extra);
        exit(2);
      }
      rl.rlim_cur = want;
      if (setrlimit(RLIMIT_NPROC, &rl) != 0) die("setrlimit(RLIMIT_NPROC)");
    }
  }
  const long pid_max = read_long_file("/proc/sys/kernel/pid_max");
  const long threads_max = read_long_file("/proc/sys/kernel/threads-max");
  if (in_use > 0 && pid_max > 0 && in_use + extra + 256 > pid_max) {
    fprintf(stderr, "crowd: pid_max %ld too small: %ld tasks now + %ld more\n", pid_max, in_use,
            extra);
    exit(2);
  }
  if (in_use > 0 && threads_max > 0 && in_use + extra + 256 > threads_max) {
    fprintf(stderr, "crowd: threads-max %ld too small: %ld tasks now + %ld more\n", threads_max,
            in_use, extra);
    exit(2);
  }
}

// ---------------------------------------------------------------------------------------------
// Child side. Only async-signal-safe-ish calls, no heap: the child is a fork of a 1-thread parent.

static void child_report(int err) {
  struct ready r = {(int32_t)getpid(), (int32_t)err};
  ssize_t ignored = write(g_ready_w, &r, sizeof r);  // <= PIPE_BUF: atomic
  (void)ignored;
  close(g_ready_w);
  g_ready_w = -1;
}

static void child_fail(int err) {
  child_report(err != 0 ? err : EIO);
  _exit(3);
}

static int leader_is_zombie(const char* stat_path) {
  char buf[1024];
  const int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* close_paren = strrchr(buf, ')');  // comm may itself contain ')'
  return close_paren != NULL && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

static void* zombie_led_thread(void* arg) {
  (void)arg;
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // per thread: set it for this one too
  char stat_path[64];
  snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", (int)getpid());
  int err = ETIMEDOUT;
  for (int i = 0; i < 20000; ++i) {  // ~20 s at most
    if (leader_is_zombie(stat_path)) {
      err = 0;
      break;
    }
    usleep(1000);
  }
  if (err != 0) child_fail(err);
  child_report(0);
  for (;;) pause();
  return NULL;
}

static void child_main(int is_holder, int is_zombie_led, pid_t parent, const sigset_t* orig) {
  static const int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGALRM};
  for (size_t i = 0; i < sizeof kStopSignals / sizeof kStopSignals[0]; ++i) {
    signal(kStopSignals[i], SIG_DFL);
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(errno);
  if (getppid() != parent) _exit(0);  // the parent died before prctl took effect
  sigprocmask(SIG_SETMASK, orig, NULL);
  alarm(opt.lifetime);  // alarms are not inherited across fork
  close(g_ready_r);

  for (int fd = 0; fd <= 2; ++fd) {
    if (dup2(g_devnull, fd) < 0) child_fail(errno);
  }
  long have = 4;  // 0, 1, 2 and g_devnull (the ready pipe's write end is closed after reporting)
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) child_fail(errno);
  have += 2;

  const long target_at = opt.f / 2 > have ? opt.f / 2 : have;  // somewhere in the middle
  int target_done = !is_holder;
  long k = 0;
  while (have < opt.f) {
    int fd;
    if (!target_done && have >= target_at) {
      fd = open(opt.target, O_RDONLY);
      target_done = 1;
    } else {
      switch (k % 4) {
        case 0: fd = dup(g_devnull); break;
        case 1: fd = dup(pipe_fds[0]); break;
        case 2: fd = open(g_tmpfiles[(k / 4) % NTMP], O_RDONLY); break;
        default: fd = dup(pipe_fds[1]); break;
      }
      ++k;
    }
    if (fd < 0) child_fail(errno);
    ++have;
  }
  if (!target_done) child_fail(EINVAL);

  if (is_zombie_led) {
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, ZL_STACK);
    const int err = pthread_create(&thread, &attr, zombie_led_thread, NULL);
    if (err != 0) child_fail(err);
    pthread_exit(NULL);  // the leader becomes a zombie; the group lives on in the thread
  }
  child_report(0);
  for (;;) pause();
}

// ---------------------------------------------------------------------------------------------
// Parent side.

static void make_tmpfiles(void) {
  if (snprintf(g_tmpdir, sizeof g_tmpdir, "%s.files.XXXXXX", opt.pidfile) >= (int)sizeof g_tmpdir) {
    errno = ENAMETOOLONG;
    die("temporary directory name");
  }
  if (mkdtemp(g_tmpdir) == NULL) die("mkdtemp");
  for (int i = 0; i < NTMP; ++i) {
    snprintf(g_tmpfiles[i], sizeof g_tmpfiles[i], "%s/file%d", g_tmpdir, i);  // fits: +16
    const int fd = open(g_tmpfiles[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) die(g_tmpfiles[i]);
    static const char text[] = "crowd temporary file\n";
    if (write(fd, text, sizeof text - 1) < 0) die("write");
    close(fd);
  }
}

static void remove_tmpfiles(void) {
  if (g_tmpdir[0] == '\0') return;
  for (int i = 0; i < NTMP; ++i) {
    if (g_tmpfiles[i][0] != '\0') unlink(g_tmpfiles[i]);
  }
  rmdir(g_tmpdir);
}

// Writes the PIDs (one a line) to PATH through a temporary file and rename().
static int write_pid_file(const char* path, const pid_t* pids, long count) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid()) >= (int)sizeof tmp) return -1;
  FILE* f = fopen(tmp, "w");
  if (f == NULL) return -1;
  for (long i = 0; i < count; ++i) fprintf(f, "%d\n", (int)pids[i]);
  if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
    fclose(f);
    unlink(tmp);
    return -1;
  }
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

static void close_inherited_fds(void) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
  DIR* dir = opendir("/proc/self/fd");
  if (dir == NULL) {
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    return;
  }
  int fds[1024];
  int count = 0;
  const int own = dirfd(dir);
  struct dirent* e;
  while ((e = readdir(dir)) != NULL && count < 1024) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    const int fd = atoi(e->d_name);
    if (fd > 2 && fd != own) fds[count++] = fd;
  }
  closedir(dir);
  for (int i = 0; i < count; ++i) close(fds[i]);
}

static int path_with_suffix(char* out, size_t size, const char* suffix) {
  return snprintf(out, size, "%s%s", opt.pidfile, suffix) < (int)size ? 0 : -1;
}

int main(int argc, char** argv) {
  bench_tool_name = "crowd";
  if (argc < 3) usage();
  opt.target = argv[1];
  opt.pidfile = argv[2];
  optind = 3;
  int c;
  while ((c = getopt(argc, argv, "n:f:h:z:l:t:")) != -1) {
    switch (c) {
      case 'n': opt.n = parse_long(optarg, "-n"); break;
      case 'f': opt.f = parse_long(optarg, "-f"); break;
      case 'h': opt.h = parse_long(optarg, "-h"); break;
      case 'z': opt.z = parse_long(optarg, "-z"); break;
      case 'l': opt.lifetime = (unsigned)parse_long(optarg, "-l"); break;
      case 't': opt.setup_timeout = (unsigned)parse_long(optarg, "-t"); break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (opt.n < 1 || opt.h > opt.n || opt.z > opt.h || opt.f < MIN_FDS || opt.f > 1000000 ||
      opt.lifetime < 1 || opt.setup_timeout < 1) {
    fprintf(stderr, "crowd: need 1 <= n, h <= n, z <= h, f >= %d, lifetime >= 1\n", MIN_FDS);
    return 2;
  }
  // Whatever the caller left open (a shell's or a test harness's descriptors) must not end up
  // in every crowd process: keep 0, 1 and 2 only.
  close_inherited_fds();
  {
    const int fd = open(opt.target, O_RDONLY | O_CLOEXEC);  // fail early, in the parent
    if (fd < 0) die(opt.target);
    close(fd);
  }
  check_limits();

  // Stop signals stay blocked except inside ppoll()/sigsuspend(), so no stop is ever lost and
  // a child never runs the parent's handler (it resets them before unblocking).
  sigset_t stop_set, orig;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGHUP);
  sigaddset(&stop_set, SIGALRM);
  sigprocmask(SIG_BLOCK, &stop_set, &orig);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sigaction(SIGALRM, &sa, NULL);
  sigset_t wait_mask = orig;
  sigdelset(&wait_mask, SIGTERM);
  sigdelset(&wait_mask, SIGINT);
  sigdelset(&wait_mask, SIGHUP);
  sigdelset(&wait_mask, SIGALRM);

  const pid_t self = getpid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // whoever started us died: clean up
  alarm(opt.lifetime);

  g_devnull = open("/dev/null", O_RDWR);
  if (g_devnull < 0) die("/dev/null");
  make_tmpfiles();
  int ready_pipe[2];
  if (pipe(ready_pipe) != 0) die("pipe");
  g_ready_r = ready_pipe[0];
  g_ready_w = ready_pipe[1];

  pid_t* pids = calloc((size_t)opt.n, sizeof *pids);
  char* role = calloc((size_t)opt.n, 1);  // 0 filler, 1 holder, 2 zombie-led holder
  pid_t* holders = calloc((size_t)opt.h + 1, sizeof *holders);
  pid_t* zombie_led = calloc((size_t)opt.z + 1, sizeof *zombie_led);
  if (pids == NULL || role == NULL || holders == NULL || zombie_led == NULL) die("calloc");
  // Spread the holders evenly over the crowd and the zombie-led ones evenly over the holders.
  for (long j = 0; j < opt.h; ++j) role[(j * opt.n) / opt.h + (opt.n / opt.h) / 2] = 1;
  for (long j = 0; j < opt.z; ++j) {
    const long holder = (j * opt.h) / opt.z + (opt.h / opt.z) / 2;
    long seen = 0;
    for (long i = 0; i < opt.n; ++i) {
      if (role[i] != 0 && seen++ == holder) {
        role[i] = 2;
        break;
      }
    }
  }

  const double started = now_s();
  int failed = 0;
  long forked = 0;
  for (long i = 0; i < opt.n && !g_stop; ++i) {
    const pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "crowd: fork #%ld: %s\n", i, strerror(errno));
      failed = 1;
      break;
    }
    if (pid == 0) child_main(role[i] != 0, role[i] == 2, self, &orig);
    pids[i] = pid;
    forked = i + 1;
  }
  close(g_ready_w);
  g_ready_w = -1;

  // Wait for every child's report; a child that dies or reports an error aborts the crowd.
  long ready = 0;
  char buf[4096];
  size_t have = 0;
  const double deadline = started + opt.setup_timeout;
  while (!failed && !g_stop && ready < forked) {
    const double left = deadline - now_s();
    if (left <= 0) {
      fprintf(stderr, "crowd: only %ld of %ld processes ready after %u s\n", ready, forked,
              opt.setup_timeout);
      failed = 1;
      break;
    }
    struct pollfd pfd = {g_ready_r, POLLIN, 0};
    const double slice = left < 0.2 ? left : 0.2;
    struct timespec ts = {0, (long)(slice * 1e9)};
    const int pr = ppoll(&pfd, 1, &ts, &wait_mask);
    if (pr < 0 && errno != EINTR) die("ppoll");
    if (pr > 0) {
      const ssize_t n = read(g_ready_r, buf + have, sizeof buf - have);
      if (n > 0) {
        have += (size_t)n;
        size_t off = 0;
        for (; off + sizeof(struct ready) <= have; off += sizeof(struct ready)) {
          struct ready r;
          memcpy(&r, buf + off, sizeof r);
          if (r.err != 0) {
            fprintf(stderr, "crowd: process %d failed to set up: %s\n", (int)r.pid,
                    strerror(r.err));
            failed = 1;
          }
          ++ready;
        }
        memmove(buf, buf + off, have - off);
        have -= off;
      }
    }
    // A child that died during set-up (it should never die): reap it, mark it, give up.
    int status;
    pid_t dead;
    while ((dead = waitpid(-1, &status, WNOHANG)) > 0) {
      for (long i = 0; i < forked; ++i) {
        if (pids[i] == dead) pids[i] = 0;
      }
      fprintf(stderr, "crowd: process %d ended during set-up (status 0x%x)\n", (int)dead, status);
      failed = 1;
    }
  }

  if (!failed && !g_stop) {
    long nh = 0, nz = 0;
    for (long i = 0; i < forked; ++i) {
      if (role[i] != 0) holders[nh++] = pids[i];
      if (role[i] == 2) zombie_led[nz++] = pids[i];
    }
    char path[PATH_MAX];
    if (path_with_suffix(path, sizeof path, ".all") != 0 || write_pid_file(path, pids, forked) != 0 ||
        path_with_suffix(path, sizeof path, ".zl") != 0 ||
        write_pid_file(path, zombie_led, nz) != 0 || write_pid_file(opt.pidfile, holders, nh) != 0) {
      fprintf(stderr, "crowd: writing the PID files: %s\n", strerror(errno));
      failed = 1;
    } else {
      fprintf(stderr, "crowd: %ld processes ready (%ld holders, %ld zombie-led) in %.2f s\n",
              forked, nh, nz, now_s() - started);
      fflush(stderr);
    }
  }

  if (!failed) {
    while (!g_stop) sigsuspend(&wait_mask);
  }

  // Stop: SIGKILL exactly the children this process forked, then reap them.
  long killed = 0;
  for (long i = 0; i < forked; ++i) {
    if (pids[i] > 0 && kill(pids[i], SIGKILL) == 0) ++killed;
  }
  for (long i = 0; i < forked; ++i) {
    if (pids[i] <= 0) continue;
    while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {
    }
  }
  remove_tmpfiles();
  if (g_stop) {
    fprintf(stderr, "crowd: stopped by signal %d; killed and reaped %ld processes\n", (int)g_stop,
            killed);
  }
  return failed ? 1 : 0;
}
