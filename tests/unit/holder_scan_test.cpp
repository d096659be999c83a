// procfs/holder_scan.h's still_holds: whether a holder's known descriptors still name the file
// it held (top's rolling scan re-reads only those), on a file of the test's own.
#include "procfs/holder_scan.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include "procfs/file_identity.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {
namespace {

TEST(StillHolds, TrueWhileTheSameDescriptorNamesTheFileFalseOnceClosedOrReused) {
  char path[] = "/tmp/gpuclean-still-holds-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  HeldFile held;
  held.path = path;
  held.fds = {fd};
  EXPECT_FALSE(still_holds(*proc, ::getpid(), {held})) << "no identity: nothing to compare";
  held.identity = identity_of_path(path);
  EXPECT_TRUE(still_holds(*proc, ::getpid(), {held}));
  HeldFile mapped_only;
  mapped_only.path = path;
  mapped_only.mapped = true;
  EXPECT_FALSE(still_holds(*proc, ::getpid(), {mapped_only})) << "maps must be read: a scan";
  EXPECT_FALSE(still_holds(*proc, ::getpid(), {})) << "nothing held is no holder";
  // The descriptor now names another file: no longer held through it.
  const int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(other, 0);
  ASSERT_EQ(::dup2(other, fd), fd);
  EXPECT_FALSE(still_holds(*proc, ::getpid(), {held}));
  ::close(other);
  // Unlinked while held: the link says "(deleted)", which the known file did not.
  const int again = ::open(path, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(again, 0);
  ASSERT_EQ(::dup2(again, fd), fd);
  ::close(again);
  EXPECT_TRUE(still_holds(*proc, ::getpid(), {held}));
  ::unlink(path);
  EXPECT_FALSE(still_holds(*proc, ::getpid(), {held})) << "deleted since";
  held.deleted = true;
  EXPECT_TRUE(still_holds(*proc, ::getpid(), {held}));
  ::close(fd);
  EXPECT_FALSE(still_holds(*proc, ::getpid(), {held})) << "closed";
}

}  // namespace
}  // namespace gpuclean::procfs
