// Pure parsers for /proc text formats. Every function takes the raw file contents (which may be
// truncated, empty or hostile: comm is any bytes the process chose) and never reads anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gpuclean::procfs {

// `text` without leading blanks and tabs and trailing blanks, tabs and newlines.
std::string_view trim(std::string_view text);

// Calls fn(line) for each '\n'-separated line of `text` (a last line without '\n' too).
template <typename Fn>
void for_each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// The fields of /proc/PID/stat (or task/TID/stat) that gpuclean uses.
struct StatFields {
  Pid pid = 0;
  std::string comm;
  char state = '?';
  Pid ppid = 0;
  Pid pgid = 0;
  Pid sid = 0;
  std::uint32_t flags = 0;        // field 9; PF_KTHREAD = 0x00200000
  std::uint32_t num_threads = 0;  // field 20
  std::uint64_t start_ticks = 0;  // field 22
  std::uint64_t cpu_ticks = 0;    // fields 14 + 15: user and system time, clock ticks
  std::uint64_t rss_pages = 0;    // field 24: resident set, pages
};

constexpr std::uint32_t kPfKthread = 0x00200000;

// comm may contain spaces and ')', so it ends at the *last* ')' (htop does the same).
Result<StatFields> parse_stat(std::string_view text);

struct StatusFields {
  std::optional<Uid> euid;
  std::optional<Pid> tgid;  // the thread group (its leader's PID) of the task read
  std::vector<Pid> nspid;   // outermost namespace first
};
StatusFields parse_status(std::string_view text);

// argv split on NUL. A process may rewrite its argv area (setproctitle); whatever is there is
// returned as is, with a trailing NUL dropped.
std::vector<std::string> parse_cmdline(std::string_view text);

// The cgroup v2 path from /proc/PID/cgroup (the "0::" line), if any.
std::optional<std::string> parse_cgroup_v2(std::string_view text);

// Where the cgroup v2 hierarchy is mounted, from /proc/self/mountinfo: the first "cgroup2"
// mount. `root` is the hierarchy path the mount shows at its top ("/" unless it is a bind
// mount of a subtree). Octal escapes (\040 for a space) are decoded.
struct Cgroup2Mount {
  std::string mount_point;
  std::string root;
};
std::optional<Cgroup2Mount> parse_cgroup2_mount(std::string_view mountinfo);

// One line of /proc/PID/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] -
// FSTYPE SOURCE SUPEROPTS", with ROOT and MOUNTPOINT's octal escapes decoded. nullopt for a
// line not in this form.
struct MountinfoLine {
  std::string root;
  std::string mount_point;
  std::string_view fstype;         // points into the line
  std::string_view super_options;  // points into the line; empty when the line has none
};
std::optional<MountinfoLine> parse_mountinfo_line(std::string_view line);

// Whether a comma-separated list (mount options, a cgroup line's controllers) has this item.
bool comma_list_has(std::string_view list, std::string_view item);

// The fields of a /proc/PID/maps line that say which file is mapped:
// "start-end perms offset MAJOR:MINOR inode   path". The device and inode are those of the
// mapped file's own inode (for a device node: the node's inode on its file system, not the
// device it stands for); inode 0 is an anonymous mapping. nullopt for a line that is not in
// this form. The views point into `line`.
struct MapsLine {
  std::string_view range;  // "7f12a000-7f12b000" as printed (zero-padded hex)
  unsigned dev_major = 0;
  unsigned dev_minor = 0;
  std::uint64_t inode = 0;
  std::string_view path;  // empty when anonymous or a pseudo path ("[heap]")
};
std::optional<MapsLine> parse_maps_line(std::string_view line);

// The name of a mapping's entry in /proc/PID/map_files: the range without the zero padding
// maps prints ("7f12a000-7f12b000" stays, "0000a000-0000b000" becomes "a000-b000").
std::string map_files_name(std::string_view range);

// "flags:\t0100002" from /proc/PID/fdinfo/N, as a number.
std::optional<std::uint32_t> parse_fdinfo_flags(std::string_view text);

// "btime 1764500000" from /proc/stat: boot time in seconds since the epoch.
std::optional<std::int64_t> parse_btime(std::string_view text);

// A readlink target of /proc/PID/fd/N or a maps path, split into the path and whether the
// kernel marked it " (deleted)".
struct LinkTarget {
  std::string_view path;
  bool deleted = false;
};
LinkTarget split_deleted(std::string_view target);

}  // namespace gpuclean::procfs
