#include "procfs/user_names.h"

#include <pwd.h>

#include <vector>

namespace gpuclean::procfs {

std::string UserNames::name(Uid uid) {
  std::lock_guard lock(mutex_);
  if (auto it = cache_.find(uid); it != cache_.end()) return it->second;

  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  std::string name = std::to_string(uid);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr) {
    name = found->pw_name;
  }
  cache_.emplace(uid, name);
  return name;
}

}  // namespace gpuclean::procfs
