#include "cli/metrics_command.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "collect/gather.h"
#include "core/atomic_file.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/input_file.h"
#include "core/unique_fd.h"
#include "diagnose/leftover_gauge.h"
#include "output/escape.h"
#include "output/metrics_view.h"
#include "serve/http_server.h"

namespace gpuclean::cli {

using collect::Gatherer;
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
  result.report.leftover_bytes = diagnose::leftover_gauge(result.report.status->diagnosis);
  return result;
}

// --listen: a scrape within kScanReuse of the last scan is served from that scan's result, so
// a scrape flood cannot make this root-run process rescan /proc on demand (at most one scan
// per window, whatever the request rate). Prometheus scrapes every 10 s or more, so a normal
// scrape always gets a fresh scan; two Prometheus replicas scraping together share one.
constexpr auto kScanReuse = std::chrono::seconds(2);

// Prometheus' text exposition format, as prometheus-cpp's Exposer announced it.
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// The exposition a scrape gets: the last scan's, rendered once, rescanned when it is older than
// kScanReuse. The server (serve/http_server.h) calls text() on its one thread, so scrapes that
// arrive during a scan wait for it and then share its result.
class ScrapeText {
 public:
  using Clock = std::chrono::steady_clock;
  // `first`: the scan run_metrics made at start, served until it is kScanReuse old.
  ScrapeText(const MetricsOptions& options, std::unique_ptr<Gatherer> gatherer,
             const output::MetricsReport& first)
      : options_(options), gatherer_(std::move(gatherer)) {
    remember(first);
  }
  const std::string& text() {
    if (Clock::now() - scanned_at_ >= kScanReuse) {
      std::ostringstream ignored;  // usage problems were found at start; none can appear now
      remember(scan(options_, *gatherer_, Io{ignored, ignored}).report);
    }
    return text_;
  }

 private:
  void remember(output::MetricsReport report) {
    ++scans_;
    scanned_at_ = Clock::now();
    // The leftover counter's past is this server's: the last scan's gauge and time, kept here.
    if (report.leftover_bytes) {
      diagnose::LeftoverLook look{report.scan_time, *report.leftover_bytes};
      totals_ = diagnose::add_leftover_look(totals_, last_look_, look);
      last_look_ = std::move(look);
      report.leftover_byte_seconds = totals_;
    }
    auto families = output::metric_families(report);
    prometheus::MetricFamily count;
    count.name = "gpuclean_scans_total";
    count.help =
        "Scans of /proc and the GPUs since the server started (a scrape within 2 s "
        "of the last scan is served from it)";
    count.type = prometheus::MetricType::Counter;
    prometheus::ClientMetric value;
    value.counter.value = static_cast<double>(scans_);
    count.metric.push_back(std::move(value));
    families.push_back(std::move(count));
    text_ = prometheus::TextSerializer().Serialize(families);
  }

  const MetricsOptions& options_;
  std::unique_ptr<Gatherer> gatherer_;
  std::uint64_t scans_ = 0;
  Clock::time_point scanned_at_;
  std::optional<diagnose::LeftoverLook> last_look_;
  diagnose::LeftoverSeries totals_;
  std::string text_;
};

int serve(const MetricsOptions& options, std::unique_ptr<Gatherer> gatherer,
          const output::MetricsReport& first, const std::string& address, const Io& io) {
  const StopSignals stop;
  if (!stop.fd().valid()) {
    say(io.err, "metrics") << errno_error("signalfd").message() << '\n';
    return kExitRuntime;
  }
  auto listener = serve::listen_tcp(address);
  if (!listener.ok()) {
    say(io.err, "metrics") << "cannot listen: " << listener.error().message() << '\n';
    return kExitUsage;
  }
  ScrapeText scrapes(options, std::move(gatherer), first);
  const serve::Route route{"/metrics", kContentType, [&] { return scrapes.text(); }};
  say(io.err) << "serving metrics on http://" << address.substr(0, address.rfind(':') + 1)
              << listener->port << "/metrics" << std::endl;
  if (auto served = serve::serve(*listener, route, stop.fd().get()); !served.ok()) {
    say(io.err, "metrics") << served.error().message() << '\n';
    return kExitRuntime;
  }
  return kExitClean;
}

// The most of a previous textfile read back: gpuclean writes about 12 kB at its series cap.
constexpr std::size_t kTextfileReadBack = std::size_t{1} << 20;

// --textfile: the leftover counter goes on from the totals, gauge and scan time in the file the
// last run wrote, or from 0 when that cannot be read back (the first run, a link, someone
// else's file, a malformed line): never an error. read_input_file reads only a regular file,
// never follows a link at the name, and never waits.
void continue_leftover_counter(const std::string& path, output::MetricsReport& report) {
  if (!report.leftover_bytes) return;
  diagnose::LeftoverSeries totals;
  std::optional<diagnose::LeftoverLook> previous;
  if (auto text = read_input_file(path, kTextfileReadBack); text.ok()) {
    if (auto record = diagnose::parse_leftover_record(*text)) {
      totals = std::move(record->byte_seconds);
      previous = std::move(record->look);
    }
  }
  report.leftover_byte_seconds =
      diagnose::add_leftover_look(totals, previous, {report.scan_time, *report.leftover_bytes});
}

int write_textfile(const std::string& path, output::MetricsReport& report, const Io& io) {
  continue_leftover_counter(path, report);
  std::ostringstream text;
  output::render_metrics_text(text, report);
  // Atomic for node_exporter's textfile collector, which must never read half a file: the
  // temp file's name does not end in ".prom", so the collector ignores it meanwhile; and a
  // link planted in a shared textfile directory is never followed (core/atomic_file.h).
  if (auto written = write_file_atomically(path, text.str()); !written.ok()) {
    say(io.err, "metrics") << "cannot write " << output::escape_terminal(path) << " ("
                           << output::escape_terminal(written.error().message()) << ")\n";
    return kExitRuntime;
  }
  return kExitClean;
}

}  // namespace

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
      say(io.err, "metrics") << output::escape_terminal(parsed.error().message()) << '\n';
      return kExitUsage;
    }
    address = *parsed;
  }
  std::unique_ptr<Gatherer> gatherer;
  if (auto failed = open_gatherer(options.status.common, io, gatherer)) return *failed;
  gatherer->start_nvml_helper();  // every scrape bounded by --nvml-timeout
  // One scan first, also before serving: bad flags (--gpus 7 on a 1-GPU machine) are a usage
  // error at start, not an empty scrape later.
  Scan first = scan(options, *gatherer, io);
  if (!first.usable) return first.exit_code;
  if (address) return serve(options, std::move(gatherer), first.report, *address, io);
  if (!options.textfile.empty()) return write_textfile(options.textfile, first.report, io);
  // One scan to stdout has no past: the gauge, not the counter.
  output::render_metrics_text(io.out, first.report);
  return kExitClean;
}

}  // namespace gpuclean::cli
