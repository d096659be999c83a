#include "collect/gpu_sampler.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <exception>
#include <new>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nvml/fake_source.h"
#include "nvml/nvml_source.h"
#include "output/json.h"
#include "procfs/parse.h"
#include "procfs/proc_fs.h"

namespace gpuclean::collect {
namespace {

using nlohmann::json;

SamplerAnswer failed(std::string message) {
  SamplerAnswer answer;
  answer.state = NvmlState::kFailed;
  answer.message = std::move(message);
  return answer;
}

constexpr char kViewRequest = 's';
constexpr char kDetailsRequest = 'd';

// Far above any real answer (a few KiB per GPU), far below trouble.
constexpr std::size_t kMaxAnswerBytes = 16u << 20;

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// What the sampler says to one request: the view, and with `details` (request 'd', snapshot)
// the snapshot-only facts of each GPU too.
json answer_json(const nvml::OpenedSource& opened, bool details) {
  switch (opened.state) {
    case nvml::OpenedSource::State::kAbsent:
      return {{"state", "absent"}, {"message", opened.message}};
    case nvml::OpenedSource::State::kFailed:
      return {{"state", "failed"}, {"message", opened.message}};
    case nvml::OpenedSource::State::kPresent:
      break;
  }
  auto view = opened.source->query();
  if (!view.ok()) return {{"state", "failed"}, {"message", view.error().message()}};
  json answer = {{"state", "present"}, {"view", output::to_json(*view)}};
  if (details) {
    answer["details"] = json::array();
    for (const GpuDetails& d : opened.source->query_details()) {
      answer["details"].push_back(nvml::gpu_details_to_json(d));
    }
  }
  return answer;
}

// The sampler's whole life, in the forked child: open the source once, answer each request
// byte with one line, end at EOF. Never returns.
[[noreturn]] void serve(const CollectOptions& options, int requests, int answers) {
  // It is long-lived (the run may last days): shut NVML down properly at the end.
  nvml::OpenedSource opened = options.test_gpu_source.empty()
                                  ? nvml::open_nvml({.shutdown_on_destroy = true})
                                  : nvml::open_fake_source(options.test_gpu_source);
  char request = 0;
  for (;;) {
    const ssize_t n = ::read(requests, &request, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const std::string line = answer_json(opened, request == kDetailsRequest)
                                 .dump(-1, ' ', false, json::error_handler_t::replace) +
                             "\n";
    if (!write_all(answers, line)) break;
  }
  opened = {};
  ::_exit(0);
}

}  // namespace

SamplerAnswer parse_sampler_answer(std::string_view line) {
  // An exception here would leave run's supervision by way of its epoll loop: whatever the
  // line is, it becomes an answer. Only running out of memory is not ours to swallow.
  try {
    const json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) return failed("the GPU sampler's answer is not JSON");
    const json* state = doc.contains("state") ? &doc["state"] : nullptr;
    const json* message = doc.contains("message") ? &doc["message"] : nullptr;
    if ((state != nullptr && !state->is_string()) ||
        (message != nullptr && !message->is_string())) {
      return failed("the GPU sampler's answer is malformed");
    }
    SamplerAnswer answer;
    answer.state = nvml_state_from_string(state != nullptr ? state->get<std::string>() : "failed")
                       .value_or(NvmlState::kFailed);
    if (message != nullptr) answer.message = message->get<std::string>();
    if (answer.state == NvmlState::kPresent && doc.contains("view")) {
      answer.view = nvml::gpu_view_from_json(doc["view"]);
      for (const json& d : doc.value("details", json::array())) {
        answer.details.push_back(nvml::gpu_details_from_json(d));
      }
    }
    return answer;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return failed(std::string("the GPU sampler's answer is malformed: ") + e.what());
  }
}

Result<std::shared_ptr<GpuSampler>> GpuSampler::start(const CollectOptions& options,
                                                      Ending ending) {
  std::array<int, 2> requests{};
  std::array<int, 2> answers{};
  if (::pipe2(requests.data(), O_CLOEXEC) != 0) return errno_error("pipe2");
  UniqueFd request_read(requests[0]);
  UniqueFd request_write(requests[1]);
  if (::pipe2(answers.data(), O_CLOEXEC) != 0) return errno_error("pipe2");
  UniqueFd answer_read(answers[0]);
  UniqueFd answer_write(answers[1]);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return errno_error("fork (GPU sampler)");
  if (pid == 0) {
    // Ends with gpuclean, whatever ends gpuclean.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(0);
    // It shares gpuclean's process group: a terminal's ^C or ^Z is for the workload (and for
    // gpuclean, which forwards it), not for the sampler, which must answer until the end.
    for (int signo : {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU}) {
      (void)::signal(signo, SIG_IGN);
    }
    request_write.reset();  // else the sampler would never see EOF on its requests
    answer_read.reset();
    serve(options, request_read.get(), answer_write.get());
  }
  // Ours and unreaped: the PID cannot be reused before this.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    const Error error = errno_error("pidfd_open (GPU sampler)");
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return error;
  }
  ::fcntl(answer_read.get(), F_SETFL, O_NONBLOCK);
  // Its identity for the teardown's exclusion: PID and start time (the pidfd pins the PID).
  std::string stat;
  const std::string stat_path = "/proc/" + std::to_string(pid) + "/stat";
  std::uint64_t start_ticks = 0;
  if (procfs::read_file_at(AT_FDCWD, stat_path.c_str(), stat)) {
    if (auto fields = procfs::parse_stat(stat); fields.ok()) start_ticks = fields->start_ticks;
  }
  return std::shared_ptr<GpuSampler>(new GpuSampler(pid, start_ticks, std::move(pidfd),
                                                    std::move(request_write),
                                                    std::move(answer_read), ending));
}

