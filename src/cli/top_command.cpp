#include "cli/top_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/help.h"
#include "cli/test_hooks.h"
#include "cli/top_terminal.h"
#include "cli/usage_error.h"
#include "collect/gather.h"
#include "core/duration.h"
#include "core/unique_fd.h"
#include "ops/launch.h"
#include "ops/process_handle.h"
#include "output/escape.h"
#include "output/explain_view.h"
#include "output/top_view.h"

// ncurses' key codes (KEY_UP, …) after everything else: its macros clash with other names.
#include <curses.h>

namespace gpuclean::cli {

void add_top_command(CLI::App& app, TopOptions& options) {
  CLI::App* top = app.add_subcommand(
      "top", "Live view: GPU memory over the last minute, holders, problems; explain and kill");
  add_diagnosis_options(*top, options.status, HookScope::kInspect, {.json = false, .gpus = true});
  top->add_option("-d,--delay", options.delay, "Time between refreshes (default: 1s)")
      ->option_text("DURATION");
  top->add_option("--full-scan", options.full_scan,
                  "Every process's files are re-read at least this often; new processes, "
                  "holders and the PIDs NVML lists on every refresh. 0: all on every refresh "
                  "(default: 60s)")
      ->option_text("DURATION");
  top->add_option("--iterations", options.iterations,
                  "Quit after this many refreshes (default: run until q)")
      ->option_text("N")
      ->check(whole_number_check(0, 1000000000));
  set_help_footer(
      *top,
      {{"gpuclean top", "every GPU, refreshed every second"},
       {"gpuclean top -d 5 --gpus 0,1", "GPUs 0 and 1, every 5 seconds"},
       {"gpuclean top --full-scan 0", "every process's files on every refresh"}},
      {"0  quit (q, Ctrl-C, SIGTERM, SIGHUP, or --iterations reached)",
       "2  usage error, or no terminal (use gpuclean status --json)", "3  /proc unreadable"});
}

namespace {

using Clock = std::chrono::steady_clock;
using collect::Gathered;
using output::TopPane;

// Collections on a thread of their own, one per delay: a scan of a crowded /proc or an NVML
// call held by a wedged driver (bounded by --nvml-timeout) never freezes the screen or the
// keys. Everything the thread touches is shared-owned: if it cannot be joined promptly at quit
// (an answer still awaited), it is left behind and the process exits around it.
class Collector {
 public:
  Collector(std::shared_ptr<collect::Gatherer> gatherer, Duration delay)
      : state_(std::make_shared<State>()) {
    state_->gatherer = std::move(gatherer);
    state_->delay = delay;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      state_->ready_read = UniqueFd(fds[0]);
      state_->ready_write = UniqueFd(fds[1]);
    }
    // The thread, and the scan threads it starts, take none of the signals the main thread's
    // poll must be interrupted by.
    // Only those: a fault (SIGSEGV, …) raised while blocked would bypass the handler that
    // restores the terminal (the review found it).
    sigset_t waited;
    sigset_t previous;
    sigemptyset(&waited);
    for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&waited, signo);
    ::pthread_sigmask(SIG_BLOCK, &waited, &previous);
    thread_ = std::thread([state = state_] { loop(*state); });
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;
  ~Collector() { (void)stop(std::chrono::milliseconds(300)); }

  // Stops the thread; false when it was still collecting after `patience` (then detached).
  bool stop(Duration patience) {
    if (!thread_.joinable()) return true;
    std::unique_lock lock(state_->mutex);
    state_->stopping = true;
    state_->wake.notify_all();
    if (!state_->finished_cv.wait_for(lock, patience, [this] { return state_->finished; })) {
      lock.unlock();
      thread_.detach();
      return false;
    }
    lock.unlock();
    thread_.join();
    return true;
  }
  [[nodiscard]] int ready_fd() const { return state_->ready_read.get(); }
  std::optional<Gathered> take() {
    char drain[64];
    while (::read(state_->ready_read.get(), drain, sizeof(drain)) > 0) {
    }
    std::lock_guard lock(state_->mutex);
    std::optional<Gathered> latest = std::move(state_->latest);
    state_->latest.reset();
    return latest;
  }
  void refresh_now() {
    std::lock_guard lock(state_->mutex);
    state_->refresh_now = true;
    state_->wake.notify_all();
  }
  // When the collection under way started, if one is.
  std::optional<Clock::time_point> busy_since() {
    std::lock_guard lock(state_->mutex);
    return state_->busy_since;
  }

 private:
  struct State {
    std::shared_ptr<collect::Gatherer> gatherer;
    Duration delay{};
    std::mutex mutex;
    std::condition_variable wake;
    std::condition_variable finished_cv;
    std::optional<Gathered> latest;
    std::optional<Clock::time_point> busy_since;
    bool stopping = false;
    bool refresh_now = false;
    bool finished = false;
    UniqueFd ready_read;
    UniqueFd ready_write;
  };

