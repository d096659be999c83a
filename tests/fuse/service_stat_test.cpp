// Issue 48 item 4: a user's file system cannot hang root's gpuclean. A program named
// `nvidia-smi`, run from a FUSE mount (service_fs.cpp: a server the test can stop), holds the
// test's temp device file; then the server stops answering. Recognising node services used to
// stat /proc/PID/exe (following it into the mount) with no deadline: `check`, `status`, `kill`,
// the Epilog, metrics and the recorder waited in D for as long as the server stayed silent
// (a FUSE request the server has read is waited out even through SIGKILL).
// Now a path outside the system directories is decided from the link's text, without a stat;
// the stats that remain ask the kernel's caches (statx AT_STATX_DONT_SYNC, openat2
// RESOLVE_CACHED) and run under the /proc read deadline.
//
// Seen failing on the old code (src/procfs/node_service.{h,cpp} reverted to before the fix, the
// rest as now): in the first two tests `check` and `status` were still running when
// `timeout -s KILL 20` ended them (exit 137 after 20 s) while the server was stopped; in the
// late-path test status wrote nothing within 10 s.
//
// Negative controls: a plain `stat -L /proc/PID/exe` does hang while the server is stopped (the
// test sees the hang it guards against); while the server answers, the copy in a temp directory
// is an ordinary holder and the same file under a system directory (the mount bound over
// /usr/local/bin in a private mount namespace) is the monitoring tool — and stays so, from the
// kernel's caches, while the server is stopped.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../integration/command_json.h"
#include "fuse_fixture.h"

namespace gpuclean::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// How long gpuclean may take while the server is stopped: its read deadline is 1 s.
constexpr auto kBound = 10s;
// timeout(1)'s limit for one gpuclean run: past kBound, so a hang shows as exit 137.
constexpr const char* kKillAfter = "20";

// service_fs mounted on a temp directory, serving holder_helper as /nvidia-smi. The destructor
// lets the server answer again, unmounts and ends it; processes running from the mount must be
// gone by then (the test's reaper, declared after it, goes first).
class ServiceFs {
 public:
  // `entry_timeout`: seconds the kernel may keep a name without asking (service_fs.cpp).
  explicit ServiceFs(const std::string& entry_timeout = "3600") { mount(entry_timeout); }
  ~ServiceFs() { teardown(); }
  ServiceFs(const ServiceFs&) = delete;
  ServiceFs& operator=(const ServiceFs&) = delete;

  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& mount_point() const { return mount_point_; }
  [[nodiscard]] std::string executable() const { return mount_point_ + "/nvidia-smi"; }

  void stop() const { std::ofstream(stop_file_) << ""; }
  void resume() const { std::filesystem::remove(stop_file_); }

 private:
  void mount(const std::string& entry_timeout) {
    std::filesystem::create_directory(mount_point_);
    daemon_.emplace(std::vector<std::string>{SERVICE_FS, mount_point_, HOLDER_HELPER, stop_file_,
                                             entry_timeout});
    if (!daemon_->started()) {
      error_ = "cannot start service_fs";
      return;
    }
    const bool live = wait_until(
        [&] {
          if (daemon_->reap_within(fuse_detail::kNoWait)) return true;
          struct stat st {};
          return fuse_detail::mounted(mount_point_) && ::stat(executable().c_str(), &st) == 0 &&
                 S_ISREG(st.st_mode);
        },
        fuse_detail::kMountWait);
    if (!live || daemon_->reaped()) error_ = "the service_fs mount did not come up";
  }

  void teardown() {
    resume();
    const std::string fusermount = fuse_detail::find_program("fusermount3");
    if (fuse_detail::mounted(mount_point_) && !fusermount.empty()) {
      run_command({fusermount, "-u", mount_point_}, fuse_detail::kCommandWait);
    }
    if (fuse_detail::mounted(mount_point_)) ::umount2(mount_point_.c_str(), MNT_DETACH);
    if (daemon_ && !daemon_->reap_within(fuse_detail::kExitWait)) {
      daemon_->signal(SIGTERM);
      if (!daemon_->reap_within(fuse_detail::kExitWait)) daemon_->signal(SIGKILL);
    }
    if (fuse_detail::mounted(mount_point_)) {
      ADD_FAILURE() << mount_point_ << " is still mounted";
      static_cast<void>(dir_.release());  // removing it would walk into the mount
    }
  }

  std::unique_ptr<TempDir> dir_ = std::make_unique<TempDir>();
  std::string mount_point_ = dir_->path() + "/mnt";
  std::string stop_file_ = dir_->path() + "/stop";
  std::optional<fuse_detail::OwnedChild> daemon_;
  std::string error_;
};

class ServiceStatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!MmLockVictim::supported(&why)) GTEST_SKIP() << why;
    fs_.emplace(entry_timeout_);
    ASSERT_TRUE(fs_->error().empty()) << fs_->error();
  }
  void TearDown() override {
    if (fs_) fs_->resume();  // a process running from the mount may need a page to die
    reaper_.kill_all();
    for (pid_t pid : children_) reap(pid);
  }

  // Starts argv (a holder_helper `hold`, perhaps through nsenter); returns the PID it reports.
  pid_t start_holder(const std::vector<std::string>& argv) {
    const pid_t child = spawn(argv);
    EXPECT_GT(child, 0);
    reaper_.adopt(child);
    children_.push_back(child);
    const std::vector<pid_t> pids = wait_for_pids(ready_);
    return pids.empty() ? 0 : pids.front();
  }

  struct Timed {
    CommandResult result;
    Clock::duration took;
  };
  // The shipping gpuclean on the test's device file, NVML off, through `prefix` (nsenter or
  // nothing). A hang is ended by timeout(1) after kKillAfter seconds: exit 137.
  Timed gpuclean(const std::vector<std::string>& prefix, const std::vector<std::string>& args) {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {"/usr/bin/timeout", "-s", "KILL", kKillAfter});
    argv.push_back(GPUCLEAN_SHIPPING_BINARY);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--no-nvml", "--device-glob", held_});
    const auto started = Clock::now();
    CommandResult result = run_command(argv, 60s);
    return {std::move(result), Clock::now() - started};
  }

  // While the server is stopped: `check` and `status` come back within kBound, and the holder
  // has `role` (nullptr: none, a plain holder); `check` exits `check_exit`, as it did while the
  // server answered.
  void expect_bounded(const std::vector<std::string>& prefix, pid_t pid, const char* role,
                      int check_exit) {
    const Timed check = gpuclean(prefix, {"check"});
    EXPECT_LT(check.took, kBound) << both(check.result);
    EXPECT_EQ(check.result.exit_code, check_exit) << both(check.result);
    const Timed status = gpuclean(prefix, {"status", "--json"});
    EXPECT_LT(status.took, kBound) << both(status.result);
    const json doc = parse(status.result);
    const json* h = holder(doc, pid);
    ASSERT_NE(h, nullptr) << doc.dump(1);
    if (role == nullptr) {
      EXPECT_TRUE(h->at("role").is_null()) << h->dump(1);
    } else {
      EXPECT_EQ(h->at("role"), role) << h->dump(1);
    }
  }

  // A private mount namespace with the mount bound over /usr/local/bin, held open by a
  // sleeping process: ns_ becomes the nsenter prefix that enters it (stays empty when skipped
  // or failed).
  void enter_trusted_namespace() {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: a bind mount in a mount namespace";
      return;
    }
    const std::string unshare = fuse_detail::find_program("unshare");
    const std::string nsenter = fuse_detail::find_program("nsenter");
    if (unshare.empty() || nsenter.empty()) {
      GTEST_SKIP() << "needs unshare and nsenter";
      return;
    }
    for (const char* dir : {"/", "/usr", "/usr/local", "/usr/local/bin"}) {
      struct stat st {};
      if (::stat(dir, &st) != 0 || st.st_uid != 0 || (st.st_mode & 022) != 0) {
        GTEST_SKIP() << dir << " is missing or writable by others: no system path to trust";
        return;
      }
    }
    const std::string mounted = dir_.path() + "/mounted";
    const pid_t holder_of_ns =
        spawn({unshare, "--mount", "--propagation", "private", "sh", "-c",
               "mount --bind \"$0\" /usr/local/bin && : > \"$1\" && exec sleep 300",
               fs_->mount_point(), mounted});
    reaper_.adopt(holder_of_ns);
    children_.push_back(holder_of_ns);
    if (!wait_until([&] { return std::filesystem::exists(mounted); })) {
      ADD_FAILURE() << "bind failed";
      return;
    }
    ns_ = {nsenter, "--mount=/proc/" + std::to_string(holder_of_ns) + "/ns/mnt", "--"};
  }

  // /usr/local/bin/nvidia-smi (the mount's file) holding the device file, started in `ns`.
  pid_t start_trusted_holder(const std::vector<std::string>& ns) {
    std::vector<std::string> argv = ns;
    argv.insert(argv.end(), {"/usr/local/bin/nvidia-smi", "hold", held_, ready_});
    return start_holder(argv);
  }

  // The seam: stat(2) of the exe link, followed, waits on the stopped server.
  static void expect_stat_hangs(pid_t pid) {
    const CommandResult stat = run_command({"/usr/bin/timeout", "-s", "KILL", "2", "/usr/bin/stat",
                                            "-L", "/proc/" + std::to_string(pid) + "/exe"},
                                           30s);
    EXPECT_EQ(stat.exit_code, 128 + SIGKILL) << "the stopped server answered\n" << both(stat);
  }

  // Declared first: destroyed last, after the processes running from it are gone.
  std::optional<ServiceFs> fs_;
  std::string entry_timeout_ = "3600";
  std::vector<std::string> ns_;
  TempDir dir_;
  std::string held_ = dir_.file("held-device");
  std::string ready_ = dir_.path() + "/ready";
  std::vector<pid_t> children_;
  ProcessReaper reaper_;
};

