// The little of HTTP/1.x that `metrics --listen` needs, as pure functions: find the end of a
// request head, parse its request line, and answer it with a whole response that closes the
// connection. No syscalls; serve/http_server.h does the sockets.
//
// Only the request line is read: the endpoint answers every client the same, so no header can
// change the answer (no keep-alive, no compression, no content negotiation), and headers that
// are never parsed cannot be parsed wrong.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace gpuclean::serve {

// A request head longer than this is refused (431). Prometheus sends about 250 bytes; civetweb,
// the server before this one, allowed 16 KiB.
inline constexpr std::size_t kMaxRequestHead = 8192;

// Where the head in `received` ends (just past its blank line: CRLF CRLF, or LF LF from a lax
// client), or npos when it has not ended yet. Searches from `from` on (minus the 3 bytes a
// terminator split across two reads may have begun with), so a server that calls it after each
// read scans every byte a bounded number of times, however the client splits its request.
std::size_t find_head_end(std::string_view received, std::size_t from = 0);

enum class HeadStatus { kComplete, kMalformed, kTooLarge };

struct RequestHead {
  HeadStatus status = HeadStatus::kMalformed;
  std::string method;  // "GET"
  std::string path;    // the target without its query: "/metrics"
};

// The request line of a complete head (what find_head_end delimits): METHOD SP TARGET SP
// HTTP/1.x. A head over kMaxRequestHead is kTooLarge.
RequestHead parse_request_head(std::string_view head);

// What the server serves: one path, answered to GET and HEAD with `body()` (called only for
// those, so a 404 or a malformed request costs no scan).
struct Route {
  std::string path;          // "/metrics"
  std::string content_type;  // "text/plain; version=0.0.4; charset=utf-8"
  std::function<std::string()> body;
};

// The whole response to `head`: 200 for GET or HEAD of route.path, 404 for another path, 405
// for another method, 400 for a malformed head, 431 for one too large. Every response has a
// Content-Length and "Connection: close".
std::string answer(const RequestHead& head, const Route& route);

}  // namespace gpuclean::serve
