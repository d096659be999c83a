#include "core/result.h"

#include <cstring>

namespace gpuclean {

std::string Error::message() const {
  if (errnum == 0) return context;
  return context + ": " + std::strerror(errnum);
}

Error errno_error(std::string context) {
  return Error{errno, std::move(context)};
}

}  // namespace gpuclean
