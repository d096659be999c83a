#include "output/svg_text.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

#include <fmt/format.h>

#include "core/escape.h"
#include "output/escape.h"

namespace gpuclean::output {

const char* holder_class_colour(std::string_view klass) {
  for (const ClassColour& c : kHolderClassColours) {
    if (klass == c.name) return c.colour;
  }
  return kOtherClassColour;
}

std::string xml_text(std::string_view text) {
  std::string out;
  for (char c : escape_terminal(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    text += shell_word(arg);
  }
  return text.empty() ? "?" : text;
}

double nice_step(double span, int ticks) {
  if (span <= 0) return 1;
  const double raw = span / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

namespace {

// Tick steps in seconds, round on a clock: the first that gives at most 10 ticks is taken.
constexpr std::array<double, 20> kTickSteps = {1,     2,     5,     10,    15,     30,    60,
                                               120,   300,   600,   900,   1800,   3600,  7200,
                                               10800, 21600, 43200, 86400, 172800, 604800};

std::tm local_tm(double t) {
  const auto whole = static_cast<std::time_t>(std::floor(t));
  std::tm broken{};
  localtime_r(&whole, &broken);
  return broken;
}

double tick_step(double span) {
  for (double step : kTickSteps) {
    if (span / step <= 10) return step;
  }
  return kTickSteps.back() * std::ceil(span / kTickSteps.back() / 10);
}

// Round local clock times from `since` to `until`, `step` apart ("10:00", "10:10", …; whole
// days: local midnights). The zone's offset is asked at each tick: a DST change moves it.
std::vector<double> clock_ticks(double since, double until, double step) {
  std::vector<double> ticks;
  double from = since;
  while (ticks.size() < 40) {
    const auto offset = static_cast<double>(local_tm(from).tm_gmtoff);
    const double tick = std::ceil((from + offset) / step) * step - offset;
    if (tick > until) break;
    ticks.push_back(tick);
    from = tick + step / 2;
  }
  return ticks;
}

}  // namespace

std::vector<std::pair<double, std::string>> clock_tick_labels(double since, double until) {
  const double span = until - since;
  const double step = tick_step(span);
  std::tm day = local_tm(since);
  std::vector<std::pair<double, std::string>> labels;
  for (double tick : clock_ticks(since, until, step)) {
    const std::tm broken = local_tm(tick);
    const bool new_day = broken.tm_yday != day.tm_yday || broken.tm_year != day.tm_year;
    day = broken;
    const bool seconds = span < 180;
    std::array<char, 32> text{};
    // The formats inline: -Wformat-nonliteral checks each.
    const std::size_t size = std::strftime(text.data(), text.size(),
                                           step >= 86400 ? "%m-%d"
                                           : new_day ? (seconds ? "%m-%d %H:%M:%S" : "%m-%d %H:%M")
                                                     : (seconds ? "%H:%M:%S" : "%H:%M"),
                                           &broken);
    labels.emplace_back(tick, std::string(text.data(), size));
  }
  return labels;
}

double text_width(std::string_view text, double char_width) {
  return static_cast<double>(escape_terminal(text).size()) * char_width;
}

std::string joined_labels(const std::vector<std::string>& labels, std::size_t shown) {
  std::vector<std::pair<std::string, std::size_t>> counted;
  for (const std::string& label : labels) {
    auto it = std::find_if(counted.begin(), counted.end(),
                           [&](const auto& c) { return c.first == label; });
    if (it == counted.end()) {
      counted.emplace_back(label, 1);
    } else {
      ++it->second;
    }
  }
  std::string text;
  for (std::size_t i = 0; i < std::min(counted.size(), shown); ++i) {
    if (i > 0) text += ", ";
    text += counted[i].first;
    if (counted[i].second > 1) text += fmt::format(" \u00d7{}", counted[i].second);
  }
  if (counted.size() > shown) text += fmt::format(" (+{} more)", counted.size() - shown);
  return text;
}

namespace {

// Whether a label spanning [left, right] can sit in `row` with its line at `x` (see
// place_row_labels).
bool fits(double x, double left, double right, std::size_t row,
          const std::vector<RowLabel>& labels) {
  for (const RowLabel& p : labels) {
    if (!p.row) continue;
    if (*p.row == row && left < p.right + 8 && p.left < right + 8) return false;
    if (*p.row < row && x > p.left - 3 && x < p.right + 3) return false;
    if (*p.row >= row && p.x > left - 3 && p.x < right + 3) return false;
  }
  return true;
}

// `m` in the lowest row it fits, right of its line if there is room, else left of it (the
// side with more room where neither has enough).
void place_one(RowLabel& m, const std::vector<RowLabel>& labels, const LabelRows& rows) {
  const double width = text_width(m.text, rows.char_width);
  const bool right_room = m.x + 3 + width <= rows.max_x;
  const bool left_room = m.x - 3 - width >= rows.min_x;
  std::vector<bool> sides;  // anchor_end, in the order tried
  if (right_room) sides.push_back(false);
  if (left_room) sides.push_back(true);
  if (sides.empty()) sides.push_back(rows.max_x - m.x < m.x - rows.min_x);
  for (std::size_t row = 0; row < rows.max_rows; ++row) {
    for (const bool end : sides) {
      const double left = end ? m.x - 3 - width : m.x + 3;
      if (fits(m.x, left, left + width, row, labels)) {
        m.row = row;
        m.anchor_end = end;
        m.left = left;
        m.right = left + width;
        return;
      }
    }
  }
}

// Labels placed in the order of `forward` (left to right) or its reverse; returns (labels
// without a row, rows used).
std::pair<std::size_t, std::size_t> place_in_order(std::vector<RowLabel>& labels,
                                                   const LabelRows& rows, bool forward) {
  for (RowLabel& m : labels) m.row.reset();
  std::vector<std::size_t> order(labels.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = forward ? i : order.size() - 1 - i;
  std::size_t unplaced = 0;
  std::size_t used = 0;
  for (std::size_t i : order) {
    place_one(labels[i], labels, rows);
    if (labels[i].row) {
      used = std::max(used, *labels[i].row + 1);
    } else {
      ++unplaced;
    }
  }
  return {unplaced, used};
}

}  // namespace

std::size_t place_row_labels(std::vector<RowLabel>& labels, const LabelRows& rows) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const RowLabel& a, const RowLabel& b) { return a.x < b.x; });
  const auto leftwards = place_in_order(labels, rows, false);
  const std::vector<RowLabel> kept = labels;
  const auto rightwards = place_in_order(labels, rows, true);
  if (leftwards <= rightwards) {
    labels = kept;
    return leftwards.second;
  }
  return rightwards.second;
}

}  // namespace gpuclean::output
