#include "svg_reading.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <regex>

namespace gpuclean::testing {

namespace {

// A reference at `at` ("&amp;", "&#60;"): its length, or 0 for a bare '&'.
std::size_t reference_length(const std::string& doc, std::size_t at) {
  static const std::regex reference_pattern("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
  std::smatch m;
  const std::string rest = doc.substr(at, 16);
  return std::regex_search(rest, m, reference_pattern) ? static_cast<std::size_t>(m.length(0)) : 0;
}

// What in `text` (character data or an attribute's value) XML refuses: a '<', a bare '&', a
// control character other than tab, newline and return. Empty when it is fine.
std::string text_error(const std::string& doc, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    const auto c = static_cast<unsigned char>(doc[i]);
    if (c == '<') return "a '<' in text at " + std::to_string(i);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      return "control character " + std::to_string(c) + " at " + std::to_string(i);
    }
    if (c == '&') {
      const std::size_t length = reference_length(doc, i);
      if (length == 0) return "a bare '&' at " + std::to_string(i);
      i += length - 1;
    }
  }
  return "";
}

// A start tag's attributes from `at` (after its name) to its '>'; moves `at` past it. Each
// attribute once, its value quoted and clean.
std::string attributes_error(const std::string& doc, std::size_t& at, bool& empty_element) {
  static const std::regex attribute_pattern(R"(^\s+([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*(["']))");
  std::vector<std::string> names;
  while (true) {
    const std::size_t after_space = doc.find_first_not_of(" \t\n\r", at);
    if (after_space == std::string::npos) return "an unclosed tag";
    if (doc.compare(after_space, 2, "/>") == 0 || doc[after_space] == '>') {
      empty_element = doc[after_space] == '/';
      at = after_space + (empty_element ? 2 : 1);
      return "";
    }
    std::smatch m;
    const std::string rest = doc.substr(at, 200);
    if (!std::regex_search(rest, m, attribute_pattern))
      return "a malformed attribute at " + std::to_string(at);
    const std::string name = m[1].str();
    if (std::find(names.begin(), names.end(), name) != names.end())
      return "attribute " + name + " twice";
    names.push_back(name);
    const std::size_t value = at + static_cast<std::size_t>(m.length(0));
    const std::size_t close = doc.find(m[2].str(), value);
    if (close == std::string::npos) return "an unclosed attribute value";
    if (std::string e = text_error(doc, value, close); !e.empty()) return e;
    at = close + 1;
  }
}

// Whether `doc` is well-formed XML, as far as a document of ours goes (no DTD, no CDATA): one
// root element, every element closed in order, attributes quoted and each once, no '<' or bare

}  // namespace

std::vector<std::string> all(const std::string& svg, const std::string& pattern) {
  std::vector<std::string> found;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    found.push_back((*it)[1].str());
  }
  return found;
}

std::size_t count(const std::string& svg, const std::string& text) {
  std::size_t n = 0;
  for (std::size_t at = svg.find(text); at != std::string::npos; at = svg.find(text, at + 1)) ++n;
  return n;
}

// '&' in text or a value, no control character. Empty when it is; else what is wrong.
std::string xml_error(const std::string& doc) {
  static const std::regex name_pattern(R"(^[A-Za-z_:][-A-Za-z0-9_:.]*)");
  std::vector<std::string> open;
  std::size_t roots = 0;
  std::size_t at = 0;
  while (at < doc.size()) {
    const std::size_t tag = doc.find('<', at);
    const std::size_t text_end = tag == std::string::npos ? doc.size() : tag;
    if (std::string e = text_error(doc, at, text_end); !e.empty()) return e;
    if (open.empty() && doc.find_first_not_of(" \t\n\r", at) < text_end) {
      return "text outside the root element";
    }
    if (tag == std::string::npos) break;
    if (doc.compare(tag, 4, "<!--") == 0) {
      at = doc.find("-->", tag);
      if (at == std::string::npos) return "an unclosed comment";
      at += 3;
      continue;
    }
    const bool closing = doc.compare(tag, 2, "</") == 0;
    std::smatch m;
    const std::string rest = doc.substr(tag + (closing ? 2 : 1), 100);
    if (!std::regex_search(rest, m, name_pattern))
      return "a malformed tag at " + std::to_string(tag);
    const std::string name = m[0].str();
    at = tag + (closing ? 2 : 1) + name.size();
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
      open.pop_back();
      at = doc.find_first_not_of(" \t\n\r", at);
      if (at == std::string::npos || doc[at] != '>') return "a malformed closing tag";
      ++at;
      continue;
    }
    if (open.empty() && ++roots > 1) return "a second root element";
    bool empty_element = false;
    if (std::string e = attributes_error(doc, at, empty_element); !e.empty()) return e;
    if (!empty_element) open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return roots == 1 ? "" : "no root element";
}

// The outline of each group's bar, as (key shown, width), in the order drawn.

double tick_x(const std::string& svg, const std::string& label) {
  const auto xs = all(svg, "<text class=\"tick\" x=\"([0-9.]+)\"[^>]*>" + label + "</text>");
  EXPECT_EQ(xs.size(), 1u) << label;
  return xs.empty() ? 0 : std::stod(xs[0]);
}

void InUtc::SetUp() {
  const char* tz = std::getenv("TZ");
  if (tz != nullptr) saved_tz_ = tz;
  ::setenv("TZ", "UTC", 1);
  ::tzset();
}

void InUtc::TearDown() {
  if (saved_tz_) {
    ::setenv("TZ", saved_tz_->c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
}

}  // namespace gpuclean::testing
