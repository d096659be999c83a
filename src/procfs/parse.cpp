#include "procfs/parse.h"

#include <algorithm>
#include <vector>

#include "core/whole_number.h"

namespace gpuclean::procfs {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n';
}

// Splits on runs of blanks (stat's fields are single-space separated, status's tab separated).
std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_blank(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_blank(text[i])) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

Result<StatFields> parse_stat(std::string_view text) {
  const std::size_t open = text.find('(');
  const std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Error{0, "stat: no (comm)"};
  }
  StatFields out;
  auto pid = whole_number<Pid>(trim(text.substr(0, open)));
  if (!pid) return Error{0, "stat: bad pid"};
  out.pid = *pid;
  out.comm = std::string(text.substr(open + 1, close - open - 1));

  // Fields after comm, numbered from 3 (state) as in proc(5).
  const auto rest = split_fields(text.substr(close + 1));
  auto field = [&rest](std::size_t number) -> std::optional<std::string_view> {
    const std::size_t index = number - 3;
    if (index >= rest.size()) return std::nullopt;
    return rest[index];
  };
  auto state = field(3);
  if (!state || state->size() != 1) return Error{0, "stat: bad state"};
  out.state = (*state)[0];
  auto number_at = [&](std::size_t n, auto& dest) -> bool {
    auto f = field(n);
    if (!f) return false;
    auto v = whole_number<std::remove_reference_t<decltype(dest)>>(*f);
    if (!v) return false;
    dest = *v;
    return true;
  };
  if (!number_at(4, out.ppid) || !number_at(5, out.pgid) || !number_at(6, out.sid) ||
      !number_at(9, out.flags) || !number_at(20, out.num_threads) ||
      !number_at(22, out.start_ticks)) {
    return Error{0, "stat: truncated or malformed"};
  }
  // Only top's CPU% and RSS columns use these: a stat line without them still parses.
  std::uint64_t user = 0;
  std::uint64_t system = 0;
  if (number_at(14, user) && number_at(15, system)) out.cpu_ticks = user + system;
  (void)number_at(24, out.rss_pages);
  return out;
}

StatusFields parse_status(std::string_view text) {
  StatusFields out;
  for_each_line(text, [&out](std::string_view line) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    if (key == "Uid") {
      // real, effective, saved, fs
      const auto ids = split_fields(value);
      if (ids.size() >= 2) out.euid = whole_number<Uid>(ids[1]);
    } else if (key == "Tgid") {
      out.tgid = whole_number<Pid>(trim(value));
    } else if (key == "NSpid") {
      for (std::string_view id : split_fields(value)) {
        if (auto pid = whole_number<Pid>(id)) out.nspid.push_back(*pid);
      }
    }
  });
  return out;
}

std::vector<std::string> parse_cmdline(std::string_view text) {
  std::vector<std::string> argv;
  if (text.empty()) return argv;
  if (text.back() == '\0') text.remove_suffix(1);
  std::size_t start = 0;
  while (true) {
    const std::size_t nul = text.find('\0', start);
    argv.emplace_back(text.substr(start, nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  return argv;
}

std::optional<std::string> parse_cgroup_v2(std::string_view text) {
  std::optional<std::string> out;
  for_each_line(text, [&out](std::string_view line) {
    if (line.substr(0, 3) == "0::") out = std::string(line.substr(3));
  });
  return out;
}

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string decode_mount_field(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string_view digits = field.substr(i + 1, 3);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(
            static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos < line.size()) {
    const std::size_t next = line.find(' ', pos);
    const std::size_t end = next == std::string_view::npos ? line.size() : next;
    if (end > pos) fields.push_back(line.substr(pos, end - pos));
    pos = end + 1;
  }
  return fields;
}

}  // namespace

std::optional<MountinfoLine> parse_mountinfo_line(std::string_view line) {
  const std::vector<std::string_view> fields = split_spaces(line);
  const auto dash = std::find(fields.begin(), fields.end(), std::string_view("-"));
  if (fields.size() < 5 || dash == fields.end() || dash + 1 == fields.end()) return std::nullopt;
  MountinfoLine out;
  out.root = decode_mount_field(fields[3]);
  out.mount_point = decode_mount_field(fields[4]);
  out.fstype = *(dash + 1);
  if (fields.end() - dash >= 4) out.super_options = *(dash + 3);
  return out;
}

std::optional<Cgroup2Mount> parse_cgroup2_mount(std::string_view mountinfo) {
  std::optional<Cgroup2Mount> found;
  for_each_line(mountinfo, [&found](std::string_view line) {
    if (found) return;
    auto mount = parse_mountinfo_line(line);
    if (!mount || mount->fstype != "cgroup2") return;
    found = Cgroup2Mount{std::move(mount->mount_point), std::move(mount->root)};
  });
  return found;
}

std::optional<MapsLine> parse_maps_line(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  // Five space-separated fields, then (optionally) spaces and the path, which may itself hold
  // spaces.
  std::string_view fields[5];
  std::string_view rest = line;
  for (std::string_view& field : fields) {
    const std::size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(start);
    const std::size_t end = rest.find(' ');
    field = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  MapsLine out;
  out.range = fields[0];
  if (out.range.find('-') == std::string_view::npos) return std::nullopt;
  const std::size_t colon = fields[3].find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto major = whole_number<unsigned>(fields[3].substr(0, colon), 16);
  auto minor = whole_number<unsigned>(fields[3].substr(colon + 1), 16);
  auto inode = whole_number<std::uint64_t>(fields[4]);
  if (!major || !minor || !inode) return std::nullopt;
  out.dev_major = *major;
  out.dev_minor = *minor;
  out.inode = *inode;
  const std::size_t path_start = rest.find_first_not_of(' ');
  if (path_start != std::string_view::npos && rest[path_start] == '/') {
    out.path = rest.substr(path_start);
  }
  return out;
}

std::string map_files_name(std::string_view range) {
  auto unpadded = [](std::string_view hex) {
    const std::size_t first = hex.find_first_not_of('0');
    if (first != std::string_view::npos) return hex.substr(first);
    return hex.empty() ? hex : std::string_view("0");  // "0000" is address 0
  };
  const std::size_t dash = range.find('-');
  if (dash == std::string_view::npos) return std::string(range);
  std::string name(unpadded(range.substr(0, dash)));
  name += '-';
  name += unpadded(range.substr(dash + 1));
  return name;
}

std::optional<std::uint32_t> parse_fdinfo_flags(std::string_view text) {
  std::optional<std::uint32_t> out;
  for_each_line(text, [&out](std::string_view line) {
    if (line.substr(0, 6) == "flags:") out = whole_number<std::uint32_t>(trim(line.substr(6)), 8);
  });
  return out;
}

std::optional<std::int64_t> parse_btime(std::string_view text) {
  std::optional<std::int64_t> out;
  for_each_line(text, [&out](std::string_view line) {
    if (line.substr(0, 6) == "btime ") out = whole_number<std::int64_t>(trim(line.substr(6)));
  });
  return out;
}

LinkTarget split_deleted(std::string_view target) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (target.size() > kDeleted.size() &&
      target.substr(target.size() - kDeleted.size()) == kDeleted) {
    return {target.substr(0, target.size() - kDeleted.size()), true};
  }
  return {target, false};
}

bool comma_list_has(std::string_view list, std::string_view item) {
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t next = list.find(',', pos);
    const std::size_t end = next == std::string_view::npos ? list.size() : next;
    if (list.substr(pos, end - pos) == item) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace gpuclean::procfs
