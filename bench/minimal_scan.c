// minimal_scan.c: the floor a complete "who holds this file" /proc scan is measured against.
//
//   minimal_scan TARGET
//
// Single-threaded: readdir /proc; for each numeric entry, readdir /proc/PID/fd and readlink
// every entry, comparing the link text with TARGET (made absolute with realpath first). When
// the leader's fd directory is empty (kernel thread, or a zombie leader whose other threads
// still hold the group's files), fall back to /proc/PID/task/TID/fd of the first thread whose
// fd directory is not empty. No maps, no cwd/root/exe, no details: prints the PIDs holding
// TARGET, one a line. Exit status 0 when some process holds TARGET, 1 when none does.
//
// Build: cc -O2 -o minimal_scan minimal_scan.c
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_proc = -1;
static char g_target[PATH_MAX];
static size_t g_target_len;

// Scans the fd directory at PATH (relative to /proc). Returns 1 when an entry links to TARGET;
// *entries gets the number of descriptors seen.
static int scan_fd_dir(const char* path, long* entries) {
  *entries = 0;
  const int fd = openat(g_proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;  // vanished or denied
  DIR* dir = fdopendir(fd);
  if (dir == NULL) {
    close(fd);
    return 0;
  }
  int found = 0;
  char link[PATH_MAX];
  struct dirent* e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    ++*entries;
    const ssize_t n = readlinkat(fd, e->d_name, link, sizeof link);
    if (n == (ssize_t)g_target_len && memcmp(link, g_target, g_target_len) == 0) found = 1;
  }
  closedir(dir);
  return found;
}

static int scan_threads(const char* pid) {
  char path[NAME_MAX + 16];
  snprintf(path, sizeof path, "%s/task", pid);
  const int fd = openat(g_proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  DIR* dir = fdopendir(fd);
  if (dir == NULL) {
    close(fd);
    return 0;
  }
  int found = 0;
  struct dirent* e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char fd_path[2 * NAME_MAX + 16];
    snprintf(fd_path, sizeof fd_path, "%s/task/%s/fd", pid, e->d_name);
    long entries = 0;
    found = scan_fd_dir(fd_path, &entries);
    if (entries > 0) break;  // the fd table is shared by the group: one live thread tells all
  }
  closedir(dir);
  return found;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: minimal_scan TARGET\n");
    return 2;
  }
  if (realpath(argv[1], g_target) == NULL) {
    if (strlen(argv[1]) >= sizeof g_target) return 2;
    strcpy(g_target, argv[1]);
  }
  g_target_len = strlen(g_target);
  g_proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* proc = opendir("/proc");
  if (g_proc < 0 || proc == NULL) {
    perror("/proc");
    return 2;
  }
  int any = 0;
  struct dirent* e;
  while ((e = readdir(proc)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[NAME_MAX + 16];
    snprintf(path, sizeof path, "%s/fd", e->d_name);
    long entries = 0;
    int found = scan_fd_dir(path, &entries);
    if (entries == 0) found = scan_threads(e->d_name);
    if (found) {
      printf("%s\n", e->d_name);
      any = 1;
    }
  }
  closedir(proc);
  return any ? 0 : 1;
}
