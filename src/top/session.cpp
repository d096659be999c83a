#include "top/session.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/exit_code.h"
#include "diagnose/activity_tracker.h"
#include "input/kill_plan_reader.h"
#include "ops/process_handle.h"
#include "output/escape.h"
#include "output/kill_view.h"
#include "output/top_view.h"
#include "top/child_run.h"
#include "top/collector.h"
#include "top/terminal.h"

// ncurses' key codes (KEY_UP, …) after everything else: its macros clash with other names.
#include <curses.h>

namespace gpuclean::top {
namespace {

using Clock = std::chrono::steady_clock;
using collect::Gathered;
using output::TopPane;

class TopSession {
 public:
  TopSession(const SessionSettings& settings, std::shared_ptr<collect::Gatherer> gatherer,
             SessionHooks hooks, Gathered first)
      : settings_(settings),
        gpus_(settings.gpus),
        delay_(settings.delay),
        gatherer_(std::move(gatherer)),
        hooks_(std::move(hooks)) {
    accept(std::move(first));
  }

  int run() {
    auto opened = Terminal::open(!no_color());
    if (!opened.ok()) {
      say(std::cerr, "top") << opened.error().message() << '\n';
      return kExitUsage;
    }
    terminal_ = std::move(opened).value();
    Collector collector(gatherer_, delay_);
    collector_ = &collector;
    int code = loop();
    collector_ = nullptr;
    terminal_.reset();  // the terminal back before anything else is printed
    if (!collector.stop(std::chrono::milliseconds(300))) {
      // A collection is held by the driver (or a stuck /proc read) longer than anyone should
      // wait to get a shell back: leave it to the kernel. Its thread still uses this process,
      // so no destructors run around it.
      std::cout.flush();
      std::cerr.flush();
      std::_Exit(code);
    }
    return code;
  }

 private:
  static bool no_color() {
    const char* value = std::getenv("NO_COLOR");
    return value != nullptr && *value != '\0';
  }

  // A new collection: diagnosed with the current options, kept for re-diagnosis (`g`).
  void accept(Gathered gathered) {
    const double now = unix_now();
    last_gathered_ = std::move(gathered);
    last_gathered_->input.activity_history = activity_.history(now);
    diagnose_last();
    ++refreshes_;
    if (report_) {
      history_.add(report_->time, report_->diagnosis.gpus);
      utilization_.add(report_->time, report_->diagnosis.gpus,
                       output::MemoryHistory::Series::kUtilization);
      activity_.observe(report_->diagnosis.holders, now);
      track_cpu(report_->diagnosis.holders, now);
    }
    // The table's rows point into the report just replaced: composed again before any key
    // moves the selection through them (the review found keys read freed rows).
    if (terminal_) redraw();
  }

  // CPU% of each holder since the refresh before: its CPU ticks over the seconds between.
  void track_cpu(const std::vector<Holder>& holders, double now) {
    static const double ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
    std::map<std::pair<Pid, std::uint64_t>, std::pair<std::uint64_t, double>> next;
    cpu_percent_.clear();
    for (const Holder& h : holders) {
      if (!h.visible) continue;
      const std::pair<Pid, std::uint64_t> identity{h.process.pid, h.process.start_ticks};
      next[identity] = {h.process.cpu_ticks, now};
      const auto before = cpu_ticks_.find(identity);
      if (before == cpu_ticks_.end() || now <= before->second.second ||
          h.process.cpu_ticks < before->second.first) {
        continue;
      }
      constexpr double kPercent = 100.0;
      cpu_percent_[identity] = kPercent *
                               static_cast<double>(h.process.cpu_ticks - before->second.first) /
                               ticks_per_second / (now - before->second.second);
    }
    cpu_ticks_ = std::move(next);
  }

  void diagnose_last() {
    if (!last_gathered_) return;
    Diagnosed diagnosed = hooks_.diagnose(*last_gathered_, gpus_);
    if (!diagnosed.report) {
      // --gpus while NVML has stopped answering: the whole machine's view, its verdict
      // UNKNOWN, never the last good screen with its old verdict; the reason in the footer.
      Diagnosed whole = hooks_.diagnose(*last_gathered_, "all");
      if (whole.report) report_ = std::move(whole.report);
      diagnosis_message_ = output::escape_terminal(diagnosed.error);
      state_.message = diagnosis_message_;
      return;
    }
    if (!diagnosis_message_.empty() && state_.message == diagnosis_message_) state_.message.clear();
    diagnosis_message_.clear();
    report_ = std::move(diagnosed.report);
  }