GpuSampler::~GpuSampler() {
  // EOF on its requests: a healthy sampler shuts NVML down and exits; give it a moment — unless
  // gpuclean is about to exit anyway (kAbandon): PR_SET_PDEATHSIG would end it then too.
  to_child_.reset();
  if (ending_ == Ending::kAbandon) {
    // gpuclean exits now: its exit is not worth waiting for (closing the driver's files takes
    // a few ms, as long as nvmlShutdown). The zombie goes to init with gpuclean's exit.
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    return;
  }
  pollfd exited{pidfd_.get(), POLLIN, 0};
  if (::poll(&exited, 1, 200) != 1) {
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    // A sampler stuck in the driver (D state) cannot die yet: never block on it.
    if (::poll(&exited, 1, 100) != 1) return;
  }
  ::waitpid(pid_, nullptr, WNOHANG);
}

void GpuSampler::request(bool details) {
  if (outstanding_ || gone_) return;
  outstanding_ =
      write_all(to_child_.get(), std::string(1, details ? kDetailsRequest : kViewRequest));
  if (!outstanding_) gone_ = true;  // EPIPE: the sampler is gone (gpuclean ignores SIGPIPE)
}

std::optional<SamplerAnswer> GpuSampler::receive() {
  std::array<char, 65536> chunk{};
  for (;;) {
    const ssize_t n = ::read(from_child_.get(), chunk.data(), chunk.size());
    if (n > 0) {
      buffer_.append(chunk.data(), static_cast<std::size_t>(n));
      if (buffer_.size() > kMaxAnswerBytes && buffer_.find('\n') == std::string::npos) {
        // A view of every GPU is a few KiB: this is not an answer. Drop it, say so.
        buffer_.clear();
        outstanding_ = false;
        return failed("the GPU sampler's answer is too long");
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) gone_ = true;  // EOF: the sampler exited
    break;                     // EAGAIN: nothing more for now
  }
  const std::size_t newline = buffer_.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  SamplerAnswer answer = parse_sampler_answer(std::string_view(buffer_).substr(0, newline));
  buffer_.erase(0, newline + 1);
  outstanding_ = false;
  return answer;
}

SamplerAnswer GpuSampler::query(Duration timeout, bool details) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // The answer to a request made before this call (a periodic sample, or a query that timed
  // out) is older than the caller wants: wait it out, then ask afresh.
  for (bool fresh = !outstanding_;; fresh = true) {
    request(details);
    for (;;) {
      if (auto answer = receive()) {
        if (fresh) return *answer;
        break;
      }
      if (gone_) return failed("the GPU sampler exited");
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        // Still outstanding: the next query waits this answer out first.
        std::ostringstream said;
        said << "NVML did not answer in " << static_cast<double>(timeout.count()) / 1000.0
             << " s (the driver may be hung)";
        return failed(said.str());
      }
      pollfd ready{from_child_.get(), POLLIN, 0};
      if (::poll(&ready, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
        return failed("poll on the GPU sampler failed");
      }
    }
  }
}

namespace {

class SamplerSource : public nvml::GpuSource {
 public:
  // `first`: the answer that opened the source, given by the first query() (a one-shot
  // command asks NVML once, not twice).
  SamplerSource(std::shared_ptr<GpuSampler> sampler, Duration timeout, bool details,
                SamplerAnswer first)
      : sampler_(std::move(sampler)),
        timeout_(timeout),
        details_wanted_(details),
        first_(std::move(first)) {}
  Result<GpuView> query() override {
    SamplerAnswer answer;
    if (first_) {
      answer = std::move(*first_);
      first_.reset();
    } else {
      answer = sampler_->query(timeout_, details_wanted_);
    }
    details_ = std::move(answer.details);
    if (answer.view) return std::move(*answer.view);
    return Error{0, answer.message};
  }
  // The details that came with the last view (asked for together: one round trip).
  std::vector<GpuDetails> query_details() override { return details_; }

 private:
  std::shared_ptr<GpuSampler> sampler_;
  Duration timeout_;
  bool details_wanted_;
  std::optional<SamplerAnswer> first_;
  std::vector<GpuDetails> details_;
};

}  // namespace

nvml::OpenedSource open_sampler_source(const std::shared_ptr<GpuSampler>& sampler, Duration timeout,
                                       bool details) {
  nvml::OpenedSource opened;
  SamplerAnswer first = sampler->query(timeout, details);
  opened.message = first.message;
  if (first.state == NvmlState::kAbsent) {
    opened.state = nvml::OpenedSource::State::kAbsent;
  } else if (first.state != NvmlState::kPresent) {
    opened.state = nvml::OpenedSource::State::kFailed;
  } else {
    opened.state = nvml::OpenedSource::State::kPresent;
    opened.source = std::make_unique<SamplerSource>(sampler, timeout, details, std::move(first));
  }
  return opened;
}

}  // namespace gpuclean::collect
