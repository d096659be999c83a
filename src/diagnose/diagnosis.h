// The GPU diagnosis: joins NVML's view with the /proc holders into classified holders, per-GPU
// attributed/unattributed memory, problems with fixes, and a verdict. Pure: no syscalls; the
// CLI gathers the inputs.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/model.h"
#include "diagnose/activity.h"

namespace gpuclean::diagnose {

// The MPS server's own context: 66 MiB on an H200 with driver 580 (docs/facts.md). Above this
// with no MPS client left, the server holds memory for clients that are gone.
constexpr Bytes kMpsServerIdleMax = 256ull << 20;

// A stray CUDA context (docs/reference.md, "Problem kinds"): what a process holds on a GPU it does
// not work on. The H200 machine measured a context at ~500-520 MiB (a PyTorch process working
// on cuda:1 made a 518 MiB one on GPU 0: docs/facts.md); up to this much on one GPU is "a
// context, and at most a little more" — twice the measured size leaves room for other GPUs'
// and drivers' contexts, while a real allocation (a model, a KV cache) is larger.
constexpr Bytes kStrayContextMax = 1ull << 30;
// ... and its work on another GPU: at least this much more memory there than on the context's
// GPU (so, with kStrayContextMax, also at least twice as much). Equal or similar figures on two
// GPUs are a process working on both.
constexpr Bytes kStrayWorkMargin = 1ull << 30;

// A display server's device-local memory through a primary DRM node (scan-out buffers, a
// compositor's textures: 256 MiB on the fixtures' MI300X display). A primary-node holder with
// more, or an orphaned one with any, holds memory a display does not need: not a monitor.
constexpr Bytes kDisplayMemoryMax = 1ull << 30;

struct Options {
  // Used memory per GPU that no visible holder explains and is still tolerated. NVML's v2
  // memory query keeps the driver reserve apart (idle H200: used 0, reserved 615 MiB), the v1
  // query counts it as used; either way a small remainder is normal.
  Bytes max_unattributed = 1024ull * 1024 * 1024;
  std::optional<std::set<unsigned>> gpus;  // only these GPUs (NVML index); nullopt: all
  std::set<std::string> allow_users;       // their holders are not problems
  std::set<Pid> ignore_pids;               // not problems either
  // Warnings (a stray CUDA context) are errors too: they make the diagnosis dirty.
  bool strict = false;
};

struct Input {
  std::optional<GpuView> gpu_view;  // nullopt: NVML absent or disabled (/proc only)
  // Every process holding a device file, and every live process NVML names (devices empty if
  // its fd table could not be read). Classified from /proc already (classify_from_proc).
  std::vector<Holder> holders;
  // NVML PIDs that /proc does not have: dead owners, or holders in another PID namespace.
  std::set<Pid> missing_pids;
  // NVML PIDs whose process now, read completely, holds none of the device files: the owner
  // NVML names died and its PID went to another process (a CUDA process keeps the files open).
  // A dead owner like a missing PID; the process with that PID now is never its holder.
  std::set<Pid> handed_on_pids;
  std::optional<Pid> self;  // gpuclean's own PID: never a holder
  // What earlier looks saw of the holders' activity: how long idle, since when busy
  // (diagnose/activity_tracker.h, collect/activity_look.h, the recorder's history).
  ActivityHistory activity_history;
};

// Joins NVML's lists with the holders. Contract (docs/design.md "Diagnosis"):
// - A PID in several of a GPU's lists (compute, graphics, MPS) counts its largest figure once.
// - A holder NVML does not list is an heir of a dead owner D (a listed PID in missing_pids) only
//   on evidence: its process group or session ID is D, or it is the only orphan with a context
//   shape left and D the only dead owner left. Several candidates for one owner (or a weak
//   pairing that is not one to one) name no heir: the owner's memory becomes a
//   "heir-ambiguous" problem naming the candidates, which keep their own class. An owner with
//   no candidate is a `foreign` holder. Every owner is in Diagnosis::dead_owners.
// - The problems of one GPU never count more bytes than its used memory (cut, and said so).
// - The node's services (Holder::service) are never problems for holding a GPU (an orphaned
//   daemon is `active`: init is its parent by design), and never heir candidates. Only a
//   stuck or zombie-led service is reported.
// - MPS: a holder NVML lists in an MPS list is a client of the MPS server: the only one, or
//   the only one of its user, or of its user's several the only one whose pipe directory
//   (Holder::mps_pipe_directory) is the client's; none when any of them is not known. A gone
//   PID in an MPS list is memory an MPS server holds for a client that is gone (recognised or
//   not: never an heir's), and a recognised server above
//   kMpsServerIdleMax on a GPU where none of its clients is left holds memory for clients that
//   are gone: both "mps-leftover", whose fix is MPS's own way to end the server, never a kill
//   while clients run.
// - A monitoring tool (NodeService::kMonitorTool) that NVML lists with memory is not at work:
//   reported like any holder.
// - Stray context: an active, visible holder (not a node service, not an MPS client, no heir)
//   with more than 0 and at most kStrayContextMax on a GPU, and at least kStrayWorkMargin more
//   on another GPU, holds a stray CUDA context on the first: a "stray-context" problem there
//   instead of "in-use", naming the GPUs it works on (those where it is not stray). A warning,
//   or an error under Options::strict. Its work GPUs stay "in-use" problems.
// - Diagnosis::clean is !has_error(problems): warnings alone leave the GPUs clean.
Diagnosis diagnose(Input input, const Options& options);

// Whom a one-shot look must see again before it judges them (diagnose/activity.h: one busy
// sample is not "still computing"): the holders of each orphan's problem — the orphan and the
// descendants it names — that show a busy sample not known to be sustained. Heirs and zombie
// leaders are left out: their owner is gone, their activity excuses nothing.
std::map<ProcessIdentity, BusyLook> activity_to_settle(const Diagnosis& diagnosis);

// The GPUs where `holder` holds only a stray CUDA context (the rule above); empty for a holder
// that is not eligible or works on a single GPU.
std::set<unsigned> stray_context_gpus(const Holder& holder);

// True when the holder has the shape of a CUDA context: it maps /dev/nvidia-uvm or a
// /dev/nvidiaN file. An NVML-only monitor (nvidia-smi) holds the same files but maps only
// nvidiactl (seen on the H200, driver 580: docs/gpu-tests.md). Any holder of a file outside
// /dev/nvidia* (a --device-glob selection) counts as a context holder.
bool looks_like_context(const Holder& holder);

// The short name used in one-line messages: argv[0]'s basename (process titles such as
// "sglang::scheduler" live there), else comm; at most kShortNameChars characters as shown once
// escaped, cut with "…" (core/escape.h). A message is `check`'s line and a Slurm drain reason,
// which the scripts cut at 200 characters: a name the user chose must leave room for what the
// problem is (issue 33).
inline constexpr std::size_t kShortNameChars = 40;
std::string short_name(const ProcessInfo& process);

}  // namespace gpuclean::diagnose