  int loop() {
    redraw();
    while (true) {
      if (Terminal::stop_requested()) return kExitClean;
      if (settings_.iterations > 0 && refreshes_ >= settings_.iterations) return kExitClean;
      std::vector<pollfd> fds = {{STDIN_FILENO, POLLIN, 0},
                                 {terminal_->stop_fd(), POLLIN, 0},
                                 {collector_->ready_fd(), POLLIN, 0}};
      if (child_) {
        fds.push_back({child_->output.get(), POLLIN, 0});
        fds.push_back({child_->launched.pidfd.get(), POLLIN, 0});
      }
      // Woken by a key, a collection, the kill child, a signal (SIGWINCH: a resize), or every
      // half second to keep the "refreshing for N s" note true.
      (void)::poll(fds.data(), fds.size(), 500);
      bool changed = false;
      if (auto gathered = collector_->take()) {
        accept(std::move(*gathered));
        changed = true;
      }
      if (child_) changed |= pump_kill();
      while (auto key = terminal_->key()) {
        changed = true;
        if (!handle_key(*key)) return kExitClean;
      }
      changed |= update_refresh_note();
      if (changed) redraw();
    }
  }

  bool update_refresh_note() {
    std::string note;
    if (auto since = collector_->busy_since()) {
      const double busy = std::chrono::duration<double>(Clock::now() - *since).count();
      if (busy > std::chrono::duration<double>(delay_).count() + 1) {
        note = fmt::format("refreshing for {:.0f} s", busy);
      }
    }
    if (note == refresh_note_) return false;
    refresh_note_ = note;
    return true;
  }

  void redraw() {
    output::TopFrame frame;
    frame.report = report_ ? &*report_ : nullptr;
    frame.history = &history_;
    frame.utilization = &utilization_;
    frame.show_utilization = show_utilization_;
    frame.cpu = &cpu_percent_;
    frame.page_size = static_cast<Bytes>(::sysconf(_SC_PAGESIZE));
    frame.now = unix_now();
    frame.delay_seconds = std::chrono::duration<double>(delay_).count();
    frame.refresh_note = refresh_note_;
    frame.unicode = terminal_->unicode();
    last_screen_ = output::compose_top(frame, state_, terminal_->width(), terminal_->height());
    state_ = last_screen_.drawn;
    terminal_->paint(last_screen_.lines);
  }

  // False: quit.
  bool handle_key(int key) {
    if (key == KEY_RESIZE) return true;
    if (!state_.prompt.empty() || prompt_kind_ != Prompt::kNone) return handle_prompt_key(key);
    if (state_.pane) return handle_pane_key(key);
    state_.message.clear();
    if (const std::optional<long> by = selection_move(key)) {
      move_selection(*by);
      return true;
    }
    switch (key) {
      case 'q':
        return false;
      case 't':
        state_.tree = !state_.tree;
        break;
      case 's':
        state_.sort = output::next(state_.sort);
        break;
      case 'u':
        show_utilization_ = !show_utilization_;
        state_.message = show_utilization_ ? "sparklines: GPU utilisation" : "sparklines: memory";
        break;
      case 'p':
        state_.problems_open = !state_.problems_open;
        break;
      case '/':
        start_prompt(Prompt::kFilter, state_.filter);
        break;
      case 'g':
        start_prompt(Prompt::kGpus, gpus_);
        break;
      case '?':
      case 'h':
        state_.pane = TopPane{"Help", output::top_help_lines(), 0, "Esc/q close  ↑↓ scroll"};
        break;
      case 'e':
        explain_selected();
        break;
      case 'K':
      case KEY_F(9):
        plan_kill();
        break;
      default:
        break;
    }
    return true;
  }

  // How far a key moves the selection (rows, down positive), or nullopt for another key.
  [[nodiscard]] std::optional<long> selection_move(int key) const {
    const auto page = static_cast<long>(std::max<std::size_t>(last_screen_.table_height, 1));
    switch (key) {
      case KEY_DOWN:
      case 'j':
        return 1;
      case KEY_UP:
      case 'k':
        return -1;
      case KEY_NPAGE:
        return page;
      case KEY_PPAGE:
        return -page;
      case KEY_HOME:
        return -1000000;
      case KEY_END:
        return 1000000;
      default:
        return std::nullopt;
    }
  }

  void move_selection(long by) {
    const auto& rows = last_screen_.rows;
    if (rows.empty()) return;
    long at = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (state_.selected && rows[i].holder->process.pid == *state_.selected) {
        at = static_cast<long>(i);
      }
    }
    at = std::clamp(at + by, 0L, static_cast<long>(rows.size()) - 1);
    state_.selected = rows[static_cast<std::size_t>(at)].holder->process.pid;
  }

