// `gpuclean diff A B` / `check --against`: any file may be handed in as a snapshot.
#include "diagnose/snapshot_diff.h"
#include "fuzz_check.h"
#include "input/snapshot_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto snapshot = gpuclean::input::parse_snapshot(gpuclean::fuzz::as_text(data, size));
  if (!snapshot.ok()) return 0;
  // snapshot_diff.h: identical snapshots give no differences.
  gpuclean::fuzz::check(gpuclean::diagnose::diff_snapshots(*snapshot, *snapshot).empty(),
                        "a snapshot does not differ from itself");
  return 0;
}
