#include "input/kill_plan_reader.h"

#include <cstdint>
#include <limits>

#include "input/json_reader.h"

namespace gpuclean::input {

namespace {

std::optional<Owner> read_owner(JsonReader& r, const nlohmann::json& parent,
                                const std::string& path) {
  const nlohmann::json* o = r.object(parent, "owner", path);
  if (o == nullptr) return std::nullopt;
  const std::string here = path + ".owner";
  Owner owner;
  set_if_present(owner.kind, r.choice(*o, "kind", here, owner_kind_from_string));
  set_if_present(owner.id, r.string(*o, "id", here));
  owner.step = r.string(*o, "step", here);
  owner.unit = r.string(*o, "unit", here);
  owner.pod_uid = r.string(*o, "pod_uid", here);
  owner.qos = r.string(*o, "qos", here);
  owner.runtime = r.string(*o, "runtime", here);
  set_if_present(owner.full_id, r.string(*o, "full_id", here));
  return owner;
}

KillTarget read_target(JsonReader& r, const nlohmann::json& t, const std::string& path) {
  KillTarget target;
  ProcessInfo& p = target.process;
  set_if_present(p.pid, r.count<Pid>(t, "pid", path));
  set_if_present(p.start_ticks, r.count<std::uint64_t>(t, "start_ticks", path));
  set_if_present(p.ppid, r.count<Pid>(t, "ppid", path));
  set_if_present(p.user, r.string(t, "user", path));
  if (auto state = r.string(t, "state", path); state && state->size() == 1) {
    p.state = state->front();
  } else if (state) {
    r.report(path + ".state", "expected one letter, found \"" + *state + "\"");
  }
  // Only the count is written: the row shows a multi-threaded group's "l".
  p.threads.resize(r.count<std::size_t>(t, "threads", path).value_or(0));
  set_if_present(target.klass, r.choice(t, "class", path, holder_class_from_string));
  set_if_present(target.why, r.string(t, "why", path));
  set_if_present(p.comm, r.string(t, "comm", path));
  set_if_present(p.cmdline, r.strings(t, "cmdline", path));
  p.owner = read_owner(r, t, path);
  target.inherited_from = r.count<Pid>(t, "inherited_from", path);
  target.gpu_memory = r.gpu_memory(t, path);
  return target;
}

}  // namespace

Result<KillDryRun> parse_kill_dry_run(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error{0, "not a JSON object"};
  JsonReader r;
  if (!r.boolean(doc, "dry_run", "").value_or(false)) {
    return Error{0, "not a kill --dry-run document (no \"dry_run\": true)"};
  }
  KillDryRun dry_run;
  if (const nlohmann::json* steps = r.object(doc, "steps", "")) {
    KillSteps& s = dry_run.steps;
    set_if_present(s.signal, r.integer(*steps, "signal", "steps"));
    set_if_present(s.signal_name, r.string(*steps, "signal_name", "steps"));
    set_if_present(s.kill9, r.boolean(*steps, "kill9", "steps"));
    set_if_present(s.grace_ms, r.count<long long>(*steps, "grace_ms", "steps"));
    set_if_present(s.wait_ms, r.count<long long>(*steps, "wait_ms", "steps"));
  }
  r.each(doc, "targets", "", [&](const nlohmann::json& t, const std::string& path) {
    dry_run.plan.targets.push_back(read_target(r, t, path));
  });
  r.each(doc, "skipped", "", [&](const nlohmann::json& s, const std::string& path) {
    KillSkip skip;
    set_if_present(skip.pid, r.count<Pid>(s, "pid", path));
    set_if_present(skip.reason, r.string(s, "reason", path));
    dry_run.plan.skipped.push_back(std::move(skip));
  });
  if (const nlohmann::json* not_found = r.array(doc, "not_found", "")) {
    for (const nlohmann::json& pid : *not_found) {
      const auto value = JsonReader::non_negative(pid);
      if (!value || *value > static_cast<std::uint64_t>(std::numeric_limits<Pid>::max())) {
        r.report("not_found", "expected PIDs");
        break;
      }
      dry_run.plan.not_found.push_back(static_cast<Pid>(*value));
    }
  }
  set_if_present(dry_run.plan.confirm_reasons, r.strings(doc, "confirm_reasons", ""));
  if (r.failed()) return Error{0, r.error()};
  return dry_run;
}

}  // namespace gpuclean::input
