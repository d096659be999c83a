// Issue 14's fault matrix: every command of the shipping gpuclean against every way the NVML
// library can misbehave (tests/fake_nvml/fake_nvml.c, loaded through LD_LIBRARY_PATH): hung,
// slow, crashing, failing, or answering with no GPU at all.
//
// For each cell: the command ends within its bound (its --nvml-timeout plus a margin; a hard
// deadline SIGKILLs it past that, so a hang fails the test instead of hanging the suite), exits
// with the code the contract gives (docs/reference.md "Exit codes" and "Bounded everywhere",
// README.md, docs/fleet.md), does not crash, never calls the GPUs clean without an NVML
// answer, and leaves no process behind (its NVML helper is a fork of gpuclean: the same command
// line, which names this test's temp directory).
//
// The cells of one fault run concurrently: each spends its time waiting on a hung or slow fake,
// not on a CPU, so the whole matrix costs about its slowest cell per fault.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fake_nvml_fixture.h"

extern char** environ;

namespace gpuclean::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// ---- What the fake does, and what the contract says gpuclean answers ----

struct Fault {
  const char* name = "";      // the test's name
  const char* scenario = "";  // the fake's scenario file
  int nvml_timeout_s = 1;     // --nvml-timeout
  bool answers = false;       // NVML answers in time: the GPUs can be called clean
  bool says_timeout = false;  // gpuclean must say "NVML did not answer in N s"
  const char* message = "";   // the NVML error that status and check must show ("": none)
  int answers_after_ms = 0;   // the fake answers late, after this long (0: at once or never)
  bool recovers = false;      // the fake answers in the end: a later question may get an answer
};

// gtest prints a parameter that fails: the fault's name, not its bytes.
void PrintTo(const Fault& fault, std::ostream* os) {
  *os << fault.name;
}

// "GPU is lost" is injected into the _v2 memory query alone (as issue 14 lists it) and into
// both memory queries (as a lost GPU really answers): a GPU_IS_LOST must not be papered over.
const Fault kFaults[] = {
    {.name = "HangInInit", .scenario = "hang nvmlInit_v2\n", .says_timeout = true},
    {.name = "HangInMemoryInfo",
     .scenario = "hang nvmlDeviceGetMemoryInfo_v2\n",
     .says_timeout = true},
    {.name = "SlowInitPastTheTimeout",
     .scenario = "slow nvmlInit_v2 3000\n",
     .says_timeout = true,
     .answers_after_ms = 3000,
     .recovers = true},
    {.name = "SlowInitWithinTheTimeout",
     .scenario = "slow nvmlInit_v2 3000\n",
     .nvml_timeout_s = 5,
     .answers = true,
     .answers_after_ms = 3000,
     .recovers = true},
    {.name = "CrashInInit", .scenario = "crash nvmlInit_v2\n"},
    {.name = "GpuLostInMemoryInfoV2",
     .scenario = "fail nvmlDeviceGetMemoryInfo_v2 15\n",
     .message = "GPU is lost"},
    {.name = "GpuLostInEveryMemoryQuery",
     .scenario = "fail nvmlDeviceGetMemoryInfo_v2 15\nfail nvmlDeviceGetMemoryInfo 15\n",
     .message = "GPU is lost"},
    {.name = "UnknownErrorInInit",
     .scenario = "fail nvmlInit_v2 999\n",
     .message = "Unknown Error"},
    {.name = "NoGpus", .scenario = "gpus 0\n", .answers = true},
    // Negative control: the same cells against a healthy fake are clean, exit 0, fast.
    {.name = "NoFault", .answers = true},
};

// The margin over --nvml-timeout every command gets (issue 14: a wedged driver costs a command
// its NVML deadline, not more). The hard deadline is further out, so that "slow" and "hung" are
// told apart in the report.
constexpr milliseconds kMargin{4000};
constexpr milliseconds kHardMargin{5000};

// ---- One cell's outcome ----

struct Cell {
  std::string name;
  CommandResult result;
  double seconds = 0;
  milliseconds bound{0};
  bool hard_killed = false;
  std::string file;  // what the command wrote (snapshot -o, run --record), or the 2nd scrape
};

