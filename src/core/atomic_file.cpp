#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace gpuclean {
namespace {

// Eight random bytes as hex: a name nobody can plant a link at in advance. getrandom(2) does
// not block once the pool is initialised (long before anyone runs gpuclean); should it fail,
// the clock and the PID still make a name that differs per call, and O_EXCL|O_NOFOLLOW keep
// a guessed one harmless.
std::string random_temp_name() {
  std::array<unsigned char, 8> bytes{};
  if (::getrandom(bytes.data(), bytes.size(), GRND_NONBLOCK) !=
      static_cast<ssize_t>(bytes.size())) {
    auto mix =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<std::uint64_t>(::getpid()) << 40U);
    for (unsigned char& b : bytes) {
      b = static_cast<unsigned char>(mix & 0xffU);
      mix >>= 8U;
    }
  }
  std::string name = ".gpuclean-";
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    name += kHex[b >> 4U];
    name += kHex[b & 0xfU];
  }
  return name + ".tmp";
}

// Retries with a fresh name when one is taken (EEXIST: a file or a planted link).
constexpr int kNameAttempts = 16;

}  // namespace

Result<AtomicFile> AtomicFile::create(const std::string& path, unsigned mode,
                                      AtomicFileHooks hooks) {
  AtomicFile file;
  file.path_ = path;
  const std::size_t slash = path.rfind('/');
  file.directory_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  file.name_ = slash == std::string::npos ? path : path.substr(slash + 1);
  if (file.name_.empty() || file.name_ == "." || file.name_ == "..") {
    return Error{EISDIR, path};
  }
  // The directory is resolved once; the temp file, the rename and the fsync all go through
  // this descriptor, so swapping the directory for a link midway changes nothing.
  // O_NOFOLLOW: a link planted at the directory's own name (another user's
  // /tmp/shared/out -> /etc) is refused rather than written through.
  file.dir_ =
      UniqueFd(::open(file.directory_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!file.dir_) {
    if (errno == ELOOP || errno == ENOTDIR) {
      struct stat st {};
      if (::lstat(file.directory_.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        return Error{
            0, "directory " + file.directory_ + " is a symbolic link: give the directory itself"};
      }
    }
    return errno_error("open directory " + file.directory_);
  }
  // Others who can write the directory can swap our file for theirs between the write and
  // the rename, unless the directory is sticky (then only the owner of a name may remove it).
  struct stat dir_st {};
  if (::fstat(file.dir_.get(), &dir_st) != 0) return errno_error("stat " + file.directory_);
  if ((dir_st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (dir_st.st_mode & S_ISVTX) == 0) {
    return Error{0, "directory " + file.directory_ +
                        " is writable by other users and not sticky: they could replace the "
                        "file; write into a directory only you can write, or make it sticky "
                        "(chmod +t)"};
  }
  file.hooks_ = std::move(hooks);
  int err = EEXIST;
  for (int attempt = 0; attempt < kNameAttempts && err == EEXIST; ++attempt) {
    file.temp_name_ = file.hooks_.temp_name ? file.hooks_.temp_name() : random_temp_name();
    file.fd_ = UniqueFd(::openat(file.dir_.get(), file.temp_name_.c_str(),
                                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (file.fd_) {
      file.pending_ = true;
      return file;
    }
    err = errno;
  }
  return Error{err, "create a file in " + file.directory_};
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      directory_(std::move(other.directory_)),
      name_(std::move(other.name_)),
      temp_name_(std::move(other.temp_name_)),
      dir_(std::move(other.dir_)),
      fd_(std::move(other.fd_)),
      hooks_(std::move(other.hooks_)),
      pending_(std::exchange(other.pending_, false)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    directory_ = std::move(other.directory_);
    name_ = std::move(other.name_);
    temp_name_ = std::move(other.temp_name_);
    dir_ = std::move(other.dir_);
    fd_ = std::move(other.fd_);
    hooks_ = std::move(other.hooks_);
    pending_ = std::exchange(other.pending_, false);
  }
  return *this;
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::discard() noexcept {
  fd_.reset();
  // Relative to the directory descriptor: only our own temp file, wherever the path points now.
  if (pending_) (void)::unlinkat(dir_.get(), temp_name_.c_str(), 0);
  pending_ = false;
}

std::string AtomicFile::temp_path() const {
  return (directory_ == "/" ? "" : directory_) + "/" + temp_name_;
}

Status AtomicFile::commit(std::string_view contents) {
  if (!pending_ || !fd_) return Error{EBADF, "write " + path_ + ": already committed"};
  // errno is taken before the message is built: nothing may overwrite it first.
  // The step alone ("write: No space left on device"): callers name the user's path, never
  // the temp file, which is gone after discard() anyway.
  auto fail = [this](const char* what) -> Status {
    const int err = errno;
    Error error{err, what};
    discard();
    return error;
  };
  while (!contents.empty()) {
    const ssize_t n = hooks_.write ? hooks_.write(fd_.get(), contents.data(), contents.size())
                                   : ::write(fd_.get(), contents.data(), contents.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    if (n == 0) {
      // write(2) of a non-empty buffer to a regular file never returns 0 unless something is
      // badly wrong; stop instead of looping.
      errno = EIO;
      return fail("write");
    }
    contents.remove_prefix(static_cast<std::size_t>(n));
  }
  // Without fsync a crash after the rename can leave an empty file under the target's name
  // (ext4 and xfs commit the rename before the data).
  if (::fsync(fd_.get()) != 0) return fail("fsync");
  // close() reports what a network filesystem deferred; the descriptor is gone either way.
  if (::close(fd_.release()) != 0) return fail("close");
  if (::renameat(dir_.get(), temp_name_.c_str(), dir_.get(), name_.c_str()) != 0) {
    return fail("rename");
  }
  pending_ = false;
  // The rename itself is durable only once the directory is.
  if (::fsync(dir_.get()) != 0) return errno_error("fsync directory " + directory_);
  return Ok{};
}

Status write_file_atomically(const std::string& path, std::string_view contents, unsigned mode) {
  auto file = AtomicFile::create(path, mode);
  if (!file.ok()) return file.error();
  return file->commit(contents);
}

}  // namespace gpuclean
