// Result<T>: a value or an Error (errno + what we were doing), in the style of bpftrace's
// util/result.h. Used for every fallible kernel/driver touchpoint; exceptions are only for bugs.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace gpuclean {

struct Error {
  int errnum = 0;       // errno value, or 0 when the failure is not a syscall's
  std::string context;  // what failed, e.g. "open /proc/42/stat"

  // "open /proc/42/stat: No such file or directory"
  [[nodiscard]] std::string message() const;

  // A process vanishing between readdir and read shows up as one of these; it is normal.
  [[nodiscard]] bool is_vanished() const { return errnum == ENOENT || errnum == ESRCH; }
};

// Builds an Error from the current errno.
Error errno_error(std::string context);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : data_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  [[nodiscard]] const Error& error() const { return std::get<Error>(data_); }

 private:
  std::variant<T, Error> data_;
};

// Result for operations that produce nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

}  // namespace gpuclean