  enum class Prompt { kNone, kFilter, kGpus };

  void start_prompt(Prompt kind, const std::string& initial) {
    prompt_kind_ = kind;
    prompt_text_ = initial == "all" && kind == Prompt::kGpus ? "" : initial;
    show_prompt();
  }

  void show_prompt() {
    const char* label = prompt_kind_ == Prompt::kFilter ? "filter (PID, user, class or command): "
                                                        : "GPUs (0,2 or 0-3; empty: all): ";
    state_.prompt = label + output::escape_terminal(prompt_text_);
  }

  bool handle_prompt_key(int key) {
    if (key == 27) {  // Esc: as it was
      prompt_kind_ = Prompt::kNone;
      state_.prompt.clear();
      return true;
    }
    if (key == '\n' || key == '\r' || key == KEY_ENTER) {
      const Prompt kind = prompt_kind_;
      prompt_kind_ = Prompt::kNone;
      state_.prompt.clear();
      if (kind == Prompt::kFilter) {
        state_.filter = prompt_text_;
      } else {
        choose_gpus(prompt_text_.empty() ? "all" : prompt_text_);
      }
      return true;
    }
    if (key == KEY_BACKSPACE || key == 127 || key == 8) {
      if (!prompt_text_.empty()) prompt_text_.pop_back();
    } else if (key >= 32 && key < 127 && prompt_text_.size() < 200) {
      prompt_text_ += static_cast<char>(key);
    }
    show_prompt();
    return true;
  }

  void choose_gpus(const std::string& text) {
    if (auto wrong = hooks_.gpu_list_error(text)) {
      state_.message = "GPUs: " + output::escape_terminal(*wrong);
      return;
    }
    const std::string before = gpus_;
    gpus_ = text;
    const auto previous = report_;
    diagnose_last();
    if (!diagnosis_message_.empty()) {
      gpus_ = before;  // unusable (no such GPU, or no NVML): as it was
      report_ = previous;
      diagnosis_message_.clear();
    }
    redraw();  // the rows point into the report
  }

  bool handle_pane_key(int key) {
    TopPane& pane = *state_.pane;
    switch (key) {
      case KEY_DOWN:
      case 'j':
        ++pane.scroll;
        return true;
      case KEY_UP:
      case 'k':
        if (pane.scroll > 0) --pane.scroll;
        return true;
      case KEY_NPAGE:
        pane.scroll += 10;
        return true;
      case KEY_PPAGE:
        pane.scroll = pane.scroll > 10 ? pane.scroll - 10 : 0;
        return true;
      default:
        break;
    }
    switch (kill_stage_) {
      case KillStage::kConfirm:
        confirm_kill(key == 'y' || key == 'Y');
        return true;
      case KillStage::kPlanning:
      case KillStage::kKilling:
        // A kill under way is seen through: its outcome is what the pane is for.
        if (key == 27 && kill_stage_ == KillStage::kPlanning) close_kill("cancelled");
        return true;
      case KillStage::kNone:
      case KillStage::kDone:
        break;
    }
    if (key == 27 || key == 'q' || key == '\n' || key == '\r' || key == KEY_ENTER) {
      state_.pane.reset();
      kill_stage_ = KillStage::kNone;
    }
    return true;
  }

  [[nodiscard]] bool nvml_present() const {
    return report_ && report_->nvml_state == NvmlState::kPresent;
  }

  // The selected holder; without one, the message line says so.
  [[nodiscard]] const Holder* selected_holder() {
    if (report_ && state_.selected) {
      for (const Holder& h : report_->diagnosis.holders) {
        if (h.process.pid == *state_.selected) return &h;
      }
    }
    state_.message = "no holder selected";
    return nullptr;
  }

  void explain_selected() {
    const Holder* holder = selected_holder();
    if (holder == nullptr) return;
    const output::ExplainSubject subject = hooks_.explain_subject(*report_, holder->process.pid);
    std::ostringstream text;
    output::render_explain_text(text, *report_, subject);
    state_.pane = TopPane{fmt::format("Explain pid {}", holder->process.pid),
                          split_lines(text.str()), 0, "Esc/q close  ↑↓ scroll"};
  }

  enum class KillStage { kNone, kPlanning, kConfirm, kKilling, kDone };

