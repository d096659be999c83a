#include "recorder/recorder.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#ifdef GPUCLEAN_METRICS
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#endif

#include "core/atomic_file.h"
#include "core/exit_code.h"
#include "core/unique_fd.h"
#include "diagnose/leftover_cost.h"
#include "history/event_store.h"
#include "procfs/host_facts.h"
#include "procfs/proc_fs.h"
#include "procfs/user_names.h"
#include "recorder/action_socket.h"
#include "recorder/holder_budget.h"
#include "recorder/journal.h"
#include "recorder/proc_events.h"
#include "recorder/xid_follower.h"

namespace gpuclean::recorder {
namespace {

// Events kept in memory while the database cannot take them; the oldest go beyond this.
constexpr std::size_t kMaxPending = 100000;
// Actions taken from the socket per look: a flood from a local user is counted, not stored.
constexpr std::size_t kMaxActionsPerLook = 256;
// How often events older than the retention are deleted (size is checked after every write).
constexpr auto kPruneEvery = std::chrono::minutes(10);
constexpr auto kHealthEvery = std::chrono::seconds(10);
// A user other than root gets this many actions recorded a minute: a local flood must not push
// the real history out through --max-size (root's actions are only under the per-look cap).
constexpr unsigned kActionsPerUserMinute = 60;
// Where an action's own text is cut when it is not a JSON object.
constexpr std::size_t kMaxRawActionText = 1024;

using Clock = std::chrono::steady_clock;

// What a restarted recorder knew: the holders of this boot that never left.
diagnose::RecorderState resumed(const std::vector<history::HeldAt>& open) {
  diagnose::RecorderState state;  // memory_known: the figures are those recorded
  for (const history::HeldAt& held : open) {
    diagnose::RecordedHolder holder;
    holder.process = held.process;
    holder.klass = holder_class_from_string(held.klass).value_or(HolderClass::kActive);
    holder.gpu_memory = held.gpu_memory;
    holder.recorded_memory = held.gpu_memory;  // the figures the history holds
    // The activity the history holds: a holder idle since before the restart is not recorded
    // idle again (issue 49: it was, and idle_s counted from the restart).
    if (!held.activity.empty()) {
      holder.recorded_activity = held.activity.substr(0, held.activity.find(' '));
      holder.activity = holder.recorded_activity;
      holder.activity_detail = held.activity;
    }
    state.holders.emplace(diagnose::ProcessKey{held.process.pid, held.process.start_ticks},
                          std::move(holder));
  }
  return state;
}

class Recorder {
 public:
  Recorder(const RecorderSettings& settings, collect::Gatherer& gatherer, std::ostream& log)
      : settings_(settings), gatherer_(gatherer), log_(log), journal_(settings.journal_socket) {}
  int run(int signal_fd);

 private:
  void start();
  void look();
  void take_actions();
  HistoryEvent action_event(const ReceivedAction& action);
  void keep(std::vector<HistoryEvent> events);
  void flush();
  bool open_store();
  void store_failed(const Error& error);
  void prune(bool by_age);
  void write_health();
  void say(const std::string& line) { log_ << "gpuclean recorder: " << line << '\n' << std::flush; }
  void add_parents(diagnose::RecorderState& now) const;
  std::map<Pid, ProcessInfo> parents_of_new(const Diagnosis& diagnosis) const;

