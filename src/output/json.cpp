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

nlohmann::json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json() : nlohmann::json(text);
}

nlohmann::json gpu_memory_json(const std::map<unsigned, Bytes>& memory) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [gpu, bytes] : memory) out[std::to_string(gpu)] = bytes;
  return out;
}

nlohmann::json document_header(const std::string& host, double now) {
  return {{"schema", kSchemaVersion}, {"host", host}, {"time", rfc3339(now)}};
}

// A DRM node's kind and GPU ({"kind": "render", "pci_address": "0000:c3:00.0"}), or null.
nlohmann::json to_json(const std::optional<DrmNode>& node) {
  if (!node) return nullptr;
  nlohmann::json out{{"kind", to_string(node->kind)}};
  out["pci_address"] = text_or_null(node->pci_address);
  return out;
}

nlohmann::json to_json(const DeviceFile& file) {
  nlohmann::json out{{"path", file.path}};
  out["nvidia_minor"] = or_null(file.nvidia_minor);
  out["drm"] = to_json(file.drm);
  // The device number a holder is matched by ("195:0"), for device nodes; null otherwise.
  if (file.identity && file.identity->kind != FileIdentity::Kind::kOther) {
    out["device_number"] =
        std::to_string(file.identity->rdev_major) + ":" + std::to_string(file.identity->rdev_minor);
  } else {
    out["device_number"] = nullptr;
  }
  return out;
}

nlohmann::json to_json(const Owner& owner) {
  nlohmann::json out{{"kind", to_string(owner.kind)}, {"id", owner.id}};
  out["step"] = or_null(owner.step);
  out["unit"] = or_null(owner.unit);
  out["pod_uid"] = or_null(owner.pod_uid);
  out["qos"] = or_null(owner.qos);
  out["runtime"] = or_null(owner.runtime);
  out["full_id"] = text_or_null(owner.full_id);
  return out;
}

nlohmann::json to_json(const Holder& holder) {
  const ProcessInfo& p = holder.process;
  nlohmann::json out{{"pid", p.pid},    {"ppid", p.ppid},       {"pgid", p.pgid},
                     {"sid", p.sid},    {"user", p.user},       {"state", std::string(1, p.state)},
                     {"comm", p.comm},  {"cmdline", p.cmdline}, {"class", to_string(holder.klass)},
                     {"nspid", p.nspid}};
  out["uid"] = or_null(p.uid);
  out["start_time"] = p.start_time ? nlohmann::json(rfc3339(*p.start_time)) : nlohmann::json();
  // The identity `kill PID@START` takes; start_time's whole seconds cannot tell reused PIDs apart.
  out["start_ticks"] = p.start_ticks != 0 ? nlohmann::json(p.start_ticks) : nlohmann::json();
  out["cgroup"] = or_null(p.cgroup);
  out["owner"] = p.owner ? to_json(*p.owner) : nlohmann::json();
  out["memory_map_locked"] = p.memory_map_locked;
  // Class frozen: the frozen group and the command that thaws it (gpuclean never runs it).
  if (p.frozen) {
    out["frozen"] = {{"cgroup_version", to_string(p.frozen->version)},
                     {"directory", p.frozen->directory},
                     {"frozen_by", p.frozen->frozen_by},
                     {"thaw", thaw_command(*p.frozen)}};
  } else {
    out["frozen"] = nullptr;
  }
  out["inherited_from"] = or_null(holder.inherited_from);
  out["evidence"] = holder.heir ? to_json(*holder.heir) : nlohmann::json();
  // The node's GPU services, and MPS clients: "mps-client" with the server's PID when known.
  if (holder.service) {
    out["role"] = to_string(*holder.service);
    out["executable"] = holder.executable;
  } else {
    out["role"] = holder.mps_client ? nlohmann::json("mps-client") : nlohmann::json();
    out["executable"] = nlohmann::json();
  }
  out["mps_server"] = or_null(holder.mps_server);
  if (holder.activity) {
    out["activity"] = {{"sm", holder.activity->sm},
                       {"mem", holder.activity->mem},
                       {"idle_s", or_null(holder.activity->idle_s)}};
  } else {
    out["activity"] = nullptr;
  }

  nlohmann::json devices = nlohmann::json::array();
  for (const HeldFile& file : holder.devices) {
    nlohmann::json d{{"path", file.path},
                     {"fds", file.fds},
                     {"access", access_letters(file)},
                     {"mapped", file.mapped},
                     {"deleted", file.deleted}};
    d["via_thread"] = or_null(file.via_thread);
    d["nvidia_minor"] = or_null(file.nvidia_minor);
    // Another path to the same file (a second node, a bind mount, another mount namespace).
    d["opened_as"] = or_null(file.opened_as);
    d["drm"] = to_json(file.drm);
    if (file.drm) {
      nlohmann::json clients = nlohmann::json::array();
      for (const DrmClient& c : file.drm_clients) {
        nlohmann::json client{{"driver", c.driver}, {"pdev", c.pdev}};
        client["client_id"] = or_null(c.client_id);
        client["vram"] = or_null(c.vram);
        clients.push_back(std::move(client));
      }
      d["drm"]["clients"] = std::move(clients);
    }
    devices.push_back(std::move(d));
  }
  out["devices"] = std::move(devices);

  out["gpu_memory"] = gpu_memory_json(holder.gpu_memory);

  nlohmann::json threads = nlohmann::json::array();
  for (const ThreadInfo& t : p.threads) {
    // stays_in_d: still in D when re-read ~200 ms later (what makes a holder stuck).
    threads.push_back({{"tid", t.tid},
                       {"state", std::string(1, t.state)},
                       {"wchan", t.wchan},
                       {"stays_in_d", t.stays_in_d}});
  }
  out["threads"] = std::move(threads);
  return out;
}

