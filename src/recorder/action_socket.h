// How the commands that act (kill, run's teardown, top's kill through kill) tell the flight
// recorder what they did without ever waiting on it (issue 36): one datagram to the recorder's
// socket, sent without blocking and forgotten. No recorder, a full queue, a socket that is not
// there: nothing is said and nothing waits; a kill is never delayed by the recorder. The
// recorder learns who sent it from the kernel (SO_PASSCRED: the sender's UID and PID), never
// from the text, so a non-root user's actions are recorded under their own UID without the
// database being theirs to write.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace gpuclean::recorder {

inline constexpr const char* kDefaultActionSocket = "/run/gpuclean/recorder.sock";
// A datagram longer than this is cut by the receiver (and said so in the event).
inline constexpr std::size_t kMaxActionBytes = 16384;

// Where the commands send their actions: $GPUCLEAN_RECORDER_SOCKET when set (a recorder
// started with --socket elsewhere), else kDefaultActionSocket.
std::string action_socket_path();

// The recorder's second socket beside `path`, writable by its own user alone (root's: mode
// 0600): what root sends there cannot be crowded out by another user's flood of the shared
// socket, whose queue a flood keeps full (issue 49: all five of root's kill records were
// dropped).
std::string privileged_socket_path(const std::string& path);

// Sends `text` to a recorder listening at `path`, if one is, without blocking: as root to the
// privileged socket first, and to `path` where there is none (an older recorder).
void send_action(const std::string& path, const std::string& text);

struct ReceivedAction {
  std::uint32_t uid = 0;  // the sender's, as the kernel gives it
  Pid pid = 0;
  std::string text;
  bool cut = false;  // longer than kMaxActionBytes
};

// The recorder's end: a datagram socket at `path` that any local user may send to.
class ActionListener {
 public:
  // Binds `path` with `mode` (0666: any local user may send; 0600: only this user): its
  // directory is made 0755 when missing and must then be owned by this user and writable by
  // nobody else (else a user could swap the socket for their own); a stale socket left by an
  // earlier recorder is replaced, any other file is refused.
  static Result<ActionListener> open(const std::string& path, mode_t mode = 0666);
  ActionListener(ActionListener&&) noexcept = default;
  ActionListener& operator=(ActionListener&&) noexcept = default;
  ~ActionListener();

  [[nodiscard]] int fd() const { return fd_.get(); }
  // The datagrams waiting, at most `limit` (the rest stay queued for the next call).
  std::vector<ReceivedAction> receive(std::size_t limit);

 private:
  ActionListener(UniqueFd fd, std::string path, std::uint64_t inode)
      : fd_(std::move(fd)), path_(std::move(path)), inode_(inode) {}
  UniqueFd fd_;
  std::string path_;
  std::uint64_t inode_ = 0;  // the socket file bound, removed at the end only if still ours
};

}  // namespace gpuclean::recorder