  const RecorderSettings& settings_;
  collect::Gatherer& gatherer_;
  std::ostream& log_;
  JournalSink journal_;
  std::optional<history::EventStore> store_;
  std::optional<ActionListener> listener_;
  // Root's own socket (0600): never crowded out by others' datagrams, nor counted against
  // their caps (issue 49).
  std::optional<ActionListener> privileged_listener_;
  std::unique_ptr<ProcEvents> proc_events_;
  std::optional<XidFollower> xids_;
  void xid_events(const std::vector<GpuReport>& gpus, double now, std::vector<HistoryEvent>& out);
  procfs::UserNames user_names_;
  std::string boot_id_;
  diagnose::RecorderState state_;
  std::deque<HistoryEvent> pending_;
  RecorderHealth health_;
  std::optional<NvmlState> nvml_state_;
  std::string store_problem_;  // what was last said about the database; empty: it works
  Clock::time_point last_prune_{};
  Clock::time_point last_health_{};
  std::size_t actions_this_look_ = 0;
  struct Quota {
    Clock::time_point window{};
    unsigned used = 0;
  };
  std::map<std::uint32_t, Quota> quotas_;  // non-root senders' actions this minute, by UID
  HolderBudget holder_budget_;             // non-root users' new holders this minute
  // Leftover memory over time, counted from the events as they are kept (only the totals).
  diagnose::LeftoverMeter leftover_meter_{0, std::numeric_limits<double>::infinity(), false};
  bool within_quota(std::uint32_t uid);
};

bool Recorder::within_quota(std::uint32_t uid) {
  if (uid == 0) return true;
  const auto now = Clock::now();
  if (quotas_.size() > 4096) quotas_.clear();  // many users at once: start the minute afresh
  Quota& quota = quotas_[uid];
  if (now - quota.window >= std::chrono::minutes(1)) quota = Quota{now, 0};
  if (quota.used < kActionsPerUserMinute) {
    ++quota.used;
    return true;
  }
  if (quota.used++ == kActionsPerUserMinute) {
    say("actions of uid " + std::to_string(uid) + " beyond " +
        std::to_string(kActionsPerUserMinute) + " a minute are not recorded this minute");
  }
  return false;
}

bool Recorder::open_store() {
  if (store_) return true;
  auto opened = history::EventStore::open(settings_.db_path, false);
  if (opened.ok()) {
    store_ = std::move(*opened);
    return true;
  }
  store_failed(opened.error());
  return false;
}

void Recorder::store_failed(const Error& error) {
  ++health_.write_errors;
  if (error.errnum == EBADMSG) {
    // Not a database, or a damaged one: kept aside for whoever wants to look, and begun anew
    // (a recorder that records nothing until someone notices helps no one).
    store_.reset();
    const std::string aside =
        settings_.db_path + ".corrupt-" + std::to_string(static_cast<long long>(unix_now()));
    if (::rename(settings_.db_path.c_str(), aside.c_str()) == 0) {
      // The WAL goes with it: its frames may be the newest committed events (issue 49: it was
      // deleted). The shared-memory index is rebuilt from the WAL by whoever opens it.
      if (::rename((settings_.db_path + "-wal").c_str(), (aside + "-wal").c_str()) != 0) {
        ::unlink((settings_.db_path + "-wal").c_str());
      }
      ::unlink((settings_.db_path + "-shm").c_str());
      say(error.message() + "; moved aside to " + aside + ", starting a new database");
      store_problem_.clear();
      return;
    }
  }
  if (error.message() != store_problem_) {
    store_problem_ = error.message();
    say("database: " + store_problem_ + "; keeping events in memory (at most " +
        std::to_string(kMaxPending) + ") and trying again at every look");
  }
  if (error.errnum != EBUSY) store_.reset();  // reopened next time (a remount, a new file)
}

void Recorder::flush() {
  health_.pending = pending_.size();
  if (pending_.empty() || !open_store()) return;
  const std::vector<HistoryEvent> batch(pending_.begin(), pending_.end());
  if (Status written = store_->append(batch); !written.ok()) {
    store_failed(written.error());
    return;
  }
  health_.events_written += batch.size();
  health_.last_write = unix_now();
  pending_.clear();
  health_.pending = 0;
  if (!store_problem_.empty()) {
    say("database: writing again");
    store_problem_.clear();
  }
  if (auto size = store_->data_bytes(); size.ok()) {
    health_.database_bytes = *size;
    if (*size > settings_.max_bytes) prune(false);
  }
}

void Recorder::keep(std::vector<HistoryEvent> events) {
  for (HistoryEvent& event : events) {
    if (journal_.connected() && !journal_.send(journal_fields(event))) ++health_.journal_dropped;
    leftover_meter_.apply(event);  // what the database gets, so what history --report counts
    pending_.push_back(std::move(event));
  }
  while (pending_.size() > kMaxPending) {
    pending_.pop_front();
    ++health_.events_dropped;
  }
  flush();
}

void Recorder::prune(bool by_age) {
  if (!store_) return;
  const double before =
      by_age ? unix_now() - static_cast<double>(settings_.retention.count()) / 1000.0 : 0;
  if (auto pruned = store_->prune(before, settings_.max_bytes); !pruned.ok()) {
    store_failed(pruned.error());
  }
  if (store_) {
    if (auto size = store_->data_bytes(); size.ok()) health_.database_bytes = *size;
  }
}

void Recorder::start() {
  boot_id_ = procfs::read_boot_id(settings_.proc_root).value_or("");
  std::vector<HistoryEvent> events;
  const double now = unix_now();
  if (open_store()) {
    // Holders of an earlier boot that never left: that boot ended, so did they.
    if (auto open = store_->held_at(now); open.ok()) {
      for (const history::HeldAt& held : *open) {
        if (held.process.boot_id == boot_id_) continue;
        HistoryEvent left;
        left.kind = HistoryEventKind::kLeft;
        left.time = now;
        left.process = held.process;
        left.klass = held.klass;
        left.detail = "its boot ended while the recorder was down";
        events.push_back(std::move(left));
      }
    }
    if (auto open = store_->still_open(boot_id_); open.ok()) {
      state_ = resumed(*open);
      for (const history::HeldAt& held : *open) {
        leftover_meter_.take_up(held.process, held.klass, held.gpu_memory, held.activity, now);
      }
    }
    prune(true);
    last_prune_ = Clock::now();
  }
  std::string watching = "process events: ";
  if (settings_.proc_events) {
    auto started = ProcEvents::start(settings_.proc_root);
    if (started.ok()) {
      proc_events_ = std::move(*started);
      health_.proc_events = true;
      watching += "on";
    } else {
      watching += "off (" + started.error().message() +
                  "): a parent that exits within one interval of its child's start is not named";
    }
  } else {
    watching += "off (--no-proc-events)";
  }
  if (!settings_.kernel_log.empty()) {
    auto following = XidFollower::open(settings_.kernel_log);
    if (following.ok()) {
      xids_ = std::move(*following);
      watching += "; Xid events: on";
    } else {
      watching += "; Xid events: off (" + following.error().message() + ")";
    }
  }
  say("recording to " + settings_.db_path + " every " + format_duration(settings_.interval) + "; " +
      watching + (journal_.connected() ? "; journal: on" : "; journal: off") +
      (state_.holders.empty() ? ""
                              : "; resumed with " + std::to_string(state_.holders.size()) +
                                    " holders already recorded"));
  HistoryEvent started;
  started.kind = HistoryEventKind::kRecorderStarted;
  started.time = now;
  started.detail = watching;
  events.push_back(std::move(started));
  keep(std::move(events));
}

std::map<Pid, ProcessInfo> Recorder::parents_of_new(const Diagnosis& diagnosis) const {
  std::map<Pid, ProcessInfo> parents;
  for (const Holder& holder : diagnosis.holders) {
    const ProcessInfo& p = holder.process;
    if (!holder.visible || p.ppid <= 0 || parents.count(p.ppid) != 0) continue;
    if (state_.holders.count({p.pid, p.start_ticks}) != 0) continue;  // recorded already
    if (auto parent = gatherer_.proc().read_process(p.ppid); parent.ok()) {
      parents.emplace(p.ppid, std::move(*parent));
    }
  }
  return parents;
}

// A new holder's parent from the process events, where /proc no longer has the one that forked
// it: it exited (the child now has init or a subreaper as its parent) before this look.
void Recorder::add_parents(diagnose::RecorderState& now) const {
  if (!proc_events_) return;
  for (auto& [key, holder] : now.holders) {
    if (state_.holders.count(key) != 0) continue;
    auto seen = proc_events_->parent_of(key.first, key.second);
    if (!seen || (holder.process.parent_pid == seen->pid && !holder.process.parent_argv.empty())) {
      continue;
    }
    holder.process.parent_pid = seen->pid;
    holder.process.parent_start_ticks = seen->start_ticks;
    holder.process.parent_argv = seen->argv;
  }
}

void Recorder::look() {
  ++health_.looks;
  actions_this_look_ = 0;
  collect::Gathered gathered = gatherer_.collect();
  const double now = unix_now();
  std::vector<HistoryEvent> events;
  const bool nvml_failed = gathered.nvml_state == NvmlState::kFailed;
  if (nvml_state_ && *nvml_state_ != gathered.nvml_state &&
      (nvml_failed || *nvml_state_ == NvmlState::kFailed)) {
    HistoryEvent changed;
    changed.kind = nvml_failed ? HistoryEventKind::kNvmlFailed : HistoryEventKind::kNvmlRecovered;
    changed.time = now;
    changed.detail = gathered.nvml_message;
    events.push_back(std::move(changed));
  }
  nvml_state_ = gathered.nvml_state;
  Diagnosis diagnosis = diagnose::diagnose(std::move(gathered.input), settings_.diagnose);
  // Its own NVML helper (a child of this process) is no holder worth a history.
  const Pid self = ::getpid();
  std::erase_if(diagnosis.holders, [self](const Holder& h) { return h.process.ppid == self; });
  diagnose::RecorderState now_state =
      diagnose::recorder_state(diagnosis, state_, parents_of_new(diagnosis), boot_id_);
  add_parents(now_state);
  if (nvml_failed) {
    // No memory figures this look: what was known stands (a failed query is not memory back).
    now_state.unattributed = state_.unattributed;
    now_state.used = state_.used;
    for (auto& [key, holder] : now_state.holders) {
      if (auto was = state_.holders.find(key); was != state_.holders.end()) {
        holder.gpu_memory = was->second.gpu_memory;
      }
    }
  }
  std::vector<HistoryEvent> changes =
      diagnose::history_events(state_, now_state, now, settings_.diff);
  events.insert(events.end(), std::make_move_iterator(changes.begin()),
                std::make_move_iterator(changes.end()));
  xid_events(diagnosis.gpus, now, events);
  std::vector<HistoryEvent> returns =
      diagnose::memory_returns(state_, now_state, now, settings_.diff);
  events.insert(events.end(), std::make_move_iterator(returns.begin()),
                std::make_move_iterator(returns.end()));
  state_ = std::move(now_state);
  health_.holders_skipped += holder_budget_.apply(events, now);
  leftover_meter_.advance(now);
  keep(std::move(events));
  if (Clock::now() - last_prune_ >= kPruneEvery) {
    prune(true);
    last_prune_ = Clock::now();
  }
}

void Recorder::xid_events(const std::vector<GpuReport>& gpus, double now,
                          std::vector<HistoryEvent>& out) {
  if (!xids_) return;
  for (const XidEvent& xid : xids_->read_new()) {
    HistoryEvent event;
    event.kind = HistoryEventKind::kXid;
    event.time = now;
    for (const GpuReport& gpu : gpus) {
      if (same_pci_device(xid.device, gpu.gpu.pci_bus_id)) event.gpu = gpu.gpu.index;
    }
    event.detail = "Xid " + std::to_string(xid.xid) + " (" + xid.device + "): " + xid.message;
    out.push_back(std::move(event));
  }
}

void Recorder::take_actions() {
  std::vector<HistoryEvent> events;
  if (privileged_listener_) {
    for (const ReceivedAction& action : privileged_listener_->receive(kMaxActionsPerLook)) {
      events.push_back(action_event(action));
    }
  }
  if (listener_) {
    const std::size_t room =
        actions_this_look_ < kMaxActionsPerLook ? kMaxActionsPerLook - actions_this_look_ : 0;
    std::vector<ReceivedAction> received = listener_->receive(room == 0 ? 64 : room);
    if (room == 0) {
      health_.actions_dropped += received.size();
      received.clear();
    }
    actions_this_look_ += received.size();
    for (const ReceivedAction& action : received) {
      if (!within_quota(action.uid)) {
        ++health_.actions_dropped;
        continue;
      }
      events.push_back(action_event(action));
    }
  }
  health_.actions += events.size();
  if (!events.empty()) keep(std::move(events));
}

HistoryEvent Recorder::action_event(const ReceivedAction& action) {
  nlohmann::json detail = json_nesting_depth(action.text) <= kMaxActionDepth
                              ? nlohmann::json::parse(action.text, nullptr, false)
                              : nlohmann::json();
  if (!detail.is_object()) {
    detail = nlohmann::json::object();
    detail["text"] = action.text.substr(0, kMaxRawActionText);
  }
  // Who sent it is the kernel's word (SO_PASSCRED), whatever the text claims.
  detail["uid"] = action.uid;
  detail["user"] = user_names_.name(action.uid);
  detail["sender_pid"] = action.pid;
  if (action.cut) detail["cut"] = true;
  HistoryEvent event;
  event.kind = HistoryEventKind::kAction;
  event.time = unix_now();
  event.detail = detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return event;
}

void Recorder::write_health() {
  if (settings_.textfile.empty() || Clock::now() - last_health_ < kHealthEvery) return;
  last_health_ = Clock::now();
  if (proc_events_) health_.proc_event_overruns = proc_events_->counts().overruns;
  health_.leftover_byte_seconds = leftover_meter_.totals();
  const Result<std::string> text = render_health(health_);
  const Status written =
      text.ok() ? write_file_atomically(settings_.textfile, *text) : Status(text.error());
  if (!written.ok()) say("--textfile: " + written.error().message());
}

int Recorder::run(int signal_fd) {
  start();
  // The first look before the socket exists: whoever waits for the socket (systemd's start,
  // a test) then knows the processes already there were seen as they were. A process there
  // before the first look that opens a device later is found by NVML's list (a CUDA context)
  // or within --full-scan (procfs/rolling_scan.h); one started after it, within one look.
  look();
  write_health();
  if (!settings_.socket_path.empty()) {
    // Root's socket first: the shared one is what a service manager or a test waits for, and
    // its existence must mean both are there (fresh-clone CI on afce779, under ASan: the test
    // that stats PATH.root right after PATH appeared found it missing).
    auto privileged = ActionListener::open(privileged_socket_path(settings_.socket_path), 0600);
    if (privileged.ok()) {
      privileged_listener_ = std::move(*privileged);
    } else {
      say("root's actions share the socket of other users: " + privileged.error().message());
    }
    auto listening = ActionListener::open(settings_.socket_path);
    if (listening.ok()) {
      listener_ = std::move(*listening);
    } else {
      say("actions of other commands are not recorded: " + listening.error().message());
    }
  }
  auto next = Clock::now() + settings_.interval;
  while (true) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    pollfd fds[3] = {{signal_fd, POLLIN, 0},
                     {listener_ ? listener_->fd() : -1, POLLIN, 0},
                     {privileged_listener_ ? privileged_listener_->fd() : -1, POLLIN, 0}};
    const int ready = ::poll(fds, 3, wait.count() > 0 ? static_cast<int>(wait.count()) : 0);
    if (ready < 0 && errno != EINTR) {
      say(std::string("poll: ") + std::strerror(errno));
      return kExitRuntime;
    }
    if ((fds[0].revents & POLLIN) != 0) break;
    if (((fds[1].revents | fds[2].revents) & POLLIN) != 0) take_actions();
    if (Clock::now() >= next) {
      look();
      write_health();
      next += settings_.interval;
      // A look slower than the interval (a hung NVML answered at its deadline) is not caught
      // up with a burst: the next one is an interval from now.
      if (next < Clock::now()) next = Clock::now() + settings_.interval;
    }
  }
  take_actions();
  HistoryEvent stopped;
  stopped.kind = HistoryEventKind::kRecorderStopped;
  stopped.time = unix_now();
  keep({std::move(stopped)});
  last_health_ = {};
  write_health();
  if (!pending_.empty()) {
    say("stopping with " + std::to_string(pending_.size()) +
        " events the database did not take: they are lost");
  }
  return kExitClean;
}

}  // namespace

