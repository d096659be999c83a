#include "diagnose/leftover_gauge.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

#include "core/leftover_cost.h"

namespace gpuclean::diagnose {

LeftoverSeries leftover_gauge(const Diagnosis& diagnosis, Bytes unattributed_floor) {
  LeftoverSeries gauge;
  const std::string none(kNoOwnerKind);
  for (std::string_view klass : kLeftoverClasses) gauge[{std::string(klass), none}] = 0;
  const LeftoverKey unattributed{std::string(kUnattributedClass), none};
  gauge[unattributed] = 0;

  // Only the selected GPUs (diagnosis.gpus): a holder's NVML figures may name others.
  std::set<unsigned> selected;
  for (const GpuReport& gpu : diagnosis.gpus) selected.insert(gpu.gpu.index);
  for (const Holder& member : diagnosis.holders) {
    // A dead job is a tree: its workers (active: their parent, the job's root, lives) count
    // with it, under the root's class and owner (the problem that names them, dead_job_root).
    const Holder* root = &member;
    if (!is_leftover_class(to_string(member.klass))) {
      const auto root_pid = dead_job_root(diagnosis, member.process.pid);
      const auto it =
          root_pid ? std::find_if(diagnosis.holders.begin(), diagnosis.holders.end(),
                                  [&](const Holder& h) { return h.process.pid == *root_pid; })
                   : diagnosis.holders.end();
      if (it == diagnosis.holders.end() || !is_leftover_class(to_string(it->klass))) continue;
      root = &*it;
    }
    std::string klass = to_string(root->klass);
    Bytes held = 0;
    for (const auto& [gpu, bytes] : member.gpu_memory) {
      if (selected.count(gpu) > 0) held += bytes;
    }
    const std::optional<Owner>& owner = root->process.owner;
    std::string kind =
        owner_kind_of(owner ? std::string(to_string(owner->kind)) + ":" + owner->id : "");
    gauge[{std::move(klass), std::move(kind)}] += static_cast<double>(held);
  }
  for (const GpuReport& gpu : diagnosis.gpus) {
    if (gpu.unattributed > unattributed_floor) {
      gauge[unattributed] += static_cast<double>(gpu.unattributed);
    }
  }
  return gauge;
}

LeftoverSeries add_leftover_look(const LeftoverSeries& totals,
                                 const std::optional<LeftoverLook>& previous,
                                 const LeftoverLook& now) {
  LeftoverSeries next = totals;
  for (const auto& entry : now.bytes) next.try_emplace(entry.first, 0.0);
  if (!previous) return next;
  for (const auto& entry : previous->bytes) next.try_emplace(entry.first, 0.0);
  const double gap = now.time - previous->time;
  // Written so that a NaN gap (never from gpuclean's own times) adds nothing too.
  if (!(gap >= 0 && gap <= kLeftoverMaxGapSeconds)) return next;
  for (const auto& [key, bytes] : previous->bytes) next[key] += bytes * gap;
  return next;
}

namespace {

constexpr std::string_view kGaugeName = "gpuclean_leftover_memory_bytes";
constexpr std::string_view kCounterName = "gpuclean_leftover_memory_byte_seconds_total";
constexpr std::string_view kTimeName = "gpuclean_last_scan_timestamp_seconds";

// A sample's value as gpuclean writes them: a finite number, not negative, and nothing after.
std::optional<double> record_value(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at != end || !std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

// `NAME="VALUE"` at the start of `text` (no escapes: gpuclean's values have none); the rest of
// the text after it in `text`.
std::optional<std::string_view> record_label(std::string_view& text, std::string_view name) {
  if (!text.starts_with(name) || text.substr(name.size()).substr(0, 2) != "=\"") {
    return std::nullopt;
  }
  text.remove_prefix(name.size() + 2);
  const auto close = text.find('"');
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view value = text.substr(0, close);
  if (value.find('\\') != std::string_view::npos) return std::nullopt;
  text.remove_prefix(close + 1);
  return value;
}

bool known_class(std::string_view klass) {
  return is_leftover_class(klass) || klass == kUnattributedClass;
}

bool known_owner_kind(std::string_view kind) {
  return kind == kNoOwnerKind || owner_kind_from_string(kind).has_value();
}

// `{class="C",owner_kind="K"} VALUE` (after the metric's name) into `into`; false when the line
// is not that, or the series is there already.
bool record_series(std::string_view rest, LeftoverSeries& into) {
  if (!rest.starts_with('{')) return false;
  rest.remove_prefix(1);
  const auto klass = record_label(rest, "class");
  if (!klass || !rest.starts_with(',')) return false;
  rest.remove_prefix(1);
  const auto kind = record_label(rest, "owner_kind");
  if (!kind || !rest.starts_with("} ")) return false;
  const auto value = record_value(rest.substr(2));
  if (!value || !known_class(*klass) || !known_owner_kind(*kind)) return false;
  return into.try_emplace({std::string(*klass), std::string(*kind)}, *value).second;
}

// One line of the file: false when it is one of the three metrics' samples and malformed.
bool record_line(std::string_view line, LeftoverRecord& record, bool& has_time) {
  if (line.empty() || line.starts_with('#')) return true;
  const std::string_view name = line.substr(0, line.find_first_of("{ "));
  const std::string_view rest = line.substr(name.size());
  if (name == kGaugeName) return record_series(rest, record.look.bytes);
  if (name == kCounterName) return record_series(rest, record.byte_seconds);
  if (name != kTimeName) return true;  // another metric: not ours to judge
  const auto time = rest.starts_with(' ') ? record_value(rest.substr(1)) : std::nullopt;
  if (!time || has_time) return false;
  record.look.time = *time;
  has_time = true;
  return true;
}

}  // namespace

std::optional<LeftoverRecord> parse_leftover_record(std::string_view exposition) {
  LeftoverRecord record;
  bool has_time = false;
  while (!exposition.empty()) {
    const auto newline = exposition.find('\n');
    const std::string_view line = exposition.substr(0, newline);
    exposition.remove_prefix(newline == std::string_view::npos ? exposition.size() : newline + 1);
    if (!record_line(line, record, has_time)) return std::nullopt;
  }
  if (!has_time || record.look.bytes.empty() || record.byte_seconds.empty()) return std::nullopt;
  return record;
}

}  // namespace gpuclean::diagnose
