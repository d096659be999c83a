// Test support: a process whose mmap lock is held, so that reading its /proc/PID/cmdline and
// environ blocks in the kernel, while /proc/PID/stat, status and fd still answer — what a process
// stuck on a hung network or FUSE file system looks like to a tool scanning /proc. (On 6.18
// maps answers too; smaps and smaps_rollup block.)
//
// MmLockVictim starts tests/fuse/mm_lock_victim twice: `serve` (a FUSE daemon whose reads wait
// until released) mounted on a temp dir, and `victim`, which holds a given file (the test's fake
// GPU device) and has threads stuck on a page of that mount (see mm_lock_victim.cpp). The
// destructor always releases, kills and reaps both, and unmounts — also when the test failed
// half way. Only the two processes it started are ever signalled, through pidfds opened before
// they could have been reaped.
//
//   std::string why;
//   if (!MmLockVictim::supported(&why)) GTEST_SKIP() << why;
//   MmLockVictim victim(held_file);
//   ASSERT_TRUE(victim.ready()) << victim.error();
//   … gpuclean sees victim.pid() holding held_file; its cmdline cannot be read …
//
// Construct it on the test's main thread: both children die with the thread that started them
// (PR_SET_PDEATHSIG), so that a crashed test leaves no mount behind. Never read the victim's
// cmdline or environ from the test process itself before release(): that read would hang the
// test (use `timeout 2 cat`, as mm_lock_victim_test.cpp does).
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../integration/spawn.h"

#ifndef MM_LOCK_VICTIM
#error "MM_LOCK_VICTIM must name the mm_lock_victim binary (see tests/fuse/CMakeLists.txt)"
#endif