#ifdef GPUCLEAN_METRICS
namespace {

// gpuclean_recorder_leftover_memory_byte_seconds_total{class, owner_kind}: every leftover class
// and unattributed memory with owner_kind "none" always (increase() needs a series from the
// start), and each other owner kind that held anything. Named apart from `metrics`' own
// gpuclean_leftover_memory_byte_seconds_total: node_exporter refuses one series from two files.
prometheus::MetricFamily leftover_family(const diagnose::CostTotals& totals) {
  diagnose::CostTotals series = totals;
  for (std::string_view klass : kLeftoverClasses) series[{std::string(klass), "none"}] += 0;
  series[{std::string(kUnattributedClass), "none"}] += 0;
  prometheus::MetricFamily family{
      "gpuclean_recorder_leftover_memory_byte_seconds_total",
      "GPU memory held by leftovers (orphan, heir, zombie-leader) and unattributed memory, "
      "integrated over time as the history records it (what history --report counts), since "
      "the recorder started.",
      prometheus::MetricType::Counter,
      {}};
  for (const auto& [key, byte_seconds] : series) {
    prometheus::ClientMetric metric;
    metric.label = {{"class", key.first}, {"owner_kind", key.second}};
    metric.counter.value = byte_seconds;
    family.metric.push_back(std::move(metric));
  }
  return family;
}

}  // namespace

