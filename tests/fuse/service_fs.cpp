// A FUSE file system that serves one executable named like a node service, and can stop
// answering: what a user can make of an unprivileged FUSE mount (issue 48 item 4).
//
//   service_fs MOUNTPOINT SOURCE STOP_FILE [ENTRY_TIMEOUT]
//     One file, /nvidia-smi: SOURCE's bytes (read at start), mode 0755, owned by root, in a root
//     directory of mode 0755 owned by root (what the trust rules ask of a service's file). While
//     STOP_FILE exists, every request (getattr, lookup, open, read, readdir) waits until it is
//     removed: a server that stopped answering. Attributes are never cached (timeout 0), so
//     each stat through the mount asks the server; names are for ENTRY_TIMEOUT seconds (an hour
//     by default), so a path that was looked up then resolves from the dentry cache without
//     asking (with 0, every lookup asks). Foreground,
//     multi-threaded; unmounts itself on SIGTERM, when its parent dies (PR_SET_PDEATHSIG) or
//     after kDaemonLifetimeSeconds.
#define FUSE_USE_VERSION 35
#include <fuse.h>
#include <fuse_lowlevel.h>  // fuse_session_exited

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "../integration/helper_process.h"

namespace {

using gpuclean::testing::helper::kLifetimeSeconds;

constexpr unsigned kDaemonLifetimeSeconds = kLifetimeSeconds + 30;
constexpr const char* kFilePath = "/nvidia-smi";

const char* g_stop_file = nullptr;
double g_entry_timeout = 3600;
std::string g_contents;  // written once before fuse_main, only read after

// Waits while the test says the server has stopped (or until the daemon is told to exit, so
// that a SIGTERM always gets the mount down).
void wait_while_stopped() {
  fuse_session* session = fuse_get_session(fuse_get_context()->fuse);
  while (::access(g_stop_file, F_OK) == 0 && fuse_session_exited(session) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info* /*fi*/) {
  wait_while_stopped();
  std::memset(st, 0, sizeof(*st));
  st->st_uid = 0;
  st->st_gid = 0;
  if (std::strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (std::strcmp(path, kFilePath) == 0) {
    st->st_mode = S_IFREG | 0755;
    st->st_nlink = 1;
    st->st_size = static_cast<off_t>(g_contents.size());
    return 0;
  }
  return -ENOENT;
}

int fs_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t /*offset*/,
               fuse_file_info* /*fi*/, fuse_readdir_flags /*flags*/) {
  wait_while_stopped();
  if (std::strcmp(path, "/") != 0) return -ENOENT;
  fill(buf, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, kFilePath + 1, nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  return 0;
}

int fs_open(const char* path, fuse_file_info* fi) {
  wait_while_stopped();
  if (std::strcmp(path, kFilePath) != 0) return -ENOENT;
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EACCES;
  return 0;
}

int fs_read(const char* path, char* buf, size_t size, off_t offset, fuse_file_info* /*fi*/) {
  wait_while_stopped();
  if (std::strcmp(path, kFilePath) != 0) return -ENOENT;
  if (offset < 0 || static_cast<std::size_t>(offset) >= g_contents.size()) return 0;
  const std::size_t n = std::min(size, g_contents.size() - static_cast<std::size_t>(offset));
  std::memcpy(buf, g_contents.data() + offset, n);
  return static_cast<int>(n);
}

void* fs_init(fuse_conn_info* /*conn*/, fuse_config* cfg) {
  // No attribute cached: a stat that syncs (stat(2), as opposed to statx's AT_STATX_DONT_SYNC)
  // is a request to this server. Names stay cached: a lookup the kernel can answer from its
  // dentry cache does not ask (what a system directory on a local disk looks like).
  cfg->attr_timeout = 0;
  cfg->entry_timeout = g_entry_timeout;
  cfg->negative_timeout = 0;
  return nullptr;
}

void on_lifetime_alarm(int) {
  ::kill(::getpid(), SIGTERM);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    (void)std::fprintf(stderr, "usage: service_fs MOUNTPOINT SOURCE STOP_FILE [ENTRY_TIMEOUT]\n");
    return 2;
  }
  if (argc == 5) g_entry_timeout = std::atof(argv[4]);
  std::ifstream source(argv[2], std::ios::binary);
  g_contents.assign(std::istreambuf_iterator<char>(source), std::istreambuf_iterator<char>());
  if (g_contents.empty()) {
    std::perror(argv[2]);
    return 3;
  }
  g_stop_file = argv[3];
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::signal(SIGALRM, on_lifetime_alarm) == SIG_ERR) return 3;
  ::alarm(kDaemonLifetimeSeconds);

  fuse_operations ops{};
  ops.getattr = fs_getattr;
  ops.readdir = fs_readdir;
  ops.open = fs_open;
  ops.read = fs_read;
  ops.init = fs_init;
  // As mm_lock_victim's serve: foreground, multi-threaded, recognisable in mountinfo.
  const char* args[] = {
      argv[0], "-f", "-o",
      "fsname=gpuclean-service-fs,subtype=service_fs,max_threads=16,max_idle_threads=4", argv[1]};
  return fuse_main(5, const_cast<char**>(args), &ops, nullptr);
}
