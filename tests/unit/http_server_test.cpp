// serve/: the request head parser and the answers (pure), then the server on a real loopback
// socket in a thread of the test, stopped through an eventfd: what it answers, that the oldest
// idle connection makes room for a new one at the cap, and that a stop ends serve() with idle
// connections open. No timing assertions (the 2 s bound under a flood is
// tests/integration/listener_flood_test.cpp); every wait is a blocking read with a time limit
// that only keeps a broken server from hanging the test.
#include "serve/http_server.h"
#include "serve/http_message.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace gpuclean::serve {
namespace {

TEST(HttpHead, FindsTheEndWhereverTheReadsSplitIt) {
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nbody";
  EXPECT_EQ(find_head_end(request), request.size() - 4);
  EXPECT_EQ(find_head_end("GET / HTTP/1.0\n\n"), 16U) << "bare LF ends a head too";
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: x\r\n"), std::string::npos);
  // Searching from each earlier size (a server calls it after every read) finds the same end.
  for (std::size_t from = 0; from <= request.size() - 4; ++from) {
    EXPECT_EQ(find_head_end(request, from), request.size() - 4) << from;
  }
}

TEST(HttpHead, ParsesTheRequestLineOnly) {
  const RequestHead head = parse_request_head("GET /metrics?x=1 HTTP/1.1\r\nHost: y\r\n\r\n");
  EXPECT_EQ(head.status, HeadStatus::kComplete);
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.path, "/metrics");
  for (const char* bad :
       {"GET /metrics\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/2.0\r\n\r\n", "G(T /metrics HTTP/1.1\r\n\r\n", "\r\n\r\n"}) {
    EXPECT_EQ(parse_request_head(bad).status, HeadStatus::kMalformed) << bad;
  }
  const std::string huge = "GET /metrics HTTP/1.1\r\nX: " + std::string(kMaxRequestHead, 'a');
  EXPECT_EQ(parse_request_head(huge + "\r\n\r\n").status, HeadStatus::kTooLarge);
}

