// A request as any local user may send it to `metrics --listen` (root's listener): whatever the
// bytes and however they are split into reads, finding the head's end never reads outside the
// buffer and agrees with one search over the whole, parsing never crashes, and every answer is
// a whole response that closes the connection — with the body only for GET or HEAD of the path.
#include <algorithm>
#include <string>

#include "fuzz_check.h"
#include "serve/http_message.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuclean::fuzz::check;
  namespace serve = gpuclean::serve;
  const std::string_view bytes = gpuclean::fuzz::as_text(data, size);

  // The same bytes arriving in reads of a size taken from the first byte.
  const std::size_t whole = serve::find_head_end(bytes);
  const std::size_t step = size > 0 ? 1 + data[0] % 16 : 1;
  std::size_t found = std::string_view::npos;
  for (std::size_t have = 0; have < size && found == std::string_view::npos;) {
    const std::size_t from = have;
    have = std::min(size, have + step);
    found = serve::find_head_end(bytes.substr(0, have), from);
  }
  check(found == whole, "find_head_end over reads agrees with one search");
  check(whole == std::string_view::npos || whole <= size, "the head ends inside the bytes");

  const serve::RequestHead head =
      serve::parse_request_head(whole == std::string_view::npos ? bytes : bytes.substr(0, whole));
  bool body_called = false;
  const serve::Route route{"/metrics", "text/plain", [&body_called] {
                             body_called = true;
                             return std::string("gpuclean_clean 1\n");
                           }};
  const std::string response = serve::answer(head, route);
  check(response.rfind("HTTP/1.1 ", 0) == 0, "a status line");
  check(response.find("Connection: close\r\n") != std::string::npos, "the connection closes");
  check(response.find("\r\n\r\n") != std::string::npos, "a whole head");
  const bool served = head.status == serve::HeadStatus::kComplete && head.path == "/metrics" &&
                      (head.method == "GET" || head.method == "HEAD");
  check(body_called == served, "the body only for GET or HEAD of the path");
  return 0;
}
