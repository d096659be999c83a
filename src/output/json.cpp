#include "output/json.h"

#include <cmath>
#include <ctime>

namespace gpuclean::output {
namespace {

std::string access_letters(const HeldFile& file) {
  std::string access;
  if (file.readable) access += 'r';
  if (file.writable) access += 'w';
  return access;
}

}  // namespace

std::string rfc3339(double unix_seconds) {
  const std::time_t seconds = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm utc{};
  if (gmtime_r(&seconds, &utc) == nullptr) return "";
  char buffer[32];
  const std::size_t length = std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(buffer, length);
}

nlohmann::json document_header(const std::string& host, double now) {
  return {{"schema", kSchemaVersion}, {"host", host}, {"time", rfc3339(now)}};
}

nlohmann::json to_json(const DeviceFile& file) {
  nlohmann::json out{{"path", file.path}};
  out["nvidia_minor"] = file.nvidia_minor ? nlohmann::json(*file.nvidia_minor) : nlohmann::json();
  return out;
}

nlohmann::json to_json(const Holder& holder) {
  const ProcessInfo& p = holder.process;
  nlohmann::json out{{"pid", p.pid},    {"ppid", p.ppid},       {"pgid", p.pgid},
                     {"sid", p.sid},    {"user", p.user},       {"state", std::string(1, p.state)},
                     {"comm", p.comm},  {"cmdline", p.cmdline}, {"class", to_string(holder.klass)},
                     {"nspid", p.nspid}};
  out["uid"] = p.uid ? nlohmann::json(*p.uid) : nlohmann::json();
  out["start_time"] = p.start_time ? nlohmann::json(rfc3339(*p.start_time)) : nlohmann::json();
  out["cgroup"] = p.cgroup ? nlohmann::json(*p.cgroup) : nlohmann::json();

  nlohmann::json devices = nlohmann::json::array();
  for (const HeldFile& file : holder.devices) {
    nlohmann::json d{{"path", file.path},
                     {"fds", file.fds},
                     {"access", access_letters(file)},
                     {"mapped", file.mapped},
                     {"deleted", file.deleted}};
    d["via_thread"] = file.via_thread ? nlohmann::json(*file.via_thread) : nlohmann::json();
    d["nvidia_minor"] = file.nvidia_minor ? nlohmann::json(*file.nvidia_minor) : nlohmann::json();
    devices.push_back(std::move(d));
  }
  out["devices"] = std::move(devices);

  nlohmann::json memory = nlohmann::json::object();
  for (const auto& [gpu, bytes] : holder.gpu_memory) memory[std::to_string(gpu)] = bytes;
  out["gpu_memory"] = std::move(memory);

  nlohmann::json threads = nlohmann::json::array();
  for (const ThreadInfo& t : p.threads) {
    threads.push_back({{"tid", t.tid}, {"state", std::string(1, t.state)}, {"wchan", t.wchan}});
  }
  out["threads"] = std::move(threads);
  return out;
}

nlohmann::json to_json(const ScanStats& stats) {
  return {{"processes", stats.processes},
          {"vanished", stats.vanished},
          {"unreadable", stats.denied},
          {"unreadable_sample", stats.denied_pids},
          {"seconds", stats.seconds}};
}

void write_json(std::ostream& out, const nlohmann::json& document) {
  out << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace gpuclean::output
