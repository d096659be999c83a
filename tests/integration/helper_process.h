// What the test helper processes (holder_helper, heir_helper) share: reporting PIDs to the
// test through a ready file, holding a file, and ending themselves after a lifetime so that a
// crashed test leaves nothing behind. Header-only: each helper is one small program.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace gpuclean::testing::helper {

constexpr unsigned kLifetimeSeconds = 90;

// Writes "PIDS\n" to READY_FILE atomically (temp file + rename): the test never reads half.
inline void report(const char* ready_file, const std::string& pids) {
  const std::string tmp = std::string(ready_file) + ".tmp" + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) _exit(3);
  const bool written = std::fprintf(f, "%s\n", pids.c_str()) > 0;
  if (std::fclose(f) != 0 || !written) _exit(3);
  if (::rename(tmp.c_str(), ready_file) != 0) _exit(3);
}

inline int open_or_die(const char* file) {
  const int fd = ::open(file, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::perror(file);
    _exit(3);
  }
  return fd;
}

// Alarms are not inherited across fork: every process arms its own.
[[noreturn]] inline void wait_forever() {
  ::alarm(kLifetimeSeconds);
  for (;;) ::pause();
}

// Reads one "PID " a child wrote (terminated by a space); exits on a broken pipe.
inline std::string read_pid(int fd) {
  std::string pid;
  char c = 0;
  for (;;) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    if (c == ' ') return pid;
    pid.push_back(c);
  }
}

}  // namespace gpuclean::testing::helper