  void plan_kill() {
    const Holder* holder = selected_holder();
    if (holder == nullptr) return;
    if (!holder->visible) {
      state_.message = "not visible from this PID namespace: nothing here can signal it";
      return;
    }
    // A worker of a dead job: K ends the job, as its problem's fix does (issue 47); killing
    // the worker alone would leave the rest of the job holding the GPUs.
    if (auto root = dead_job_root(report_->diagnosis, holder->process.pid)) {
      for (const Holder& h : report_->diagnosis.holders) {
        if (h.process.pid == *root) holder = &h;
      }
    }
    kill_pid_ = holder->process.pid;
    kill_start_ticks_ = holder->process.start_ticks;
    // The plan as JSON (its diagnostics apart, on stderr): read back, it is shown as kill's
    // text prints it, and its targets are what the question counts.
    std::vector<std::string> argv = {"gpuclean", "kill", kill_selector(), "--dry-run", "--json"};
    argv.insert(argv.end(), hooks_.kill_args.begin(), hooks_.kill_args.end());
    state_.pane = TopPane{
        fmt::format("Kill pid {} and its descendants", kill_pid_), {"planning…"}, 0, "Esc cancel"};
    std::string error;
    child_ = start_child(hooks_.program, argv, {.acting = false, .split_errors = true}, error);
    kill_stage_ = child_ ? KillStage::kPlanning : KillStage::kDone;
    if (!child_) finish_pane({error}, "Esc/q close");
  }

  // The child's output arrived or it ended; true when the pane changed.
  bool pump_kill() {
    const std::size_t before = child_->text.size();
    pump_child(*child_);
    if (!child_->exit_code) {
      // The kill's report streams in; the plan is one JSON document, shown once whole.
      if (kill_stage_ != KillStage::kKilling || child_->text.size() == before) return false;
      state_.pane->lines = split_lines(child_->text);
      state_.pane->lines.insert(state_.pane->lines.begin(), "Killing…");
      return true;
    }
    const int code = *child_->exit_code;
    ChildRun done = std::move(*child_);
    child_.reset();
    if (kill_stage_ == KillStage::kPlanning) {
      show_plan(done, code);
      return true;
    }
    std::vector<std::string> lines = split_lines(done.text);
    lines.emplace_back("");
    lines.push_back(fmt::format("exit {}: {}", code, kill_outcome(code, nvml_present())));
    finish_pane(std::move(lines), "Esc/q/Enter close");
    collector_->refresh_now();  // the screen shows what is left at once
    return true;
  }

  // The dry run ended: its plan and the question, or why nothing is planned.
  void show_plan(const ChildRun& done, int code) {
    std::vector<std::string> lines;
    auto diagnostics = [&] {
      for (std::string& line : split_lines(done.error_text)) lines.push_back(std::move(line));
    };
    if (code != kExitClean) {
      diagnostics();
      lines.emplace_back("");
      lines.push_back("not planned: " + kill_outcome(code, nvml_present()));
      finish_pane(std::move(lines), "Esc/q close");
      return;
    }
    auto dry_run = input::parse_kill_dry_run(done.text);
    if (!dry_run.ok()) {
      diagnostics();
      lines.push_back("kill's plan could not be read: " + dry_run.error().context);
      finish_pane(std::move(lines), "Esc/q close");
      return;
    }
    std::ostringstream plan;
    const std::size_t count = dry_run->plan.targets.size();
    // Cut to the screen, as before kill's plan stopped cutting into a pipe (a wrapped row
    // reads as two targets).
    const auto width = static_cast<std::size_t>(std::max(terminal_->width() - 2, 20));
    if (count > 0) output::render_kill_plan_text(plan, dry_run->plan, dry_run->steps, width);
    lines = split_lines(plan.str());
    diagnostics();
    // What acting on it would ask about: top asks once, for all of it.
    for (const std::string& reason : dry_run->plan.confirm_reasons) {
      lines.push_back("would ask: " + output::escape_terminal(reason));
    }
    lines.emplace_back("");
    if (count == 0) {
      lines.emplace_back("nothing to kill");
      finish_pane(std::move(lines), "Esc/q close");
      return;
    }
    lines.push_back(fmt::format("Kill {} process{}? [y/N]", count, count == 1 ? "" : "es"));
    state_.pane->lines = std::move(lines);
    state_.pane->keys = "y kill  any other key: do not";
    kill_stage_ = KillStage::kConfirm;
    flushinp();  // a key typed before the question was shown is not its answer
  }

