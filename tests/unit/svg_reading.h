// Reading an SVG document gpuclean drew back, for the plots' tests (history_plot_test,
// leftover_cost_plot_test): a small well-formedness check (the tags nest, attributes once and
// quoted, no bare '&' or '<' or control character in text: what an XML reader refuses), the
// values a pattern captures, a tick label's x, and a fixture that draws in UTC.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gpuclean::testing {

// Each match's first group of `pattern` in `svg`.
std::vector<std::string> all(const std::string& svg, const std::string& pattern);
// How many times `text` stands in `svg`.
std::size_t count(const std::string& svg, const std::string& text);
// What makes `doc` no well-formed XML; empty when it is.
std::string xml_error(const std::string& doc);
// The x of the tick labelled `label` (exactly one such tick expected).
double tick_x(const std::string& svg, const std::string& label);

// Local time is UTC while a test runs (the plots print local clock times), TZ restored after.
class InUtc : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

 private:
  std::optional<std::string> saved_tz_;
};

}  // namespace gpuclean::testing
