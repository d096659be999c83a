// /proc/PID/cgroup: the "0::" line of cgroup v2, and the owner read from every line.
#include "fuzz_check.h"
#include "procfs/owner.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuclean::fuzz::as_text(data, size);
  const auto path = gpuclean::procfs::parse_cgroup_v2(text);
  if (path) {
    gpuclean::fuzz::check(path->find('\n') == std::string::npos, "cgroup path is one line");
    gpuclean::fuzz::check(text.find("0::" + *path) != std::string_view::npos,
                          "cgroup path comes from a 0:: line");
  }
  const auto owner = gpuclean::procfs::owner_from_cgroup_file(text);
  if (owner) {
    // Every ID is part of the file's text (a pod UID's '_' read as '-'), and no owner is empty.
    gpuclean::fuzz::check(!owner->id.empty(), "an owner has an id");
    gpuclean::fuzz::check(owner->id.find('\n') == std::string::npos, "an owner id is one line");
    if (owner->kind == gpuclean::Owner::Kind::kContainer) {
      gpuclean::fuzz::check(owner->full_id.size() == 64 && owner->full_id.rfind(owner->id, 0) == 0,
                            "a container's id is its full id's start");
      gpuclean::fuzz::check(text.find(owner->full_id) != std::string_view::npos,
                            "a container's full id is in the text");
    }
    if (owner->kind == gpuclean::Owner::Kind::kSlurmJob) {
      gpuclean::fuzz::check(text.find("job_" + owner->id) != std::string_view::npos,
                            "a job id is in the text");
    }
  }
  return 0;
}
