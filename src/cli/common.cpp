#include "cli/common.h"

#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/whole_number.h"

#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

namespace gpuclean::cli {

int exit_code_of(const collect::GatherError& error) {
  return error.usage ? kExitUsage : kExitRuntime;
}

namespace {

// "0000:c3:00.0" from NVML's "00000000:C3:00.0" or a DRM "0000:c3:00.0": lower case, a
// four-digit domain.
std::string normal_pci_address(std::string_view address) {
  std::string out;
  for (char c : address) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t colon = out.find(':');
  if (colon != std::string::npos && colon > 4 && out.find_first_not_of('0') >= colon - 4) {
    out.erase(0, colon - 4);
  }
  return out;
}

}  // namespace

std::optional<int> open_gatherer(const collect::CollectOptions& options, const Io& io,
                                 std::unique_ptr<collect::Gatherer>& gatherer,
                                 std::string_view topic) {
  auto opened = collect::Gatherer::open(options);
  if (auto* error = std::get_if<collect::GatherError>(&opened)) {
    say(io.err, topic) << error->message << '\n';
    return exit_code_of(*error);
  }
  gatherer = std::move(std::get<0>(opened));
  return std::nullopt;
}

bool names_pci_address(const std::string& text) {
  return text.find(':') != std::string::npos;
}

Result<std::optional<std::set<unsigned>>> parse_gpu_list(const std::string& text,
                                                         const GpuView* view) {
  if (text == "all") return std::optional<std::set<unsigned>>();
  std::set<unsigned> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto number = [](std::string_view s) -> std::optional<unsigned> {
      const auto v = whole_number<unsigned>(s);
      return v && *v <= 1023 ? v : std::nullopt;
    };
    const std::size_t dash = part.find('-');
    if (part.find(':') != std::string::npos) {
      if (view == nullptr) {
        return Error{0, "--gpus: '" + part +
                            "' is a PCI address: status, check, wait and snapshot take one; "
                            "kill, run, top and recorder take the index status shows"};
      }
      const std::string wanted = normal_pci_address(part);
      auto gpu = std::find_if(view->gpus.begin(), view->gpus.end(), [&wanted](const Gpu& g) {
        return normal_pci_address(g.pci_bus_id) == wanted;
      });
      if (gpu == view->gpus.end()) {
        return Error{0, "--gpus: no GPU at PCI address '" + part + "'"};
      }
      out.insert(gpu->index);
    } else if (dash == std::string::npos) {
      auto v = number(part);
      if (!v) return Error{0, "--gpus: '" + part + "' is not a GPU index (use 0,2 or 0-3 or all)"};
      out.insert(*v);
    } else {
      auto lo = number(std::string_view(part).substr(0, dash));
      auto hi = number(std::string_view(part).substr(dash + 1));
      if (!lo || !hi || *lo > *hi) {
        return Error{0, "--gpus: '" + part + "' is not a range (use 0-3)"};
      }
      for (unsigned i = *lo; i <= *hi; ++i) out.insert(i);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::optional<std::set<unsigned>>(std::move(out));
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

int terminal_columns(int fd, int fallback) {
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && *columns != '\0') {
    int value = 0;
    const char* end = columns + std::char_traits<char>::length(columns);
    const auto [ptr, ec] = std::from_chars(columns, end, value);
    if (ec == std::errc{} && ptr == end && value > 0) return std::max(value, 20);
  }
  winsize size{};
  if (::isatty(fd) == 1 && ::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  return fallback;
}

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
  fd_.reset(::signalfd(-1, &signals_, SFD_NONBLOCK | SFD_CLOEXEC));
}

StopSignals::~StopSignals() {
  signalfd_siginfo info{};
  while (fd_.valid() && ::read(fd_.get(), &info, sizeof(info)) > 0) {
  }
  ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

}  // namespace gpuclean::cli
