#include "procfs/capabilities.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gpuclean::procfs {
namespace {

// One capget (the libc wrapper is libcap's; the system call is two structs).
bool has_effective(unsigned capability) {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  const unsigned word = capability / 32;
  if (word >= _LINUX_CAPABILITY_U32S_3) return false;
  return (data[word].effective & (1u << (capability % 32))) != 0;
}

}  // namespace

bool may_read_every_process() {
  return has_effective(CAP_SYS_PTRACE);
}

bool may_signal_every_process() {
  return has_effective(CAP_KILL);
}

bool may_administer_devices() {
  return has_effective(CAP_SYS_ADMIN);
}

}  // namespace gpuclean::procfs