// Prometheus's exposition without its # HELP and # TYPE lines: the values are what matter.
std::string without_comments(const std::string& text) {
  if (text.find("# HELP") == std::string::npos) return text;
  std::istringstream lines(text);
  std::string line;
  std::string kept;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) != 0) kept += line + "\n";
  }
  return kept;
}

std::string clip(const std::string& raw, std::size_t max = 2000) {
  const std::string text = without_comments(raw);
  return text.size() <= max ? text
                            : text.substr(0, max) + "…[" + std::to_string(text.size()) + " bytes]";
}

// Everything about a cell, for a failure message.
std::string describe(const Cell& c) {
  std::ostringstream s;
  s << "cell `" << c.name << "`: exit " << c.result.exit_code << " in " << c.seconds << " s"
    << (c.hard_killed ? " (SIGKILLed at the hard deadline: it hung)" : "") << "\n--- stdout\n"
    << clip(c.result.out) << "\n--- stderr\n"
    << clip(c.result.err);
  if (!c.file.empty()) s << "\n--- file\n" << clip(c.file);
  return s.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool contains_nocase(std::string text, std::string part) {
  auto lower = [](std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  };
  lower(text);
  lower(part);
  return contains(text, part);
}

// What a crash or a sanitizer leaves on stderr (the fake's own crash is silent: it dies of
// SIGSEGV's default action, without a sanitizer's report).
std::string crash_text(const std::string& err) {
  std::istringstream lines(err);
  std::string line;
  std::string found;
  while (std::getline(lines, line)) {
    for (const char* bad :
         {"terminate called", "runtime error:", "Sanitizer", "Segmentation fault", "core dumped"}) {
      if (contains(line, bad)) {
        found += line + "\n";
        break;
      }
    }
  }
  return found;
}

// ---- Processes with the fake in their environment ----

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Starts argv in the background with `env` and stderr to `err_path` (spawn() has neither);
// returns its PID, or -1.
pid_t spawn_with(std::vector<std::string> argv, const std::vector<std::string>& env,
                 const std::string& err_path) {
  std::vector<std::string> entries = merged_environment(env);
  auto args = c_strings(argv);
  auto envp = c_strings(entries);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The exit code (128+N for signal N) of our child `pid` once it has exited, or nullopt when it
// has not by the deadline.
std::optional<int> reap_within(pid_t pid, milliseconds deadline) {
  int status = 0;
  pid_t done = 0;
  wait_until([&] { return (done = ::waitpid(pid, &status, WNOHANG)) != 0; }, deadline);
  if (done != pid) return std::nullopt;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// ---- A tiny HTTP client for metrics --listen ----

sockaddr_in loopback(int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sa;
}

// A loopback port free just now (bound, then released for gpuclean to bind).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa = loopback(0);
  int port = -1;
  socklen_t len = sizeof(sa);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  ::close(fd);
  return port;
}

// GET /metrics from 127.0.0.1:PORT: the whole response, or "" when nothing answers. Reads give
// up after `timeout`, so a server wedged on NVML fails the test instead of blocking it.
std::string scrape(int port, milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::string response;
  sockaddr_in sa = loopback(port);
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  // MSG_NOSIGNAL: a server that died must fail the scrape, not SIGPIPE this test.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) {
      response.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return response;
}

// ---- The matrix ----

class NvmlFaultMatrixTest : public FakeNvmlTest, public ::testing::WithParamInterface<Fault> {
 protected:
  void SetUp() override {
    fault_ = GetParam();
    scenario_ = scenario(fault_.scenario);
    timeout_ = std::to_string(fault_.nvml_timeout_s) + "s";
    bound_ = milliseconds(fault_.nvml_timeout_s * 1000) + kMargin;
  }

  // The shipping binary with the fake: GPU-state commands look at `free_` (a file nobody holds,
  // so a healthy NVML makes them clean); who, explain and kill at `held_`, which the test's
  // holders hold. The options go before ARGS, which may end in `-- CMD` (run).
  Cell cell(const std::string& name, const std::string& device, std::vector<std::string> args,
            milliseconds bound, const std::string& nvml_timeout = "") {
    std::vector<std::string> argv = {GPUCLEAN_SHIPPING_BINARY, "--device-glob", device,
                                     "--nvml-timeout",
                                     nvml_timeout.empty() ? timeout_ : nvml_timeout};
    argv.insert(argv.end(), args.begin(), args.end());
    Cell c;
    c.name = name;
    c.bound = bound;
    const auto started = Clock::now();
    c.result = run_command(argv, fake_env(variant_dir("r580"), scenario_), bound + kHardMargin);
    c.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    c.hard_killed = c.seconds >= std::chrono::duration<double>(bound + kHardMargin).count();
    return c;
  }

  // metrics --listen: started, scraped twice (each bounded), SIGTERMed. The cell's stdout is the
  // first scrape, `file` the second, the exit code the server's after SIGTERM, `seconds` the
  // slowest of: start to first scrape, the second scrape, SIGTERM to exit.
  Cell listen_cell() {
    Cell c;
    c.name = "metrics --listen";
    c.bound = bound_;
    const int port = free_port();
    const std::string err_path = dir_.path() + "/listen.err";
    const auto started = Clock::now();
    const pid_t server =
        spawn_with({GPUCLEAN_SHIPPING_BINARY, "--device-glob", free_, "--nvml-timeout", timeout_,
                    "metrics", "--listen", "127.0.0.1:" + std::to_string(port)},
                   fake_env(variant_dir("r580"), scenario_), err_path);
    if (server <= 0) {
      c.result.err = "could not start the server";
      return c;
    }
    reaper_.adopt(server);  // SIGKILLed at teardown if anything below goes wrong
    auto since = [](Clock::time_point t) {
      return std::chrono::duration<double>(Clock::now() - t).count();
    };
    // Serving starts after a first scan, bounded like any other: poll until it answers, or
    // until the server has died. (Until its handler is registered the port may answer 404:
    // that is not yet a scrape.)
    std::optional<int> code;
    wait_until(
        [&] {
          code = reap_within(server, milliseconds(0));
          return code || contains(c.result.out = scrape(port, bound_), " 200 OK");
        },
        bound_);
    double slowest = since(started);
    if (!code) {
      const auto second = Clock::now();
      c.file = scrape(port, bound_);  // it keeps serving after a failed NVML answer
      slowest = std::max(slowest, since(second));
      const auto term = Clock::now();
      ::kill(server, SIGTERM);  // our own child
      code = reap_within(server, bound_ + kHardMargin);
      slowest = std::max(slowest, since(term));
    }
    if (!code) {
      ::kill(server, SIGKILL);  // our own child, still running after SIGTERM
      c.hard_killed = true;
      code = reap_within(server, kHardMargin);
    }
    c.result.exit_code = code.value_or(-1);
    c.seconds = slowest;
    c.result.err = slurp(err_path);
    return c;
  }

  // `run` killed at the hard deadline leaves its (empty) cgroup behind, as documented for a
  // SIGKILLed gpuclean; remove it (as run_test.cpp does) so that a failing cell leaves nothing.
  static void remove_run_cgroup(const Cell& c) {
    // "in cgroup /PATH (…": plain string search (std::regex trips GCC 12's -Wmaybe-uninitialized
    // under ASan, a false positive that -Werror turned into a failed build).
    const std::string group_marker = "in cgroup ";
    const std::size_t at = c.result.err.find(group_marker);
    if (at == std::string::npos) return;
    const std::size_t begin = at + group_marker.size();
    const std::size_t end = c.result.err.find(' ', begin);
    if (end == std::string::npos || c.result.err[begin] != '/') return;
    const std::string group = c.result.err.substr(begin, end - begin);
    std::string mount;  // where the cgroup2 hierarchy is mounted (mountinfo's 5th field)
    std::istringstream mounts(slurp("/proc/self/mountinfo"));
    std::string line;
    while (mount.empty() && std::getline(mounts, line)) {
      if (!contains(line, " - cgroup2 ")) continue;
      std::istringstream fields(line);
      for (int i = 0; i < 5 && fields >> mount; ++i) {
      }
    }
    const std::string path = mount + group;
    // Polled: the group empties once the workload's zombie has been reaped by its new parent.
    const bool removed = wait_until([&] { return ::rmdir(path.c_str()) == 0 || errno == ENOENT; },
                                    milliseconds(3000));
    if (!removed) ADD_FAILURE() << "cannot remove " << path;
  }

  Fault fault_{};
  std::string scenario_;
  std::string timeout_;
  milliseconds bound_{0};
  std::string free_ = dir_.file("free-device");
};

// A status or snapshot document's NVML state ("" when it has none).
std::string nvml_state(const json& doc) {
  return doc.value(json::json_pointer("/nvml/state"), std::string());
}

// The assertions every cell gets, then the command's own.
void expect_common(const Cell& c) {
  EXPECT_LT(c.seconds, std::chrono::duration<double>(c.bound).count())
      << "slower than its bound (" << c.bound.count() << " ms)\n"
      << describe(c);
  EXPECT_FALSE(c.hard_killed) << describe(c);
  EXPECT_LT(c.result.exit_code, 128) << "ended by a signal\n" << describe(c);
  EXPECT_EQ(crash_text(c.result.err), "") << describe(c);
}

void expect_timeout_said(const Cell& c, const Fault& fault, const std::string& where) {
  if (!fault.says_timeout) return;
  const std::string said = "NVML did not answer in " + std::to_string(fault.nvml_timeout_s) + " s";
  EXPECT_TRUE(contains(where, said)) << "does not say `" << said << "`\n" << describe(c);
}

// What the contract promises for cell C under fault F (ASSERTs end only this cell's checks).
void expect_cell(const Cell& c, const Fault& f, pid_t watched, pid_t target) {
  expect_common(c);
  const std::string& out = c.result.out;
  const std::string all = out + c.result.err;
  if (c.name == "status") {
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 3) << describe(c);
    if (f.answers) {
      EXPECT_TRUE(contains(out, "CLEAN")) << describe(c);
    } else {
      EXPECT_TRUE(contains(out, "UNKNOWN")) << describe(c);
      EXPECT_FALSE(contains(out, "CLEAN")) << "clean without an NVML answer\n" << describe(c);
      if (*f.message != '\0') {
        EXPECT_TRUE(contains(out, f.message)) << describe(c);
      }
    }
    expect_timeout_said(c, f, all);
  } else if (c.name == "status --json") {
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 3) << describe(c);
    const json doc = json::parse(out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << "not JSON\n" << describe(c);
    EXPECT_EQ(doc.value("verdict", ""), f.answers ? "clean" : "unknown") << describe(c);
    EXPECT_EQ(nvml_state(doc), f.answers ? "present" : "failed") << describe(c);
    expect_timeout_said(c, f, all);
  } else if (c.name == "check") {
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 3) << describe(c);
    if (!f.answers && *f.message != '\0') {
      EXPECT_TRUE(contains(c.result.err, f.message)) << describe(c);
    }
    expect_timeout_said(c, f, all);
  } else if (c.name == "who") {
    // /proc only: the same answer whatever NVML does.
    EXPECT_EQ(c.result.exit_code, 1) << describe(c);
    EXPECT_TRUE(contains(out, " " + std::to_string(watched) + " ")) << describe(c);
    EXPECT_FALSE(contains(all, "NVML")) << describe(c);
  } else if (c.name == "explain") {
    // SPEC "Bounded everywhere": NVML not answering is exit 3, with what /proc tells.
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 3) << describe(c);
    EXPECT_TRUE(contains(out, "pid " + std::to_string(watched))) << describe(c);
    expect_timeout_said(c, f, all);
  } else if (c.name == "kill") {
    // Targets gone either way; without an NVML answer their memory is not verified (3).
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 3) << describe(c);
    EXPECT_TRUE(wait_until([&] { return proc_state(target) == '\0' || proc_state(target) == 'Z'; },
                           milliseconds(2000)))
        << "the target is still running\n"
        << describe(c);
    if (!f.answers) {
      EXPECT_TRUE(contains_nocase(all, "not verified")) << describe(c);
    }
    expect_timeout_said(c, f, all);
  } else if (c.name == "reset") {
    // Issue 53: a plan needs NVML's GPUs: without an answer, exit 3 and no plan; with one, a
    // plan for each (nobody holds the free file: nothing refuses it but, for a test run as
    // another user than root, not-root).
    if (std::string_view(f.name) == "NoGpus") {
      // NVML answers and lists none: nothing to plan for, said (exit 3, as without NVML).
      EXPECT_EQ(c.result.exit_code, 3) << describe(c);
      EXPECT_TRUE(contains(c.result.err, "lists no GPU")) << describe(c);
    } else if (f.answers) {
      EXPECT_LE(c.result.exit_code, 1) << describe(c);
      const json doc = json::parse(out, nullptr, false);
      ASSERT_FALSE(doc.is_discarded()) << "not JSON\n" << describe(c);
      EXPECT_FALSE(doc.value("gpus", json::array()).empty()) << describe(c);
    } else {
      EXPECT_EQ(c.result.exit_code, 3) << describe(c);
      EXPECT_TRUE(contains(c.result.err, "NVML")) << describe(c);
    }
    expect_timeout_said(c, f, all);
  } else if (c.name == "wait") {
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 3) << describe(c);
    expect_timeout_said(c, f, all);
  } else if (c.name == "snapshot") {
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 3) << describe(c);
    const json doc = json::parse(c.file, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << "no snapshot written\n" << describe(c);
    EXPECT_EQ(doc.value("verdict", ""), f.answers ? "clean" : "unknown") << describe(c);
    EXPECT_EQ(nvml_state(doc), f.answers ? "present" : "failed") << describe(c);
    expect_timeout_said(c, f, all + c.file);
  } else if (c.name == "metrics" || c.name == "metrics --listen") {
    // docs/fleet.md: NVML failing is a metric value (exit 0), never clean; the server goes on
    // serving. A fake that answers in the end (slow) may answer the second scrape: then that
    // scrape may truthfully say present, so only the first is held to the fault.
    EXPECT_EQ(c.result.exit_code, 0) << describe(c);
    std::vector<std::string> expositions = {out};
    if (c.name == "metrics --listen") expositions.push_back(c.file);
    for (std::size_t i = 0; i < expositions.size(); ++i) {
      const std::string& text = expositions[i];
      if (c.name == "metrics --listen") {
        EXPECT_TRUE(contains(text, " 200 OK")) << "scrape " << i + 1 << "\n" << describe(c);
        EXPECT_TRUE(contains(text, "\ngpuclean_scan_success 1\n")) << describe(c);
      }
      if (i > 0 && f.recovers) continue;
      const std::string state = f.answers ? "present" : "failed";
      EXPECT_TRUE(contains(text, "gpuclean_nvml_state{state=\"" + state + "\"} 1"))
          << "scrape " << i + 1 << "\n"
          << describe(c);
      EXPECT_TRUE(contains(text, f.answers ? "\ngpuclean_clean 1\n" : "\ngpuclean_clean 0\n"))
          << "scrape " << i + 1 << "\n"
          << describe(c);
      EXPECT_TRUE(contains(text, std::string("gpuclean_verdict{verdict=\"") +
                                     (f.answers ? "clean" : "unknown") + "\"} 1"))
          << "scrape " << i + 1 << "\n"
          << describe(c);
    }
  } else if (c.name == "run") {
    // README "gpuclean run": NVML failing at the start or silent after the teardown is
    // "GPU memory NOT verified", exit 1 although the workload succeeded.
    EXPECT_EQ(c.result.exit_code, f.answers ? 0 : 1) << describe(c);
    if (!f.answers) {
      EXPECT_TRUE(contains_nocase(c.result.err, "not verified")) << describe(c);
    }
    // `true` takes milliseconds; the reported duration must be the workload's, not NVML's.
    const std::string after_marker = "workload exited 0 after ";
    const std::size_t after = c.result.err.find(after_marker);
    ASSERT_NE(after, std::string::npos) << describe(c);
    EXPECT_LT(std::stod(c.result.err.substr(after + after_marker.size())), 1.0)
        << "reported duration of `true`\n"
        << describe(c);
    const json record = json::parse(c.file, nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << "no record written\n" << describe(c);
    for (const json& event : record.value("events", json::array())) {
      if (event.value("kind", "") == "exit") {
        EXPECT_LT(event.value("t", 99.0), 1.0) << "the record's exit event\n" << describe(c);
      }
    }
  }
}

