// Names of uids through the system's user database (NSS: /etc/passwd, LDAP, …).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "core/model.h"
#include "core/result.h"

namespace gpuclean::procfs {

// Caches lookups: a scan asks for the same few uids many times and an NSS lookup can cost
// milliseconds. Thread-safe.
class UserNames {
 public:
  // The user name for uid, or the number as text when it has none.
  std::string name(Uid uid);

 private:
  std::mutex mutex_;
  std::map<Uid, std::string> cache_;
};

// A user given on the command line (--user, --allow-user): a name the user database knows, or
// a number. An unknown name is an error that says so (a typo must not select nothing).
Result<Uid> uid_of_user(const std::string& name_or_number);

}  // namespace gpuclean::procfs
