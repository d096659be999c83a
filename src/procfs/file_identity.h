// What the kernel says a file is (core/model.h FileIdentity), taken from the file itself.
#pragma once

#include <optional>
#include <string>

#include "core/model.h"

namespace gpuclean::procfs {

// stat(2) of a path (following symlinks). nullopt when it cannot be stat'ed (errno set).
std::optional<FileIdentity> identity_of_path(const std::string& path);

// The identity of what dir_fd/name leads to, following it: for /proc/PID/fd/N (and
// map_files/RANGE) the kernel jumps to the open file itself, whatever path or mount namespace
// it was opened through — never a lookup of the link's text. One statx(2) asking only for the
// type and inode (the device numbers come with every call) and AT_STATX_DONT_SYNC: a network
// or FUSE file system answers from its cache instead of asking its server. nullopt with errno
// set on failure (ENOENT: closed meanwhile; EACCES/EPERM: not permitted).
std::optional<FileIdentity> identity_at(int dir_fd, const char* name);

}  // namespace gpuclean::procfs