TEST_F(ServiceStatTest, AServiceNameOnAStoppedUserMountDoesNotHoldCheck) {
  const pid_t pid = start_holder({fs_->executable(), "hold", held_, ready_});
  ASSERT_GT(pid, 0);
  // Control while the server answers: an ordinary holder (a name alone buys nothing).
  const Timed answering = gpuclean({}, {"status", "--json"});
  const json doc = parse(answering.result);
  const json* h = holder(doc, pid);
  ASSERT_NE(h, nullptr) << both(answering.result);
  EXPECT_TRUE(h->at("role").is_null()) << h->dump(1);

  const int check_exit = gpuclean({}, {"check"}).result.exit_code;
  EXPECT_EQ(check_exit, 1) << "a plain holder: not clean";

  fs_->stop();
  expect_stat_hangs(pid);
  expect_bounded({}, pid, nullptr, check_exit);
}

// The same file under a system directory (the mount bound over /usr/local/bin in a private
// mount namespace that the holder and gpuclean share; root only): recognised while the server
// answers, and still once it stops — from what the kernel has cached, in bounded time.
TEST_F(ServiceStatTest, ATrustedPathOnAStoppedMountIsRecognisedFromTheCaches) {
  enter_trusted_namespace();
  if (ns_.empty()) return;  // skipped or failed
  const std::vector<std::string>& ns = ns_;
  const pid_t pid = start_trusted_holder(ns);
  ASSERT_GT(pid, 0);

  // Negative control: answering, the file in a system directory is the monitoring tool.
  const Timed answering = gpuclean(ns, {"status", "--json"});
  const json doc = parse(answering.result);
  const json* h = holder(doc, pid);
  ASSERT_NE(h, nullptr) << both(answering.result);
  EXPECT_EQ(h->at("role"), "monitor-tool") << h->dump(1);

  const int check_exit = gpuclean(ns, {"check"}).result.exit_code;
  EXPECT_NE(check_exit, 128 + SIGKILL);

  fs_->stop();
  expect_stat_hangs(pid);
  expect_bounded(ns, pid, "monitor-tool", check_exit);
}

// The late path: names are not cached (entry timeout 0), so the walk of the trusted path must
// ask the stopped server. The answer still comes within the read deadline, with the holder
// not recognised (a plain holder) — but the worker left behind waits on a FUSE request the
// server has read, which not even SIGKILL ends, so gpuclean's exit waits until the server
// answers (docs/security.md, row 19). Hence status's output is polled, not its exit.
class LateServiceStatTest : public ServiceStatTest {
 protected:
  LateServiceStatTest() { entry_timeout_ = "0"; }
};

TEST_F(LateServiceStatTest, ALateStatIsNotRecognisedAndTheAnswerComesInTime) {
  enter_trusted_namespace();
  if (ns_.empty()) return;  // skipped or failed
  const std::vector<std::string>& ns = ns_;
  const pid_t pid = start_trusted_holder(ns);
  ASSERT_GT(pid, 0);
  // Negative control: answering, the file is the monitoring tool.
  const Timed answering = gpuclean(ns, {"status", "--json"});
  const json before = parse(answering.result);
  const json* h = holder(before, pid);
  ASSERT_NE(h, nullptr) << both(answering.result);
  EXPECT_EQ(h->at("role"), "monitor-tool") << h->dump(1);

  fs_->stop();
  const std::string out = dir_.path() + "/status.json";
  std::vector<std::string> argv = ns;
  // sh's $0 is the output file, the rest gpuclean's argv.
  argv.insert(argv.end(), {"/bin/sh", "-c", "exec \"$@\" > \"$0\"", out, GPUCLEAN_SHIPPING_BINARY,
                           "status", "--json", "--no-nvml", "--device-glob", held_});
  const pid_t status = spawn(argv);
  ASSERT_GT(status, 0);
  reaper_.adopt(status);
  children_.push_back(status);
  json doc;
  const bool answered = wait_until(
      [&] {
        doc = json::parse(slurp(out), nullptr, /*allow_exceptions=*/false);
        return !doc.is_discarded() && doc.contains("holders");
      },
      kBound);
  ASSERT_TRUE(answered) << "no answer within 10 s: " << slurp(out);
  const json* late = holder(doc, pid);
  ASSERT_NE(late, nullptr) << doc.dump(1);
  EXPECT_TRUE(late->at("role").is_null()) << late->dump(1);
  fs_->resume();  // lets the worker's request, and with it gpuclean's exit, finish
}

}  // namespace
}  // namespace gpuclean::testing