  // PID@START: kill's own scan, a moment later, acts only on the process shown and planned for,
  // never on a process that reused its PID in between.
  [[nodiscard]] std::string kill_selector() const {
    if (kill_start_ticks_ == 0) return std::to_string(kill_pid_);
    return fmt::format("{}@{}", kill_pid_, kill_start_ticks_);
  }

  void confirm_kill(bool yes) {
    if (!yes) {
      close_kill("not confirmed; nothing was signalled");
      return;
    }
    // The PID must still be the process the plan was made for: one that exited meanwhile (the
    // user may have read the plan for a minute) could have been reused. Kill's own identity
    // check (a pidfd, then stat's start time): no command line or maps read on this thread.
    const bool same = ops::ProcessHandle::open(kill_pid_, kill_start_ticks_).ok();
    if (!same) {
      close_kill(fmt::format("pid {} is no longer the process planned for; nothing was signalled",
                             kill_pid_));
      return;
    }
    std::vector<std::string> argv = {"gpuclean", "kill", kill_selector(), "--yes"};
    argv.insert(argv.end(), hooks_.kill_args.begin(), hooks_.kill_args.end());
    std::string error;
    child_ = start_child(hooks_.program, argv, {.acting = true, .split_errors = false}, error);
    if (!child_) {
      close_kill(error);
      return;
    }
    kill_stage_ = KillStage::kKilling;
    state_.pane->lines = {"Killing…"};
    state_.pane->keys = "killing: wait for the outcome";
  }

  void close_kill(const std::string& why) {
    if (child_) {
      // Only a dry run is ever ended here (a kill under way is waited for): it signals nothing.
      end_child(*child_);
      child_.reset();
    }
    std::vector<std::string> lines = state_.pane ? state_.pane->lines : std::vector<std::string>{};
    lines.emplace_back("");
    lines.push_back(output::escape_terminal(why));
    finish_pane(std::move(lines), "Esc/q close");
  }

  void finish_pane(std::vector<std::string> lines, const std::string& keys) {
    if (!state_.pane) state_.pane = TopPane{};
    state_.pane->lines = std::move(lines);
    state_.pane->keys = keys;
    // The end of the pane is the news: scrolled so that it shows (compose_top clamps).
    state_.pane->scroll = state_.pane->lines.size();
    kill_stage_ = KillStage::kDone;
  }

  const SessionSettings& settings_;
  std::string gpus_;  // changed by `g`
  Duration delay_;
  std::shared_ptr<collect::Gatherer> gatherer_;
  SessionHooks hooks_;
  std::unique_ptr<Terminal> terminal_;
  Collector* collector_ = nullptr;
  std::optional<Gathered> last_gathered_;
  std::optional<StatusReport> report_;
  output::MemoryHistory history_;
  output::MemoryHistory utilization_;
  bool show_utilization_ = false;       // `u`
  diagnose::ActivityTracker activity_;  // idle_s and busy stretches of the holders
  // CPU ticks and when they were read, per process; the CPU% they give at the last refresh.
  std::map<std::pair<Pid, std::uint64_t>, std::pair<std::uint64_t, double>> cpu_ticks_;
  output::CpuPercent cpu_percent_;
  output::TopViewState state_;
  output::TopScreen last_screen_;
  std::string refresh_note_;
  std::string diagnosis_message_;  // why the last diagnosis with the chosen GPUs failed
  unsigned refreshes_ = 0;
  Prompt prompt_kind_ = Prompt::kNone;
  std::string prompt_text_;
  KillStage kill_stage_ = KillStage::kNone;
  Pid kill_pid_ = 0;
  std::uint64_t kill_start_ticks_ = 0;
  std::optional<ChildRun> child_;
};

}  // namespace

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    for (char& c : line) {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && byte != '\t') || byte == 0x7f) c = '?';
    }
    lines.push_back(line);
  }
  return lines;
}

std::string kill_outcome(int code, bool memory_verified) {
  switch (code) {
    case kExitClean:
      return memory_verified ? "done: every target gone and its GPU memory released"
                             : "done: every target gone (GPU memory not checked: no NVML)";
    case kExitDirty:
      return "something remains (see above)";
    case kExitUsage:
      return "nothing was signalled (see above)";
    case kExitRuntime:
      return "signalled; GPU memory not verified (NVML failed)";
    default:
      return fmt::format("gpuclean kill ended with status {}", code);
  }
}

int run_session(const SessionSettings& settings, std::shared_ptr<collect::Gatherer> gatherer,
                SessionHooks hooks, collect::Gathered first) {
  TopSession session(settings, std::move(gatherer), std::move(hooks), std::move(first));
  return session.run();
}

}  // namespace gpuclean::top
