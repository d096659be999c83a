// `gpuclean metrics` through the CLI: with a holder this test starts (holding its own temp
// file) and a test GPU source, printed once, written with --textfile, and served with --listen
// on a loopback port that the test fetches with a plain HTTP GET.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
constexpr unsigned long long kGiB = 1ull << 30;

// A TCP socket on 127.0.0.1; closed at destruction.
struct Socket {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ~Socket() { ::close(fd); }
  Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
};

sockaddr_in loopback(int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sa;
}

// Binds `socket` to an ephemeral loopback port and returns the port.
int bind_any(const Socket& socket) {
  sockaddr_in sa = loopback(0);
  if (::bind(socket.fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return -1;
  socklen_t len = sizeof(sa);
  ::getsockname(socket.fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

// GET http://127.0.0.1:PORT/PATH; the whole response, or "" when nothing listens.
std::string http_get(int port, const std::string& path) {
  Socket s;
  sockaddr_in sa = loopback(port);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return "";
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(s.fd, request.data(), request.size()) < 0) return "";
  std::string response;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(s.fd, buffer, sizeof(buffer))) > 0)
    response.append(buffer, static_cast<std::size_t>(n));
  return response;
}

class MetricsTest : public HolderFixture {
 protected:
  std::string gpu_view(pid_t pid, unsigned long long bytes) {
    json list = json::array();
    if (pid > 0) list.push_back({{"pid", pid}, {"used_memory", bytes}, {"kind", "compute"}});
    const unsigned long long total = 140 * kGiB;
    json view = {{"driver_version", "580.159.04"},
                 {"gpus",
                  {{{"index", 0},
                    {"uuid", "GPU-test-0"},
                    {"name", "NVIDIA H200"},
                    {"minor", 0},
                    {"memory", {{"total", total}, {"used", bytes}, {"free", total - bytes}}},
                    {"processes", list}}}}};
    const std::string path = dir_.path() + "/gpus-" + std::to_string(views_++) + ".json";
    std::ofstream(path) << view.dump();
    return path;
  }
  std::vector<std::string> args(const std::string& view, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"metrics", "--device-glob", held_, "--test-gpu-source", view};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  int views_ = 0;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(MetricsTest, LeftoverShowsAsAttributedMemoryAndAProblem) {
  const pid_t holder = start("hold", held_).at(0);
  auto result = gpuclean(args(gpu_view(holder, 8 * kGiB)));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& t = result.out;
  EXPECT_TRUE(
      contains(t, R"(gpuclean_gpu_memory_attributed_bytes{gpu="0",uuid="GPU-test-0"} 8589934592)"))
      << t;
  EXPECT_TRUE(contains(t, R"(gpuclean_holders{class="active"} 1)")) << t;
  EXPECT_TRUE(contains(t, R"(gpuclean_problems{kind="in-use"} 1)")) << t;
  EXPECT_TRUE(contains(t, "gpuclean_clean 0\n"));
  EXPECT_TRUE(contains(t, "gpuclean_build_info{version=\""));

  // Negative control: once the holder is gone, the same view's memory is nobody's.
  reaper_.kill_all();
  ASSERT_TRUE(wait_until([&] { return proc_state(holder) == '\0' || proc_state(holder) == 'Z'; }));
  auto after = gpuclean(args(gpu_view(0, 0)));
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_TRUE(contains(after.out, R"(gpuclean_holders{class="active"} 0)")) << after.out;
  EXPECT_TRUE(contains(after.out, "gpuclean_clean 1\n"));
}

TEST_F(MetricsTest, TextfileIsWrittenWholeAndLeavesNoTempFile) {
  const std::string path = dir_.path() + "/gpuclean.prom";
  std::ofstream(path) << "old content\n";
  auto result = gpuclean(args(gpu_view(0, 0), {"--textfile", path}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "") << "nothing on stdout with --textfile";
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_TRUE(contains(content.str(), "gpuclean_clean 1\n")) << content.str();
  EXPECT_FALSE(contains(content.str(), "old content"));
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
  }
  // Negative control: a directory that does not exist is a runtime failure, said plainly.
  auto missing = gpuclean(args(gpu_view(0, 0), {"--textfile", dir_.path() + "/no/such.prom"}));
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_TRUE(contains(missing.err, "No such file or directory")) << missing.err;
}

TEST_F(MetricsTest, ListenServesMetricsOnLoopbackAndStopsOnTerm) {
  int port = 0;
  {
    Socket probe;
    port = bind_any(probe);
    ASSERT_GT(port, 0);
  }  // released: gpuclean binds it next
  const pid_t holder = start("hold", held_).at(0);
  const pid_t server =
      spawn({GPUCLEAN_BINARY, "metrics", "--device-glob", held_, "--test-gpu-source",
             gpu_view(holder, 2 * kGiB), "--listen", ":" + std::to_string(port)});
  ASSERT_GT(server, 0);
  reaper_.adopt(server);
  std::string response;
  ASSERT_TRUE(wait_until([&] {
    response = http_get(port, "/metrics");
    return !response.empty();
  })) << "nothing listened on 127.0.0.1:"
      << port;
  EXPECT_TRUE(contains(response, "200 OK")) << response;
  EXPECT_TRUE(contains(
      response, R"(gpuclean_gpu_memory_attributed_bytes{gpu="0",uuid="GPU-test-0"} 2147483648)"))
      << response;
  EXPECT_TRUE(contains(response, "gpuclean_scan_success 1"));

  // A second scrape is a fresh scan: the holder gone, the count follows.
  ::kill(holder, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return proc_state(holder) == '\0' || proc_state(holder) == 'Z'; }));
  EXPECT_TRUE(wait_until([&] {
    return contains(http_get(port, "/metrics"), R"(gpuclean_holders{class="active"} 0)");
  }));

  // A second server on the same port: exit 2 with the reason (negative control of the bind).
  auto taken = gpuclean(args(gpu_view(0, 0), {"--listen", "127.0.0.1:" + std::to_string(port)}));
  EXPECT_EQ(taken.exit_code, 2);
  EXPECT_TRUE(contains(taken.err, "Address already in use")) << taken.err;

  ASSERT_EQ(::kill(server, SIGTERM), 0);
  EXPECT_EQ(reap(server), 0) << "SIGTERM is a clean stop";
  EXPECT_EQ(http_get(port, "/metrics"), "") << "the port is closed after the stop";
}

