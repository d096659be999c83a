#include "serve/http_message.h"

#include <algorithm>

namespace gpuclean::serve {
namespace {

// RFC 9110's token characters: what a method may be made of.
bool is_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

std::string_view reason_of(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Error";
  }
}

std::string response(int status, std::string_view content_type, std::string_view body,
                     bool head_only, std::string_view extra_headers = {}) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_of(status)) +
                    "\r\nContent-Type: " + std::string(content_type) +
                    "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n" + std::string(extra_headers) + "\r\n";
  if (!head_only) out += body;
  return out;
}

std::string error_response(int status, std::string_view extra_headers = {}) {
  return response(status, "text/plain; charset=utf-8", std::string(reason_of(status)) + "\n", false,
                  extra_headers);
}

}  // namespace

std::size_t find_head_end(std::string_view received, std::size_t from) {
  from = from > 3 ? from - 3 : 0;
  for (std::size_t at = received.find('\n', from); at != std::string_view::npos;
       at = received.find('\n', at + 1)) {
    // This LF ends an empty line when the line before it ended just before (LF LF), or with CR
    // (CRLF CRLF).
    if (at >= 1 && received[at - 1] == '\n') return at + 1;
    if (at >= 3 && received.substr(at - 3, 3) == "\r\n\r") return at + 1;
  }
  return std::string_view::npos;
}

RequestHead parse_request_head(std::string_view head) {
  RequestHead result;
  if (head.size() > kMaxRequestHead) {
    result.status = HeadStatus::kTooLarge;
    return result;
  }
  std::string_view line = head.substr(0, head.find('\n'));
  if (line.ends_with('\r')) line.remove_suffix(1);
  const auto first = line.find(' ');
  const auto second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos) return result;
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, second - first - 1);
  const std::string_view version = line.substr(second + 1);
  if (!is_token(method) || !target.starts_with('/') || target.find(' ') != std::string_view::npos ||
      !version.starts_with("HTTP/1.") || version.size() != 8) {
    return result;
  }
  result.status = HeadStatus::kComplete;
  result.method = method;
  result.path = target.substr(0, target.find('?'));
  return result;
}

std::string answer(const RequestHead& head, const Route& route) {
  switch (head.status) {
    case HeadStatus::kTooLarge:
      return error_response(431);
    case HeadStatus::kMalformed:
      return error_response(400);
    case HeadStatus::kComplete:
      break;
  }
  if (head.path != route.path) return error_response(404);
  if (head.method != "GET" && head.method != "HEAD") {
    return error_response(405, "Allow: GET, HEAD\r\n");
  }
  return response(200, route.content_type, route.body(), head.method == "HEAD");
}

}  // namespace gpuclean::serve