nlohmann::json to_json(const HeirEvidence& evidence) {
  return {{"kind", to_string(evidence.kind)},
          {"dead_owner", evidence.dead_owner},
          {"text", describe(evidence)}};
}

nlohmann::json to_json(const DeadOwner& owner) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const DeadOwner::Candidate& c : owner.candidates) {
    candidates.push_back({{"pid", c.pid}, {"evidence", to_string(c.evidence.kind)}});
  }
  nlohmann::json out{{"pid", owner.pid},
                     {"gpu_memory", gpu_memory_json(owner.gpu_memory)},
                     {"candidates", std::move(candidates)},
                     {"ambiguous", owner.ambiguous},
                     {"pid_handed_on", owner.pid_handed_on}};
  out["heir"] = or_null(owner.heir);
  out["why_no_heir"] = owner.ambiguous ? nlohmann::json(owner.ambiguity) : nlohmann::json();
  return out;
}

nlohmann::json to_json(const Gpu& gpu) {
  nlohmann::json out{
      {"index", gpu.index}, {"uuid", gpu.uuid}, {"name", gpu.name}, {"pci_bus_id", gpu.pci_bus_id}};
  out["source"] = to_string(gpu.source);
  out["driver"] = text_or_null(gpu.driver);
  out["minor"] = or_null(gpu.minor);
  if (gpu.memory) {
    out["memory"] = {{"total", gpu.memory->total},
                     {"used", gpu.memory->used},
                     {"free", gpu.memory->free},
                     {"reserved", or_null(gpu.memory->reserved)}};
  } else {
    out["memory"] = nullptr;
  }
  out["persistence_mode"] = or_null(gpu.persistence_mode);
  out["compute_mode"] = or_null(gpu.compute_mode);
  out["mig_enabled"] = or_null(gpu.mig_enabled);
  nlohmann::json processes = nlohmann::json::array();
  for (const GpuProcess& p : gpu.processes) {
    processes.push_back(
        {{"pid", p.pid}, {"used_memory", or_null(p.used_memory)}, {"kind", to_string(p.kind)}});
  }
  out["processes"] = std::move(processes);
  out["utilization"] = or_null(gpu.utilization);
  out["temperature_c"] = or_null(gpu.temperature_c);
  out["power_mw"] = or_null(gpu.power_mw);
  if (gpu.activity) {
    nlohmann::json samples = nlohmann::json::array();
    for (const ProcessSample& s : gpu.activity->samples) {
      nlohmann::json sample = {{"pid", s.pid}, {"sm", s.sm}, {"mem", s.mem}};
      // When the driver took it (Unix seconds), where known: the time that decides whether
      // a process's activity is sustained (diagnose/activity.h).
      sample["time"] =
          s.time_us > 0 ? nlohmann::json(static_cast<double>(s.time_us) / 1e6) : nlohmann::json();
      samples.push_back(std::move(sample));
    }
    out["activity"] = {{"source", gpu.activity->source}, {"samples", std::move(samples)}};
    out["activity_unavailable"] = nullptr;
  } else {
    out["activity"] = nullptr;
    out["activity_unavailable"] = text_or_null(gpu.activity_unavailable);
  }
  return out;
}

nlohmann::json to_json(const GpuReport& report) {
  nlohmann::json out = to_json(report.gpu);
  if (out["memory"].is_object()) {
    out["memory"]["attributed"] = report.attributed;
    out["memory"]["unattributed"] = report.unattributed;
  }
  return out;
}

nlohmann::json to_json(const GpuView& view) {
  nlohmann::json out{{"driver_version", view.driver_version},
                     {"nvml_version", view.nvml_version},
                     {"cuda_driver_version", or_null(view.cuda_driver_version)}};
  out["gpus"] = to_json_array(view.gpus);
  return out;
}

nlohmann::json to_json(const Problem& problem) {
  return {{"kind", to_string(problem.kind)}, {"severity", to_string(problem.severity)},
          {"gpu", or_null(problem.gpu)},     {"pid", or_null(problem.pid)},
          {"message", problem.message},      {"fix", problem.fix},
          {"bytes", or_null(problem.bytes)}, {"descendants", problem.descendants},
          {"computing", problem.computing}};
}

nlohmann::json to_json(const ScanStats& stats) {
  return {{"processes", stats.processes},
          {"vanished", stats.vanished},
          {"unreadable", stats.denied},
          {"unreadable_other_users", stats.denied_other_users},
          {"unreadable_sample", stats.denied_pids},
          {"incomplete", stats.incomplete},
          {"incomplete_sample", stats.incomplete_pids},
          {"memory_map_locked", stats.locked_pids},
          {"as_root", stats.as_root},
          {"may_read_all", stats.may_read_all},
          {"map_files_read", stats.map_files_read},
          {"seconds", stats.seconds}};
}

void write_json(std::ostream& out, const nlohmann::json& document) {
  out << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace gpuclean::output