Result<std::string> render_health(const RecorderHealth& h) {
  // One series without labels, in a family of its own; a counter where the name says so
  // (Prometheus's "_total"), else a gauge.
  const auto family = [](const char* name, const char* help, auto value) {
    const bool counter = std::string_view(name).ends_with("_total");
    prometheus::ClientMetric metric;
    (counter ? metric.counter.value : metric.gauge.value) = static_cast<double>(value);
    return prometheus::MetricFamily{
        name,
        help,
        counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge,
        {metric}};
  };
  std::vector<prometheus::MetricFamily> families = {
      family("gpuclean_recorder_events_written_total", "Events the recorder wrote to its database.",
             h.events_written),
      family("gpuclean_recorder_events_dropped_total",
             "Events lost because the database failed longer than the memory queue holds.",
             h.events_dropped),
      family("gpuclean_recorder_pending_events", "Events waiting in memory for the database.",
             h.pending),
      family("gpuclean_recorder_write_errors_total", "Failed opens and writes of the database.",
             h.write_errors),
      family("gpuclean_recorder_actions_total", "Actions of other gpuclean commands recorded.",
             h.actions),
      family("gpuclean_recorder_actions_dropped_total",
             "Actions not recorded: more than the per-look cap arrived.", h.actions_dropped),
      family("gpuclean_recorder_journal_dropped_total", "Events the journal did not take.",
             h.journal_dropped),
      family("gpuclean_recorder_looks_total", "Looks at the holders.", h.looks),
      family("gpuclean_recorder_database_bytes", "Bytes the database's live pages take.",
             h.database_bytes),
      family("gpuclean_recorder_last_write_timestamp_seconds",
             "When the database last took events (0: never).", h.last_write),
      family("gpuclean_recorder_proc_events",
             "1 when the kernel's process events are read (short-lived parents are named).",
             h.proc_events ? 1 : 0),
      family("gpuclean_recorder_holders_skipped_total",
             "New holders not recorded: their user started more than the budget a minute.",
             h.holders_skipped),
      family("gpuclean_recorder_proc_event_overruns_total",
             "Times the process events queue overflowed (events lost).", h.proc_event_overruns)};
  families.push_back(leftover_family(h.leftover_byte_seconds));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}
#else
Result<std::string> render_health(const RecorderHealth& /*health*/) {
  return Error{ENOTSUP,
               "not written: this gpuclean is built without prometheus-cpp "
               "(-DGPUCLEAN_METRICS=OFF)"};
}
#endif

int run_recorder(const RecorderSettings& settings, collect::Gatherer& gatherer, std::ostream& log) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, signo);
  // Blocked before any thread starts, so every thread inherits it and the signalfd gets them.
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  UniqueFd signal_fd(::signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd) {
    log << "gpuclean recorder: signalfd: " << std::strerror(errno) << '\n';
    return kExitRuntime;
  }
  Recorder recorder(settings, gatherer, log);
  return recorder.run(signal_fd.get());
}

}  // namespace gpuclean::recorder
