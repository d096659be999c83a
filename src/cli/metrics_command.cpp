#include "cli/metrics_command.h"
#include "cli/help.h"
#include "cli/test_hooks.h"
#include "cli/usage_error.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include "collect/gather.h"
#include "core/atomic_file.h"
#include "core/unique_fd.h"
#include "output/escape.h"
#include "output/metrics_view.h"

namespace gpuclean::cli {

using collect::Gatherer;
using collect::GatherError;
namespace {

// One scan + diagnosis as metrics. nullopt status when the gather failed (said on io.err);
// `usable` false when the flags cannot be served at all (exit code in `exit_code`).
struct Scan {
  output::MetricsReport report;
  bool usable = true;
  int exit_code = kExitClean;
};

Scan scan(const MetricsOptions& options, Gatherer& gatherer, const Io& io) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  Scan result;
  result.report.version = options.version;
  StatusPrepared prepared = prepare_status(options.status, gatherer.collect(), io);
  if (!prepared.usable) {
    result.usable = false;
    result.exit_code = prepared.exit_code;
    return result;
  }
  result.report.scan_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  result.report.scan_time = unix_now();
  result.report.status = std::move(prepared.report);
  return result;
}

// --listen: a scrape within kScanReuse of the last scan is served from that scan's result, so
// a scrape flood cannot make this root-run process rescan /proc on demand (at most one scan
// per window, whatever the request rate). Prometheus scrapes every 10 s or more, so a normal
// scrape always gets a fresh scan; two Prometheus replicas scraping together share one.
constexpr auto kScanReuse = std::chrono::seconds(2);

// civetweb: several workers, so a client holding a connection does not hold the listener;
// and a short request timeout, so a half-sent request (or a client that stops reading) frees
// its worker after 2 s instead of civetweb's default 30 s. A scraper sends its request in
// one segment; 2 s is plenty on any network Prometheus scrapes over. No keep-alive: a
// connection never waits idle on a worker between scrapes.
constexpr const char* kWorkerThreads = "8";
constexpr const char* kRequestTimeoutMs = "2000";

// Serves scrapes from the last scan, rescanning when it is older than kScanReuse. civetweb
// calls Collect() from its worker threads; the Gatherer is not thread-safe, so scans take
// turns under the mutex, and scrapes that arrive during a scan wait for it and share its
// result (one scan, not one each).
class ScanCollectable : public prometheus::Collectable {
 public:
  using Clock = std::chrono::steady_clock;
  // `first`: the scan run_metrics made at start, served until it is kScanReuse old.
  ScanCollectable(const MetricsOptions& options, std::unique_ptr<Gatherer> gatherer,
                  const output::MetricsReport& first)
      : options_(options), gatherer_(std::move(gatherer)) {
    remember(first);
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    const std::lock_guard lock(mutex_);
    if (Clock::now() - scanned_at_ >= kScanReuse) {
      std::ostringstream ignored;  // usage problems were found at start; none can appear now
      remember(scan(options_, *gatherer_, Io{ignored, ignored}).report);
    }
    return families_;
  }

 private:
  // Called with mutex_ held (or from the constructor).
  void remember(const output::MetricsReport& report) const {
    ++scans_;
    scanned_at_ = Clock::now();
    families_ = output::metric_families(report);
    prometheus::MetricFamily count;
    count.name = "gpuclean_scans_total";
    count.help =
        "Scans of /proc and the GPUs since the server started (a scrape within 2 s "
        "of the last scan is served from it)";
    count.type = prometheus::MetricType::Counter;
    prometheus::ClientMetric value;
    value.counter.value = static_cast<double>(scans_);
    count.metric.push_back(std::move(value));
    families_.push_back(std::move(count));
  }

  const MetricsOptions& options_;
  mutable std::mutex mutex_;
  std::unique_ptr<Gatherer> gatherer_;
  mutable std::uint64_t scans_ = 0;
  mutable Clock::time_point scanned_at_;
  mutable std::vector<prometheus::MetricFamily> families_;
};

// civetweb reports a failed bind only as "possible problem binding to port": bind once
// ourselves first so the error names the reason (EADDRINUSE, EADDRNOTAVAIL, EACCES).
Status probe_bind(const std::string& address) {
  const auto colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  const auto port = static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)));
  const bool v6 = !host.empty() && host.front() == '[';
  UniqueFd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno_error("socket");
  const int one = 1;
  // As civetweb does, so a port in TIME_WAIT is not refused here and accepted there.
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = 0;
  if (v6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    ::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &sa.sin6_addr);
    rc = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
    rc = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  }
  if (rc != 0) return errno_error("bind " + address);
  if (::listen(fd.get(), 1) != 0) return errno_error("listen " + address);
  return Ok{};
}

