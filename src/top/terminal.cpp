#include "top/terminal.h"

#include <fcntl.h>
#include <langinfo.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <clocale>
#include <csignal>
#include <cstring>
#include <string>

// ncurses last: its macros (OK, ERR, timeout, …) would clash with names above.
#include <curses.h>
#include <term.h>
// term.h defines capabilities as macros with common names.
#undef lines
#undef columns

namespace gpuclean::top {
namespace {

// What the signal handlers need, kept where an async-signal-safe handler can reach it.
struct Restore {
  termios saved{};
  bool have_saved = false;
  char sequence[256] = {};  // rmcup, cnorm and sgr0 from terminfo: the screen as it was
  std::size_t length = 0;
};
Restore g_restore;
std::atomic<bool> g_stop{false};
int g_stop_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int /*signo*/) {
  g_stop = true;
  const char byte = 's';
  [[maybe_unused]] const ssize_t ignored = ::write(g_stop_pipe[1], &byte, 1);
}

// A crash: the terminal back first (no curses call: only write and tcsetattr, which are
// async-signal-safe), then the default action, so the crash still dumps core and reports as
// itself to the shell.
extern "C" void on_fatal_signal(int signo) {
  if (g_restore.length > 0) {
    [[maybe_unused]] const ssize_t ignored =
        ::write(STDOUT_FILENO, g_restore.sequence, g_restore.length);
  }
  if (g_restore.have_saved) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_restore.saved);
  (void)::signal(signo, SIG_DFL);
  (void)::raise(signo);
}

void remember_restore_sequence() {
  g_restore.length = 0;
  for (const char* capability : {"rmcup", "cnorm", "sgr0"}) {
    // tigetstr takes a char*; terminfo does not write through it.
    char* value =
        ::tigetstr(const_cast<char*>(capability));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
    if (value == nullptr || value == reinterpret_cast<char*>(-1)) continue;  // NOLINT
    const std::size_t n = std::strlen(value);
    if (g_restore.length + n + 2 >= sizeof(g_restore.sequence)) break;
    std::memcpy(g_restore.sequence + g_restore.length, value, n);
    g_restore.length += n;
  }
  std::memcpy(g_restore.sequence + g_restore.length, "\r\n", 2);
  g_restore.length += 2;
}

void install_handlers() {
  if (g_stop_pipe[0] < 0) {
    if (::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_stop_pipe[0] = g_stop_pipe[1] = -1;
  }
  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;
  sigemptyset(&stop.sa_mask);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signo, &stop, nullptr);
  struct sigaction fatal {};
  fatal.sa_handler = on_fatal_signal;
  sigemptyset(&fatal.sa_mask);
  fatal.sa_flags = static_cast<int>(SA_RESETHAND);
  for (int signo : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::sigaction(signo, &fatal, nullptr);
}

void uninstall_handlers() {
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    (void)::signal(signo, SIG_DFL);
  }
}

enum Pair : short { kPairRed = 1, kPairGreen, kPairYellow };

}  // namespace

Result<std::unique_ptr<Terminal>> Terminal::open(bool color) {
  (void)std::setlocale(LC_ALL, "");
  const bool unicode = std::strcmp(::nl_langinfo(CODESET), "UTF-8") == 0;
  termios saved{};
  const bool have_saved = ::tcgetattr(STDIN_FILENO, &saved) == 0;
  // newterm instead of initscr: initscr exits the process on an unknown terminal type.
  SCREEN* screen = ::newterm(nullptr, stdout, stdin);
  if (screen == nullptr) {
    const char* term = std::getenv("TERM");
    return Error{0, std::string("cannot use this terminal (TERM=") + (term ? term : "unset") +
                        "): ncurses has no description of it"};
  }
  ::set_term(screen);
  g_restore.saved = saved;
  g_restore.have_saved = have_saved;
  remember_restore_sequence();
  g_stop = false;
  install_handlers();
  ::set_escdelay(25);  // Esc closes a pane at once, not after a second
  ::cbreak();
  ::noecho();
  ::nonl();
  ::keypad(stdscr, TRUE);
  ::nodelay(stdscr, TRUE);
  ::curs_set(0);
  if (color && ::has_colors()) {
    ::start_color();
    ::use_default_colors();
    ::init_pair(kPairRed, COLOR_RED, -1);
    ::init_pair(kPairGreen, COLOR_GREEN, -1);
    ::init_pair(kPairYellow, COLOR_YELLOW, -1);
  } else {
    color = false;
  }
  return std::unique_ptr<Terminal>(new Terminal(color, unicode));
}

Terminal::~Terminal() {
  ::endwin();
  uninstall_handlers();
  g_restore.length = 0;
  g_restore.have_saved = false;
}

int Terminal::width() const {
  return getmaxx(stdscr);
}

int Terminal::height() const {
  return getmaxy(stdscr);
}

void Terminal::paint(const std::vector<output::ScreenLine>& lines) const {
  using output::Style;
  ::erase();
  const int rows = height();
  for (std::size_t y = 0; y < lines.size() && static_cast<int>(y) < rows; ++y) {
    ::move(static_cast<int>(y), 0);
    for (const output::Segment& segment : lines[y]) {
      attr_t attributes = A_NORMAL;
      short pair = 0;
      switch (segment.style) {
        case Style::kNormal:
          break;
        case Style::kDim:
          attributes = A_DIM;
          break;
        case Style::kBold:
          attributes = A_BOLD;
          break;
        case Style::kSelected:
          attributes = A_REVERSE;
          break;
        case Style::kRed:
          pair = kPairRed;
          attributes = color_ ? A_NORMAL : A_BOLD;
          break;
        case Style::kGreen:
          pair = kPairGreen;
          break;
        case Style::kYellow:
          pair = kPairYellow;
          attributes = color_ ? A_NORMAL : A_BOLD;
          break;
      }
      ::attrset(
          static_cast<int>(attributes | (color_ ? static_cast<attr_t>(COLOR_PAIR(pair)) : 0U)));
      // The bottom-right cell makes addstr report an error (the cursor cannot move past it);
      // the text is drawn all the same.
      (void)::addstr(segment.text.c_str());
    }
  }
  ::attrset(A_NORMAL);
  ::refresh();
}

std::optional<int> Terminal::key() {
  const int key = ::getch();
  if (key == ERR) return std::nullopt;
  return key;
}

int Terminal::stop_fd() const {
  return g_stop_pipe[0];
}

bool Terminal::stop_requested() {
  return g_stop;
}

}  // namespace gpuclean::top