namespace gpuclean::testing {
namespace fuse_detail {

using std::chrono::milliseconds;
// Deadlines: for a process to exit after each teardown step, for fusermount3, for the mount to
// come up, for the victim to report its lock held.
constexpr milliseconds kNoWait{0};
constexpr milliseconds kExitWait{5000};
constexpr milliseconds kCommandWait{10000};
constexpr milliseconds kMountWait{10000};
// The victim gives up by itself after 20 s (exit code 4) when its lock never looks held.
constexpr milliseconds kVictimWait{30000};

// /proc/self/mountinfo writes space, tab, newline and backslash in paths as \ooo.
inline std::string unescape_mount_path(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string octal(field.substr(i + 1, 3));
      if (octal.find_first_not_of("01234567") == std::string::npos) {
        out.push_back(static_cast<char>(std::stoi(octal, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// Whether anything is mounted on mount_point, in this process's mount namespace.
inline bool mounted(const std::string& mount_point) {
  std::istringstream in(slurp("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point;
    if (fields >> id >> parent >> device >> root >> point &&
        unescape_mount_path(point) == mount_point) {
      return true;
    }
  }
  return false;
}

// The path of a program on PATH, or "": spawn() and run_command() do not search PATH.
inline std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// A child process the test started. The pidfd is opened right after spawn, while the child
// cannot have been reaped (only this class reaps it), so a signal can only ever reach it — never
// a process that reused its PID.
class OwnedChild {
 public:
  explicit OwnedChild(const std::vector<std::string>& argv) : pid_(spawn(argv)) {
    if (pid_ > 0) pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  }
  ~OwnedChild() {
    if (!reaped_) {
      signal(SIGKILL);
      reap_within(kExitWait);
    }
    if (pidfd_ >= 0) ::close(pidfd_);
  }
  OwnedChild(const OwnedChild&) = delete;
  OwnedChild& operator=(const OwnedChild&) = delete;

  [[nodiscard]] bool started() const { return pid_ > 0 && pidfd_ >= 0; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool reaped() const { return reaped_; }
  [[nodiscard]] int exit_code() const { return exit_code_; }

  void signal(int sig) const {
    if (pidfd_ >= 0 && !reaped_) ::syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0);
  }

  // Reaps the child if it has exited, or does within `deadline`. The pidfd turns readable only
  // once every thread is gone: a process with a thread stuck in an uninterruptible wait stays
  // unreaped (and waitpid would block on it).
  bool reap_within(std::chrono::milliseconds deadline) {
    if (reaped_ || pid_ <= 0) return true;
    if (pidfd_ < 0) return false;
    pollfd p{pidfd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(deadline.count())) != 1) return false;
    exit_code_ = reap(pid_);
    reaped_ = true;
    return true;
  }

 private:
  pid_t pid_;
  int pidfd_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
};

}  // namespace fuse_detail

class MmLockVictim {
 public:
  // Put on the victim's command line after its own arguments, so a listing can be recognised.
  static constexpr const char* kMarker = "gpuclean-mm-lock-victim";
  static constexpr off_t kBlobSize = 1 << 20;  // mm_lock_victim.cpp's /blob

  // Mounts the FUSE file system and starts the victim holding held_file (opened O_RDWR); extra
  // arguments go on its command line. Never throws: check ready() and error().
  explicit MmLockVictim(const std::string& held_file,
                        const std::vector<std::string>& marker = {kMarker}) {
    if (mount()) start_victim(held_file, marker);
  }
  ~MmLockVictim() { teardown(); }
  MmLockVictim(const MmLockVictim&) = delete;
  MmLockVictim& operator=(const MmLockVictim&) = delete;

  // True when the victim runs with its mmap lock held (until release()).
  [[nodiscard]] bool ready() const { return error_.empty() && pid_ > 0; }
  [[nodiscard]] const std::string& error() const { return error_; }
  // The victim's PID as it reported it (readlink /proc/self).
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] pid_t daemon_pid() const { return daemon_ ? daemon_->pid() : -1; }
  [[nodiscard]] const std::string& mount_point() const { return mount_point_; }
  [[nodiscard]] std::string fuse_file() const { return mount_point_ + "/blob"; }

  // Lets the daemon answer its reads: the victim's threads get their page and the lock is free
  // again (within milliseconds). Idempotent.
  void release() const { std::ofstream(release_file_) << ""; }

  // Whether a FUSE file system can be mounted here: mm_lock_victim built, /dev/fuse usable, and
  // a trial mount (the real daemon, without a victim) comes up. The trial runs once per process;
  // `why` gets the reason when not.
  static bool supported(std::string* why) {
    static const std::string reason = probe_support();
    if (why != nullptr) *why = reason;
    return reason.empty();
  }

 private:
  struct MountOnly {};
  explicit MmLockVictim(MountOnly /*tag*/) { mount(); }

  static std::string probe_support() {
    if (::access(MM_LOCK_VICTIM, X_OK) != 0) {
      return std::string(MM_LOCK_VICTIM) + ": " + std::strerror(errno);
    }
    const int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd < 0) return std::string("cannot open /dev/fuse: ") + std::strerror(errno);
    ::close(fd);
    const MmLockVictim trial{MountOnly{}};
    if (!trial.error_.empty()) return "cannot mount a FUSE file system: " + trial.error_;
    return "";
  }

  // Starts the daemon and waits until /blob answers through the mount.
  bool mount() {
    std::error_code ec;
    std::filesystem::create_directory(mount_point_, ec);
    if (ec) return fail("cannot create " + mount_point_ + ": " + ec.message());
    daemon_.emplace(std::vector<std::string>{MM_LOCK_VICTIM, "serve", mount_point_, release_file_});
    if (!daemon_->started()) return fail("cannot start " + std::string(MM_LOCK_VICTIM) + " serve");
    bool live = false;
    wait_until(
        [&] {
          // Exited (libfuse said why on stderr): no point waiting on.
          if (daemon_->reap_within(fuse_detail::kNoWait)) return true;
          // Only once mounted: before, stat would see the empty directory.
          struct stat st {};
          live = fuse_detail::mounted(mount_point_) && ::stat(fuse_file().c_str(), &st) == 0 &&
                 st.st_size == kBlobSize;
          return live;
        },
        fuse_detail::kMountWait);
    if (live) return true;
    if (daemon_->reaped()) {
      return fail("the FUSE daemon exited with code " + std::to_string(daemon_->exit_code()) +
                  " before its mount came up (its stderr says why)");
    }
    return fail("the FUSE mount on " + mount_point_ + " did not come up within 10 s");
  }

  bool start_victim(const std::string& held_file, const std::vector<std::string>& marker) {
    std::vector<std::string> argv = {MM_LOCK_VICTIM, "victim", fuse_file(), held_file, ready_file_};
    argv.insert(argv.end(), marker.begin(), marker.end());
    victim_.emplace(argv);
    if (!victim_->started()) return fail("cannot start " + std::string(MM_LOCK_VICTIM) + " victim");
    wait_until(
        [&] {
          return std::filesystem::exists(ready_file_) || victim_->reap_within(fuse_detail::kNoWait);
        },
        fuse_detail::kVictimWait);
    if (!std::filesystem::exists(ready_file_)) {
      if (victim_->reaped()) {
        return fail("the victim exited with code " + std::to_string(victim_->exit_code()) +
                    " before its mmap lock was held (its stderr says why)");
      }
      return fail("the victim did not report its mmap lock held within 30 s");
    }
    pid_ = static_cast<pid_t>(std::atoi(slurp(ready_file_).c_str()));
    if (pid_ <= 0) return fail("unreadable ready file " + ready_file_);
    return true;
  }

  bool fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }

  void unmount() const {
    if (!fuse_detail::mounted(mount_point_)) return;
    const std::string fusermount = fuse_detail::find_program("fusermount3");
    if (!fusermount.empty()) {
      run_command({fusermount, "-u", mount_point_}, fuse_detail::kCommandWait);
    }
    // Detaching works whatever state the connection is in (it needs CAP_SYS_ADMIN; without it
    // fusermount3 -z does the same).
    if (fuse_detail::mounted(mount_point_)) ::umount2(mount_point_.c_str(), MNT_DETACH);
    if (!fusermount.empty() && fuse_detail::mounted(mount_point_)) {
      run_command({fusermount, "-u", "-z", mount_point_}, fuse_detail::kCommandWait);
    }
  }

  // SIGTERM makes fuse_main leave its loop and unmount; its blocked reads then answer too.
  void end_daemon(std::chrono::milliseconds grace) {
    if (!daemon_ || daemon_->reap_within(grace)) return;
    daemon_->signal(SIGTERM);
    if (daemon_->reap_within(fuse_detail::kExitWait)) return;
    daemon_->signal(SIGKILL);
    daemon_->reap_within(fuse_detail::kExitWait);
  }

  // Release first: a victim thread waits for the page uninterruptibly (filemap_fault's folio
  // lock), so SIGKILL alone does not end it while the daemon withholds the page.
  void teardown() {
    release();
    if (victim_ && !victim_->reaped()) {
      victim_->signal(SIGKILL);
      if (!victim_->reap_within(fuse_detail::kExitWait)) {
        // The daemon did not answer: ending it aborts the FUSE connection, which fails the wait.
        end_daemon(fuse_detail::kNoWait);
        victim_->reap_within(fuse_detail::kExitWait);
      }
    }
    unmount();  // the daemon sees its device closed and exits by itself
    end_daemon(fuse_detail::kExitWait);
    unmount();  // a daemon that had to be killed leaves its mount behind, disconnected
    if (victim_ && !victim_->reaped()) {
      ADD_FAILURE() << "mm_lock_victim victim " << victim_->pid() << " did not exit";
    }
    if (daemon_ && !daemon_->reaped()) {
      ADD_FAILURE() << "mm_lock_victim serve " << daemon_->pid() << " did not exit";
    }
    if (fuse_detail::mounted(mount_point_)) {
      ADD_FAILURE() << mount_point_ << " is still mounted";
      // Keep the directory (leak its owner): removing it would walk into the mount.
      static_cast<void>(dir_.release());
    }
  }

  // Declared first: the paths below are built from it, and it goes last, after the unmount.
  std::unique_ptr<TempDir> dir_ = std::make_unique<TempDir>();
  std::string mount_point_ = dir_->path() + "/mnt";
  std::string release_file_ = dir_->path() + "/release";
  std::string ready_file_ = dir_->path() + "/ready";
  std::optional<fuse_detail::OwnedChild> daemon_;
  std::optional<fuse_detail::OwnedChild> victim_;
  pid_t pid_ = -1;
  std::string error_;
};

}  // namespace gpuclean::testing