int serve(const MetricsOptions& options, std::unique_ptr<Gatherer> gatherer,
          const output::MetricsReport& first, const std::string& address, const Io& io) {
  // Block SIGINT/SIGTERM before civetweb starts its threads (they inherit the mask), then
  // wait for them here: a clean stop with exit 0, and no handler running in a random thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  sigset_t previous;
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);

  if (auto probed = probe_bind(address); !probed.ok()) {
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    io.err << "gpuclean: metrics: cannot listen: " << probed.error().message() << '\n';
    return kExitUsage;
  }
  auto collectable = std::make_shared<ScanCollectable>(options, std::move(gatherer), first);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // clang-format off
    exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports",    address,
        "num_threads",        kWorkerThreads,
        "request_timeout_ms", kRequestTimeoutMs,
        "enable_keep_alive",  "no"});
    // clang-format on
  } catch (const std::exception& e) {
    // civetweb throws when it cannot bind: port taken, address not on this host, privilege.
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    io.err << "gpuclean: metrics: cannot listen on " << address << ": "
           << output::escape_terminal(e.what()) << '\n';
    return kExitUsage;
  }
  exposer->RegisterCollectable(collectable);
  const auto ports = exposer->GetListeningPorts();
  io.err << "gpuclean: serving metrics on http://" << address.substr(0, address.rfind(':') + 1)
         << (ports.empty() ? 0 : ports.front()) << "/metrics" << std::endl;
  int signal_number = 0;
  ::sigwait(&stop_signals, &signal_number);
  exposer.reset();
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return kExitClean;
}

}  // namespace

void add_metrics_command(CLI::App& app, MetricsOptions& options) {
  CLI::App* metrics = app.add_subcommand(
      "metrics", "Prometheus metrics: print once, --textfile PATH, or --listen [ADDR:]PORT");
  // No --json: the output is Prometheus's text format.
  add_diagnosis_options(*metrics, options.status, HookScope::kInspect,
                        {.json = false, .gpus = true});
  CLI::Option* textfile =
      metrics
          ->add_option("--textfile", options.textfile,
                       "Write the metrics to PATH atomically (node_exporter's textfile "
                       "collector reads *.prom files)")
          ->option_text("PATH");
  metrics
      ->add_option("--listen", options.listen,
                   "Serve /metrics until SIGINT/SIGTERM; ADDR is 127.0.0.1 when left out. A "
                   "scrape within 2 s of the last scan is served from it; a client has 2 s to "
                   "send its request")
      ->option_text("[ADDR:]PORT")
      ->excludes(textfile);
  set_help_footer(
      *metrics,
      {{"gpuclean metrics", "one scan, printed"},
       {"gpuclean metrics --listen 9835", "serve 127.0.0.1:9835/metrics"},
       {"gpuclean metrics --textfile /var/lib/node_exporter/gpuclean.prom", "for cron"}},
      {"0  done (a dirty verdict is in the metrics, not the exit code)",
       "2  usage error, or an address that cannot be listened on",
       "3  the first scan failed, or the textfile could not be written"});
}

Result<std::string> parse_listen_address(const std::string& text) {
  std::string address = "127.0.0.1";
  std::string port = text;
  if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    address = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (address.empty()) address = "127.0.0.1";
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) > 65535) {
    return Error{0, "--listen " + text + ": the port must be a number from 0 to 65535"};
  }
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') {
    in6_addr v6{};
    if (::inet_pton(AF_INET6, address.substr(1, address.size() - 2).c_str(), &v6) == 1) {
      return address + ":" + port;
    }
  } else {
    in_addr v4{};
    if (::inet_pton(AF_INET, address.c_str(), &v4) == 1) return address + ":" + port;
  }
  return Error{0, "--listen " + text + ": '" + address +
                      "' is not an IPv4 address or a bracketed IPv6 address ([::1])"};
}

int run_metrics(const MetricsOptions& options, const Io& io) {
  std::optional<std::string> address;
  if (!options.listen.empty()) {
    auto parsed = parse_listen_address(options.listen);
    if (!parsed.ok()) {
      io.err << "gpuclean: metrics: " << output::escape_terminal(parsed.error().message()) << '\n';
      return kExitUsage;
    }
    address = *parsed;
  }
  auto opened = Gatherer::open(options.status.common);
  if (auto* error = std::get_if<GatherError>(&opened)) {
    io.err << "gpuclean: " << error->message << '\n';
    return exit_code_of(*error);
  }
  auto gatherer = std::move(std::get<std::unique_ptr<Gatherer>>(opened));
  gatherer->start_nvml_helper();  // every scrape bounded by --nvml-timeout
  // One scan first, also before serving: bad flags (--gpus 7 on a 1-GPU machine) are a usage
  // error at start, not an empty scrape later.
  Scan first = scan(options, *gatherer, io);
  if (!first.usable) return first.exit_code;
  if (address) return serve(options, std::move(gatherer), first.report, *address, io);

  std::ostringstream text;
  output::render_metrics_text(text, first.report);
  if (options.textfile.empty()) {
    io.out << text.str();
    return kExitClean;
  }
  // Atomic for node_exporter's textfile collector, which must never read half a file: the
  // temp file's name does not end in ".prom", so the collector ignores it meanwhile; and a
  // link planted in a shared textfile directory is never followed (core/atomic_file.h).
  if (auto written = write_file_atomically(options.textfile, text.str()); !written.ok()) {
    io.err << "gpuclean: metrics: cannot write " << output::escape_terminal(options.textfile)
           << " (" << output::escape_terminal(written.error().message()) << ")\n";
    return kExitRuntime;
  }
  return kExitClean;
}

}  // namespace gpuclean::cli