TEST_P(NvmlFaultMatrixTest, EveryCommandIsBoundedTrueAndLeavesNothing) {
  const Fault& f = fault_;
  // Holders of the test's own file: one for who and explain, one for kill to end.
  const pid_t watched = start("hold", held_).at(0);
  const pid_t target = start("hold", held_).at(0);
  std::vector<pid_t> ours = {watched, target};
  ours.insert(ours.end(), launchers_.begin(), launchers_.end());

  const std::string snapshot_path = dir_.path() + "/snapshot.json";
  const std::string record_path = dir_.path() + "/run.json";
  // who never asks NVML, so it must not pay for it. Given a minute to ask, asking a hung fake
  // would cost that minute (past the hard deadline), a slow one its delay: a bound below the
  // delay tells the two apart without betting on how fast a busy machine scans /proc.
  const milliseconds who_bound =
      f.answers_after_ms > 0 ? milliseconds(f.answers_after_ms - 500) : bound_;

  using Task = std::function<Cell()>;
  std::vector<Task> tasks = {
    [&] { return cell("status", free_, {"status"}, bound_); },
    [&] {
      return cell("status --json", free_, {"status", "--json"}, bound_);
    },
    [&] { return cell("check", free_, {"check"}, bound_); },
    [&] { return cell("who", held_, {"who"}, who_bound, "60s"); },
    [&] {
      return cell("explain", held_, {"explain", std::to_string(watched)}, bound_);
    },
    [&] {
      return cell("kill", held_,
                  {"kill", std::to_string(target), "--grace", "200ms", "--wait", "2s"}, bound_);
    },
    [&] {
      return cell("wait", free_, {"wait", "--timeout", "1s"}, bound_);
    },
    [&] {
      return cell("reset", free_, {"reset", "--json"}, bound_);
    },
    [&] {
      Cell c = cell("snapshot", free_, {"snapshot", "-o", snapshot_path}, bound_);
      c.file = slurp(snapshot_path);
      return c;
    },
#if GPUCLEAN_METRICS_TESTS
    [&] { return cell("metrics", free_, {"metrics"}, bound_); },
    [&] { return listen_cell(); },
#endif
    [&] {
      Cell c =
          cell("run", free_,
               {"run", "--grace", "200ms", "--wait", "2s", "--record", record_path, "--", "true"},
               bound_);
      c.file = slurp(record_path);
      if (c.hard_killed) remove_run_cgroup(c);
      return c;
    },
  };
  std::vector<std::future<Cell>> running;
  running.reserve(tasks.size());
  for (Task& task : tasks) running.push_back(std::async(std::launch::async, task));
  std::vector<Cell> cells;
  for (auto& r : running) cells.push_back(r.get());

  for (const Cell& c : cells) {
    SCOPED_TRACE(std::string(f.name) + " × " + c.name);
    expect_cell(c, f, watched, target);
  }

  // Nothing left behind: no NVML helper (a fork of gpuclean, its command line naming this
  // test's temp directory) outlives its command. Polled: a helper SIGKILLed (by gpuclean, or by
  // its PDEATHSIG when gpuclean itself was killed) is gone a moment later, not at once.
  pid_t left = 0;
  EXPECT_TRUE(wait_until([&] { return (left = process_with_arg(dir_.path(), ours)) == 0; },
                         milliseconds(3000)))
      << "left behind: pid " << left << ": " << slurp("/proc/" + std::to_string(left) + "/cmdline");
}

INSTANTIATE_TEST_SUITE_P(Faults, NvmlFaultMatrixTest, ::testing::ValuesIn(kFaults),
                         [](const ::testing::TestParamInfo<Fault>& param) {
                           return std::string(param.param.name);
                         });

// No GPU at all is clean for every command above; `--expect-gpus` is how a health check says
// a GPU is missing (SPEC "Exit codes").
class NoGpusTest : public FakeNvmlTest {};

TEST_F(NoGpusTest, FailsExpectGpusOnly) {
  const std::string none = scenario("gpus 0\n");
  auto check = run("r580", none, {"check", "--expect-gpus", "1", "--nvml-timeout", "1s"},
                   milliseconds(10000));
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_TRUE(contains(check.out, "gpuclean: expected 1 GPU, NVML sees 0")) << check.out;
  // Negative control: one GPU passes the same check.
  EXPECT_EQ(run("r580", scenario("gpus 1\n"), {"check", "--expect-gpus", "1"}, milliseconds(10000))
                .exit_code,
            0);
}

}  // namespace
}  // namespace gpuclean::testing
