#include "procfs/file_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace gpuclean::procfs {
namespace {

FileIdentity::Kind kind_of(unsigned mode) {
  if (S_ISCHR(mode)) return FileIdentity::Kind::kCharDevice;
  if (S_ISBLK(mode)) return FileIdentity::Kind::kBlockDevice;
  return FileIdentity::Kind::kOther;
}

}  // namespace

std::optional<FileIdentity> identity_of_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  FileIdentity id;
  id.kind = kind_of(st.st_mode);
  if (id.kind != FileIdentity::Kind::kOther) {
    id.rdev_major = major(st.st_rdev);
    id.rdev_minor = minor(st.st_rdev);
  }
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  return id;
}

std::optional<FileIdentity> identity_at(int dir_fd, const char* name) {
  struct statx sx {};
  if (::statx(dir_fd, name, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &sx) != 0) {
    return std::nullopt;
  }
  FileIdentity id;
  id.kind = kind_of(sx.stx_mode);
  if (id.kind != FileIdentity::Kind::kOther) {
    id.rdev_major = sx.stx_rdev_major;
    id.rdev_minor = sx.stx_rdev_minor;
  }
  id.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  id.ino = sx.stx_ino;
  return id;
}

}  // namespace gpuclean::procfs
