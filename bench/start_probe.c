// How long a supervisor adds before a workload starts.
//   start_probe child                  prints CLOCK_MONOTONIC in ns at main() and exits
//   start_probe measure RUNS CMD...    runs CMD RUNS times (CMD must end up running
//                                      `start_probe child`); prints one line per run: the
//                                      microseconds from just before posix_spawn to the child's
//                                      main(). CLOCK_MONOTONIC is one clock for every process.
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "child") == 0) {
    printf("%lld\n", now_ns());
    return 0;
  }
  if (argc < 4 || strcmp(argv[1], "measure") != 0) {
    fprintf(stderr, "usage: start_probe child | start_probe measure RUNS CMD...\n");
    return 2;
  }
  const int runs = atoi(argv[2]);
  for (int i = 0; i < runs; ++i) {
    int out[2];
    if (pipe(out) != 0) return 3;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", 1 /* O_WRONLY */, 0);
    pid_t pid;
    const long long start = now_ns();
    if (posix_spawnp(&pid, argv[3], &actions, NULL, argv + 3, environ) != 0) return 3;
    close(out[1]);
    char buf[64] = {0};
    ssize_t got = 0, n;
    while ((n = read(out[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0) got += n;
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&actions);
    const long long child = atoll(buf);
    if (child <= 0) {
      fprintf(stderr, "start_probe: no time from the child (status %d)\n", status);
      return 1;
    }
    printf("%.1f\n", (double)(child - start) / 1000.0);
  }
  return 0;
}