  static void loop(State& state) {
    std::unique_lock lock(state.mutex);
    // The first collection was made before the screen opened: the next one is a delay later.
    auto started = Clock::now();
    while (true) {
      state.wake.wait_until(lock, started + state.delay,
                            [&state] { return state.stopping || state.refresh_now; });
      state.refresh_now = false;
      if (state.stopping) break;
      started = Clock::now();
      state.busy_since = started;
      lock.unlock();
      Gathered gathered = state.gatherer->collect();
      lock.lock();
      state.busy_since.reset();
      state.latest = std::move(gathered);
      const char byte = 'r';
      [[maybe_unused]] const ssize_t ignored = ::write(state.ready_write.get(), &byte, 1);
    }
    state.finished = true;
    state.finished_cv.notify_all();
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

// `gpuclean kill …` run as a child (the same binary), its output collected for a pane: the kill
// engine as the command line has it, and the screen keeps refreshing while it waits.
struct ChildRun {
  ops::Launched launched;
  UniqueFd output;
  std::string text;
  std::optional<int> exit_code;  // once reaped
};

// `acting`: the kill itself. It runs in a session of its own (Ctrl-C at the terminal does not
// reach it) and outlives top: a teardown stopped half-way could leave its targets stopped. The
// plan (a dry run) dies with top.
std::optional<ChildRun> start_child(const std::vector<std::string>& argv, bool acting,
                                    std::string& error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = "pipe2 failed";
    return std::nullopt;
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  ops::LaunchOptions options;
  options.output_fd = write_end.get();
  options.new_session = true;
  if (!acting) options.parent_death_signal = SIGKILL;
  auto launched = ops::launch("/proc/self/exe", argv, options);
  if (!launched.ok()) {
    error = "cannot run gpuclean kill: " + launched.error().message();
    return std::nullopt;
  }
  (void)::fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  ChildRun run{std::move(launched).value(), std::move(read_end), {}, std::nullopt};
  return run;
}

// Reads what the child wrote; reaps it once its pidfd says it exited. Its own children (kill's
// NVML helper) may keep the pipe open, so exit is told by the pidfd, never by EOF.
void pump_child(ChildRun& run) {
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::read(run.output.get(), buffer, sizeof(buffer))) > 0) {
    run.text.append(buffer, static_cast<std::size_t>(got));
  }
  pollfd exited{run.launched.pidfd.get(), POLLIN, 0};
  if (run.exit_code || ::poll(&exited, 1, 0) <= 0) return;
  int status = 0;
  if (::waitpid(run.launched.pid, &status, 0) == run.launched.pid) {
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    run.exit_code = kExitRuntime;
  }
  while ((got = ::read(run.output.get(), buffer, sizeof(buffer))) > 0) {
    run.text.append(buffer, static_cast<std::size_t>(got));
  }
}

// gpuclean's own output (explain, kill) is escaped already: escaping it again would double its
// backslashes. Control bytes are replaced all the same, so that nothing reaches the terminal raw.
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

std::string duration_arg(Duration d) {
  return std::to_string(d.count()) + "ms";
}

// The global options the kill child needs to see what top sees.
std::vector<std::string> common_args(const CommonOptions& common) {
  std::vector<std::string> args;
  for (const std::string& glob : common.device_globs) args.push_back("--device-glob=" + glob);
  if (common.no_nvml) args.emplace_back("--no-nvml");
  if (common.threads > 0) {
    args.emplace_back("--threads");
    args.push_back(std::to_string(common.threads));
  }
  args.emplace_back("--nvml-timeout");
  args.push_back(duration_arg(common.nvml_timeout));
  args.emplace_back("--proc-timeout");
  args.push_back(common.proc_timeout ? duration_arg(*common.proc_timeout) : "0");
  return args;
}

// What a kill's exit code means, for the last line of its pane (kill --help's list).
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

class TopSession {
 public:
  TopSession(const TopOptions& options, Duration delay, std::shared_ptr<collect::Gatherer> gatherer,
             Gathered first)
      : options_(options), status_(options.status), delay_(delay), gatherer_(std::move(gatherer)) {
    accept(std::move(first));
  }

