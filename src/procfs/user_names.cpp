#include "procfs/user_names.h"

#include <pwd.h>

#include <vector>

#include "core/whole_number.h"

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

Result<Uid> uid_of_user(const std::string& name_or_number) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (!name_or_number.empty() &&
      ::getpwnam_r(name_or_number.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 &&
      found != nullptr) {
    return Uid{found->pw_uid};
  }
  if (auto uid = whole_number<Uid>(name_or_number)) return *uid;
  return Error{ENOENT, "no such user: '" + name_or_number + "'"};
}

}  // namespace gpuclean::procfs