TEST_F(MetricsTest, TakenPortAndBadAddressesAreUsageErrors) {
  Socket listener;
  const int port = bind_any(listener);
  ASSERT_EQ(::listen(listener.fd, 1), 0);
  auto taken = gpuclean(args(gpu_view(0, 0), {"--listen", std::to_string(port)}));
  EXPECT_EQ(taken.exit_code, 2);
  EXPECT_TRUE(contains(taken.err, "Address already in use")) << taken.err;

  for (const std::string bad :
       {"localhost:9400", "1.2.3:9400", "127.0.0.1:70000", "127.0.0.1:", "abc", "[zz]:1"}) {
    auto r = gpuclean(args(gpu_view(0, 0), {"--listen", bad}));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_TRUE(contains(r.err, "--listen")) << bad << ": " << r.err;
  }
  // An address this host does not have: the bind itself fails.
  auto foreign = gpuclean(args(gpu_view(0, 0), {"--listen", "192.0.2.1:9400"}));
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_TRUE(contains(foreign.err, "Cannot assign requested address")) << foreign.err;
  EXPECT_EQ(gpuclean(args(gpu_view(0, 0), {"--json"})).exit_code, 2);
}

TEST_F(MetricsTest, ExpositionPassesPromtool) {
  const char* candidates[] = {"/usr/bin/promtool", "/usr/local/bin/promtool"};
  std::string promtool;
  for (const char* c : candidates)
    if (::access(c, X_OK) == 0) promtool = c;
  if (promtool.empty()) GTEST_SKIP() << "promtool absent (Debian package prometheus; setup.sh)";
  const pid_t holder = start("hold", held_).at(0);
  const std::string path = dir_.path() + "/m.prom";
  ASSERT_EQ(gpuclean(args(gpu_view(holder, 8 * kGiB), {"--textfile", path})).exit_code, 0);
  auto check = run_command({"/bin/sh", "-c", promtool + " check metrics < " + path});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "") << "no lint findings";
  // Negative control: promtool does flag a counter without _total, so it is really checking.
  const std::string bad = dir_.path() + "/bad.prom";
  std::ofstream(bad) << "# HELP x_bytes x\n# TYPE x_bytes counter\nx_bytes 1\n";
  auto flagged = run_command({"/bin/sh", "-c", promtool + " check metrics < " + bad});
  EXPECT_NE(flagged.exit_code, 0) << flagged.out << flagged.err;
}

}  // namespace
}  // namespace gpuclean::testing