  int run() {
    auto opened = TopTerminal::open(!no_color());
    if (!opened.ok()) {
      std::cerr << "gpuclean: top: " << opened.error().message() << '\n';
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
    last_gathered_ = std::move(gathered);
    diagnose_last();
    ++refreshes_;
    if (report_) history_.add(report_->time, report_->diagnosis.gpus);
    // The table's rows point into the report just replaced: composed again before any key
    // moves the selection through them (the review found keys read freed rows).
    if (terminal_) redraw();
  }

  void diagnose_last() {
    if (!last_gathered_) return;
    std::ostringstream out;
    std::ostringstream err;
    StatusPrepared prepared = prepare_status(status_, *last_gathered_, Io{out, err});
    if (!prepared.usable) {
      // --gpus while NVML has stopped answering: the whole machine's view, its verdict
      // UNKNOWN, never the last good screen with its old verdict; the reason in the footer.
      std::string why = err.str();
      if (!why.empty() && why.back() == '\n') why.pop_back();
      StatusOptions all = status_;
      all.common.gpus = "all";
      std::ostringstream ignored;
      StatusPrepared whole = prepare_status(all, *last_gathered_, Io{out, ignored});
      if (whole.usable) report_ = std::move(whole.report);
      diagnosis_message_ = output::escape_terminal(why);
      state_.message = diagnosis_message_;
      return;
    }
    if (!diagnosis_message_.empty() && state_.message == diagnosis_message_) state_.message.clear();
    diagnosis_message_.clear();
    report_ = std::move(prepared.report);
  }

  int loop() {
    redraw();
    while (true) {
      if (TopTerminal::stop_requested()) return kExitClean;
      if (options_.iterations > 0 && refreshes_ >= options_.iterations) return kExitClean;
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
    frame.now = unix_now();
    frame.delay_seconds = std::chrono::duration<double>(delay_).count();
    frame.refresh_note = refresh_note_;
    frame.unicode = terminal_->unicode();
    last_screen_ = output::compose_top(frame, state_, terminal_->width(), terminal_->height());
    terminal_->paint(last_screen_.lines);
  }

  // False: quit.
  bool handle_key(int key) {
    if (key == KEY_RESIZE) return true;
    if (!state_.prompt.empty() || prompt_kind_ != Prompt::kNone) return handle_prompt_key(key);
    if (state_.pane) return handle_pane_key(key);
    state_.message.clear();
    switch (key) {
      case 'q':
        return false;
      case KEY_DOWN:
      case 'j':
        move_selection(1);
        break;
      case KEY_UP:
      case 'k':
        move_selection(-1);
        break;
      case KEY_NPAGE:
        move_selection(static_cast<long>(std::max<std::size_t>(last_screen_.table_height, 1)));
        break;
      case KEY_PPAGE:
        move_selection(-static_cast<long>(std::max<std::size_t>(last_screen_.table_height, 1)));
        break;
      case KEY_HOME:
        move_selection(-1000000);
        break;
      case KEY_END:
        move_selection(1000000);
        break;
      case 't':
        state_.tree = !state_.tree;
        break;
      case 's':
        state_.sort = output::next(state_.sort);
        break;
      case '/':
        start_prompt(Prompt::kFilter, state_.filter);
        break;
      case 'g':
        start_prompt(Prompt::kGpus, status_.common.gpus);
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
    auto parsed = parse_gpu_list(text);
    if (!parsed.ok()) {
      state_.message = "GPUs: " + output::escape_terminal(parsed.error().message());
      return;
    }
    const std::string before = status_.common.gpus;
    status_.common.gpus = text;
    const auto previous = report_;
    diagnose_last();
    if (!diagnosis_message_.empty()) {
      status_.common.gpus = before;  // unusable (no such GPU, or no NVML): as it was
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

  [[nodiscard]] const Holder* selected_holder() const {
    if (!report_ || !state_.selected) return nullptr;
    for (const Holder& h : report_->diagnosis.holders) {
      if (h.process.pid == *state_.selected) return &h;
    }
    return nullptr;
  }

  void explain_selected() {
    const Holder* holder = selected_holder();
    if (holder == nullptr) {
      state_.message = "no holder selected";
      return;
    }
    const output::ExplainSubject subject =
        read_explain_subject(*report_, holder->process.pid, status_.common);
    std::ostringstream text;
    output::render_explain_text(text, *report_, subject);
    state_.pane = TopPane{fmt::format("Explain pid {}", holder->process.pid),
                          split_lines(text.str()), 0, "Esc/q close  ↑↓ scroll"};
  }

  enum class KillStage { kNone, kPlanning, kConfirm, kKilling, kDone };

  void plan_kill() {
    const Holder* holder = selected_holder();
    if (holder == nullptr) {
      state_.message = "no holder selected";
      return;
    }
    if (!holder->visible) {
      state_.message = "not visible from this PID namespace: nothing here can signal it";
      return;
    }
    kill_pid_ = holder->process.pid;
    kill_start_ticks_ = holder->process.start_ticks;
    std::vector<std::string> argv = {"gpuclean", "kill", kill_selector(), "--dry-run"};
    for (std::string& arg : common_args(status_.common)) argv.push_back(std::move(arg));
    state_.pane = TopPane{
        fmt::format("Kill pid {} and its descendants", kill_pid_), {"planning…"}, 0, "Esc cancel"};
    std::string error;
    child_ = start_child(argv, false, error);
    kill_stage_ = child_ ? KillStage::kPlanning : KillStage::kDone;
    if (!child_) finish_pane({error}, "Esc/q close");
  }

  // The child's output arrived or it ended; true when the pane changed.
  bool pump_kill() {
    const std::size_t before = child_->text.size();
    pump_child(*child_);
    if (!child_->exit_code) {
      if (child_->text.size() == before) return false;
      state_.pane->lines = split_lines(child_->text);
      state_.pane->lines.insert(state_.pane->lines.begin(),
                                kill_stage_ == KillStage::kKilling ? "Killing…" : "planning…");
      return true;
    }
    const int code = *child_->exit_code;
    std::vector<std::string> lines = split_lines(child_->text);
    child_.reset();
    if (kill_stage_ == KillStage::kPlanning) {
      if (code != kExitClean) {
        lines.emplace_back("");
        lines.push_back("not planned: " + kill_outcome(code, nvml_present()));
        finish_pane(std::move(lines), "Esc/q close");
        return true;
      }
      // "Plan: 3 processes (…)": the count for the question, as kill asks it.
      std::size_t count = 0;
      for (const std::string& line : lines) {
        if (std::sscanf(line.c_str(), "Plan: %zu process", &count) == 1) break;  // NOLINT
      }
      if (count == 0) {
        lines.emplace_back("");
        lines.emplace_back("nothing to kill");
        finish_pane(std::move(lines), "Esc/q close");
        return true;
      }
      lines.emplace_back("");
      lines.push_back(fmt::format("Kill {} process{}? [y/N]", count, count == 1 ? "" : "es"));
      state_.pane->lines = std::move(lines);
      state_.pane->keys = "y kill  any other key: do not";
      kill_stage_ = KillStage::kConfirm;
      flushinp();  // a key typed before the question was shown is not its answer
      return true;
    }
    lines.emplace_back("");
    lines.push_back(fmt::format("exit {}: {}", code, kill_outcome(code, nvml_present())));
    finish_pane(std::move(lines), "Esc/q/Enter close");
    collector_->refresh_now();  // the screen shows what is left at once
    return true;
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
    for (std::string& arg : common_args(status_.common)) argv.push_back(std::move(arg));
    std::string error;
    child_ = start_child(argv, true, error);
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
      (void)::syscall(SYS_pidfd_send_signal, child_->launched.pidfd.get(), SIGKILL, nullptr, 0);
      ::waitpid(child_->launched.pid, nullptr, 0);
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

  const TopOptions& options_;
  StatusOptions status_;  // changed by `g`
  Duration delay_;
  std::shared_ptr<collect::Gatherer> gatherer_;
  std::unique_ptr<TopTerminal> terminal_;
  Collector* collector_ = nullptr;
  std::optional<Gathered> last_gathered_;
  std::optional<output::StatusReport> report_;
  output::MemoryHistory history_;
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

int run_top(const TopOptions& options, const Io& io) {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDOUT_FILENO) == 0) {
    io.err << "gpuclean: top needs a terminal (it is a live, full-screen view); for a script or a "
              "log use gpuclean status, gpuclean status --json, or gpuclean wait\n";
    return kExitUsage;
  }
  auto delay = parse_duration(options.delay);
  if (!delay.ok() || delay->count() < 100) {
    io.err << "gpuclean: top: --delay "
           << (delay.ok() ? "must be at least 100ms" : delay.error().message()) << '\n';
    return kExitUsage;
  }
  auto full_scan = parse_duration(options.full_scan);
  if (!full_scan.ok()) {
    io.err << "gpuclean: top: --full-scan " << full_scan.error().message() << '\n';
    return kExitUsage;
  }
  auto opened = collect::Gatherer::open(options.status.common);
  if (auto* error = std::get_if<collect::GatherError>(&opened)) {
    io.err << "gpuclean: " << error->message << '\n';
    return exit_code_of(*error);
  }
  std::shared_ptr<collect::Gatherer> gatherer = std::move(std::get<0>(opened));
  gatherer->scan_in_turns(*full_scan);
  gatherer->start_nvml_helper();  // before any thread: it forks
  // The first look before the screen opens: a bad --gpus or --allow-user is said plainly.
  Gathered first = gatherer->collect();
  {
    std::ostringstream out;
    if (StatusPrepared prepared = prepare_status(options.status, first, Io{out, io.err});
        !prepared.usable) {
      return prepared.exit_code;
    }
  }
  TopSession session(options, *delay, std::move(gatherer), std::move(first));
  return session.run();
}

}  // namespace gpuclean::cli
