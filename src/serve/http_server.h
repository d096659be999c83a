// The `metrics --listen` server: one thread, one epoll set, every connection non-blocking.
//
// Why not a thread per connection (prometheus-cpp's Exposer on civetweb, until issue 33): there
// a connection holds a worker until its request is complete or the request timeout passes, and
// the others wait in arrival order, so N idle connections from any local user put N / workers
// × timeout in front of every scrape (8 workers, 2 s: 32 connections → 7-8 s, 64 → every
// scrape lost). No setting of civetweb 1.15 removes that: only more threads than attackers or
// a timeout too short for a remote scraper. Here an idle connection costs a descriptor and a
// few hundred bytes, and nothing waits for it:
//
// - every connection waiting for its request is read the moment bytes arrive, whatever the
//   others do, and a complete request is answered at once (the body may block: a scan);
// - a connection that has not sent its whole request head within `request_timeout` is closed
//   (all of them, in arrival order: one timer list), so idle connections cost a client a
//   reconnect every 2 s;
// - at most `max_connections` are open; the next one closes the oldest that is still waiting
//   for its request (one that is only waiting to take its response goes only when none is), so
//   a flood can never keep a new connection from being accepted and read;
// - accepting runs in bursts, so a connect storm cannot starve the connections already open;
//   running out of descriptors closes the oldest connection, or (none open) drops the
//   incoming one through a spare descriptor, instead of spinning on a listener that stays
//   readable.
//
// A stop fd (a signalfd of SIGTERM in the CLI) is in the same epoll set: it ends serve() at
// once, between two events, unless a body() is running (a scan: bounded by the scan's own
// deadlines).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"
#include "serve/http_message.h"

namespace gpuclean::serve {

struct Listener {
  UniqueFd fd;
  std::uint16_t port = 0;  // the port bound (the one the kernel chose for port 0)
};

// A listening TCP socket on "ADDR:PORT" or "[ADDR6]:PORT" (cli::parse_listen_address's form;
// an IPv6 address binds IPv6 only). Errors name the step: "bind 127.0.0.1:9835: Address
// already in use".
Result<Listener> listen_tcp(const std::string& address);

struct ServeLimits {
  // To send the whole request head, from the accept. Prometheus sends it in one segment.
  std::chrono::milliseconds request_timeout{2000};
  // To take the whole response, from the request. Prometheus' default scrape timeout.
  std::chrono::milliseconds response_timeout{10000};
  // Open connections at most; also kept below the descriptor limit (which serve() raises to
  // this plus a reserve where the hard limit allows).
  std::size_t max_connections = 4096;
};

// Serves `route` on `listener` until `stop_fd` is readable (serve() does not read it). Returns
// Ok then, or the error that ended the loop (epoll failing).
Status serve(const Listener& listener, const Route& route, int stop_fd,
             const ServeLimits& limits = {});

}  // namespace gpuclean::serve
