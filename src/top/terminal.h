// The terminal of `gpuclean top`, on ncurses: painting composed screens (output/top_view.h),
// reading keys, and giving the terminal back as it was — on quit, on SIGINT, SIGTERM and
// SIGHUP (which only ask the loop to stop), and on a crash (a fatal signal restores the
// terminal from the handler, then dies of the signal as it would have).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/result.h"
#include "output/top_view.h"

namespace gpuclean::top {

class Terminal {
 public:
  // Takes over the terminal on stdin/stdout: the alternate screen, no echo, keys one at a time.
  // `color` false: attributes only (NO_COLOR). Fails when the terminal type is unknown.
  static Result<std::unique_ptr<Terminal>> open(bool color);
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  ~Terminal();  // the terminal as it was

  [[nodiscard]] int width() const;
  [[nodiscard]] int height() const;
  // Whether the locale's characters are UTF-8 (block characters may be drawn).
  [[nodiscard]] bool unicode() const { return unicode_; }
  void paint(const std::vector<output::ScreenLine>& lines) const;
  // The next key pressed, or nullopt when none is waiting (never blocks). A resize is the key
  // KEY_RESIZE, after which width() and height() are the new size.
  std::optional<int> key();
  // A descriptor that becomes readable when SIGINT, SIGTERM or SIGHUP arrived (or a key is
  // pending on stdin: poll both).
  [[nodiscard]] int stop_fd() const;
  [[nodiscard]] static bool stop_requested();

 private:
  Terminal(bool color, bool unicode) : color_(color), unicode_(unicode) {}
  bool color_;
  bool unicode_;
};

}  // namespace gpuclean::top