TEST(HttpAnswer, ServesOnePathToGetAndHeadAndCallsTheBodyOnlyThen) {
  int bodies = 0;
  const Route route{"/metrics", "text/plain", [&] {
                      ++bodies;
                      return std::string("m 1\n");
                    }};
  auto answer_to = [&](const std::string& request) {
    return answer(parse_request_head(request), route);
  };
  EXPECT_EQ(answer_to("GET /metrics HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n"
            "Connection: close\r\n\r\nm 1\n");
  EXPECT_EQ(answer_to("HEAD /metrics HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n"
            "Connection: close\r\n\r\n");
  EXPECT_EQ(bodies, 2);
  EXPECT_TRUE(answer_to("GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 Not Found\r\n"));
  const std::string post = answer_to("POST /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n")) << post;
  EXPECT_NE(post.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << post;
  EXPECT_TRUE(answer_to("nonsense\r\n\r\n").starts_with("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_EQ(bodies, 2) << "no body for a 404, 405 or 400";
}

// A loopback TCP client socket, connected; closed at destruction. Reads give up after 10 s.
struct Client {
  explicit Client(std::uint16_t port) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval limit{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  }
  ~Client() { ::close(fd); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  void send(const std::string& text) const {
    ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(text.size()));
  }
  // Everything until the server closes (then `closed`), or until the 10 s limit.
  std::string read_all() {
    std::string out;
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0)
      out.append(buffer, static_cast<std::size_t>(n));
    closed = n == 0;
    return out;
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool connected = false;
  bool closed = false;  // read_all saw the server's close (not the time limit)
};

// Limits whose timeouts no slow machine reaches within a test: what is closed here is closed
// by the cap or by the stop.
ServeLimits patient() {
  ServeLimits limits;
  limits.request_timeout = std::chrono::minutes(1);
  limits.response_timeout = std::chrono::minutes(1);
  return limits;
}

// serve() on 127.0.0.1:0 in a thread, until destroyed.
class Serving {
 public:
  explicit Serving(ServeLimits limits = patient()) {
    auto bound = listen_tcp("127.0.0.1:0");
    EXPECT_TRUE(bound.ok()) << bound.error().message();
    listener_ = std::move(bound.value());
    thread_ = std::thread([this, limits] { result_ = serve(listener_, route_, stop_, limits); });
  }
  ~Serving() { stop(); }
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;
  // Ends serve() and waits for it; whether it returned Ok.
  bool stop() {
    if (thread_.joinable()) {
      const std::uint64_t one = 1;
      EXPECT_EQ(::write(stop_, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
      thread_.join();
      ::close(stop_);
    }
    return result_.ok();
  }
  [[nodiscard]] std::uint16_t port() const { return listener_.port; }
  std::atomic<int> bodies{0};

 private:
  Listener listener_;
  int stop_ = ::eventfd(0, EFD_CLOEXEC);
  Route route_{"/metrics", "text/plain", [this] {
                 ++bodies;
                 return std::string("m 1\n");
               }};
  Status result_ = Ok{};
  std::thread thread_;
};

TEST(HttpServer, AnswersAScrapeAndClosesTheConnection) {
  Serving server;
  ASSERT_GT(server.port(), 0);
  Client client(server.port());
  ASSERT_TRUE(client.connected);
  // Sent in two pieces, the blank line split between them.
  client.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r");
  client.send("\n");
  const std::string response = client.read_all();
  EXPECT_TRUE(response.starts_with("HTTP/1.1 200 OK\r\n")) << response;
  EXPECT_TRUE(response.ends_with("\r\n\r\nm 1\n")) << response;
  EXPECT_EQ(server.bodies.load(), 1);
  EXPECT_TRUE(server.stop());
}

TEST(HttpServer, AtTheCapTheOldestIdleConnectionMakesRoom) {
  ServeLimits limits = patient();
  limits.max_connections = 4;
  Serving server(limits);
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<Client>(server.port()));
    ASSERT_TRUE(idle.back()->connected);
  }
  // A fifth is served. The server accepts in the order of the connects, so the four are in
  // when it comes, and the oldest idle one is closed for it (EOF, no answer); the other three
  // are still open (a request on them is answered).
  Client fifth(server.port());
  fifth.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(fifth.read_all().starts_with("HTTP/1.1 200 OK\r\n"));
  EXPECT_EQ(idle[0]->read_all(), "");
  EXPECT_TRUE(idle[0]->closed) << "the oldest idle connection was closed";
  for (std::size_t i = 1; i < 4; ++i) {
    idle[i]->send("GET /metrics HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(idle[i]->read_all().starts_with("HTTP/1.1 200 OK\r\n")) << i;
  }
}

TEST(HttpServer, TooLargeAHeadIsRefusedAndAStopEndsServeWithIdleConnectionsOpen) {
  Serving server;
  Client idle(server.port());
  Client large(server.port());
  large.send("GET /metrics HTTP/1.1\r\nX: " + std::string(kMaxRequestHead, 'a'));
  EXPECT_TRUE(large.read_all().starts_with("HTTP/1.1 431 "));
  EXPECT_EQ(server.bodies.load(), 0);
  EXPECT_TRUE(server.stop());
  EXPECT_EQ(idle.read_all(), "");
  EXPECT_TRUE(idle.closed) << "closed by the stop";
}

TEST(HttpServer, ListenErrorsNameTheStep) {
  auto first = listen_tcp("127.0.0.1:0");
  ASSERT_TRUE(first.ok());
  auto taken = listen_tcp("127.0.0.1:" + std::to_string(first->port));
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().message(),
            "bind 127.0.0.1:" + std::to_string(first->port) + ": Address already in use");
  EXPECT_FALSE(listen_tcp("localhost:80").ok());
}

}  // namespace
}  // namespace gpuclean::serve
