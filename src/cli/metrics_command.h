// `gpuclean metrics`: the diagnosis as Prometheus metrics (output/metrics_view.h), printed once,
// written atomically for node_exporter's textfile collector, or served over HTTP on /metrics.
#pragma once

#include <string>

#include "cli/status_command.h"
#include "core/result.h"

namespace gpuclean::cli {

struct MetricsOptions {
  StatusOptions status;  // the device selection and check's tolerances (--max-used, …)
  std::string textfile;  // --textfile PATH: write there (temp file + rename), not stdout
  std::string listen;    // --listen [ADDR:]PORT: serve /metrics until SIGINT/SIGTERM
  std::string version;   // gpuclean's version, for gpuclean_build_info (set by main)
};

// "ADDR:PORT", ":PORT" or "PORT" → "ADDR:PORT" as serve::listen_tcp takes it; the address defaults
// to 127.0.0.1 (exposing the metrics wider is the user's explicit choice). ADDR is an IPv4 address
// or a bracketed IPv6 one ("[::1]:9400"); host names are refused (a bind needs an address, and
// resolving one could pick an unintended interface). PORT is 0-65535 (0: any). Errors say what is
// wrong; they are usage errors.
Result<std::string> parse_listen_address(const std::string& text);

// Exit codes: 0 when the metrics were printed/written (a dirty machine is a metric, not a
// failure), or the server stopped on SIGINT/SIGTERM; 2 for bad flags, a bad --listen address or
// a port that cannot be bound; 3 when /proc cannot be read or the textfile cannot be written.
int run_metrics(const MetricsOptions& options, const Io& io);

}  // namespace gpuclean::cli
