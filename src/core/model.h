// The report model: plain data that the scanners fill in, diagnose/ classifies and output/
// renders. No behaviour here beyond trivial helpers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuclean {

// The "schema" of every JSON document gpuclean writes, and the newest its readers take.
inline constexpr int kSchemaVersion = 1;

using Pid = std::int32_t;  // as the kernel's pid_t
using Uid = std::uint32_t;
using Bytes = std::uint64_t;

// The first uid of a person's account (Debian's UID_MIN): below it are root and the system
// accounts that daemons run as, which no local user can become.
constexpr Uid kFirstUserUid = 1000;

struct ThreadInfo {
  Pid tid = 0;
  char state = '?';   // as in /proc/PID/task/TID/stat: R S D Z T t X I …
  std::string wchan;  // kernel wait channel; empty when running or unknown
  // Set by procfs::settle_blocked, never by a single read: in uninterruptible sleep (D) at the
  // first read and at every re-read until ~200 ms later, and not a vfork parent's wait. Signals
  // will not help: a finding, `stuck`.
  bool stays_in_d = false;
};

// Whose work a process is, as its cgroup path says (procfs/owner.h reads it; never the
// environment, which the process writes itself and which can block to read).
struct Owner {
  enum class Kind {
    kSlurmJob,     // a Slurm job (step): slurmstepd's cgroup layout, v1 or v2
    kContainer,    // a Docker / containerd / CRI-O / Podman container (in a pod when pod_uid)
    kPod,          // a Kubernetes pod's own group, outside any one container
    kRun,          // the group `gpuclean run` made for its workload, where root made it
    kSystemdUnit,  // a systemd service or scope that is none of the above
    kCgroup,       // a layout gpuclean does not know: the raw path is the id
  };
  Kind kind = Kind::kCgroup;
  // Slurm: the job ID; container: the short ID (12 hex digits); pod: the pod UID (with
  // dashes); run: gpuclean run's PID (the group's name); systemd: the unit name; cgroup: the
  // path.
  std::string id;
  std::optional<std::string> step;     // Slurm: "0", "batch", "extern", "interactive", …
  std::optional<std::string> unit;     // the systemd unit the group sits in, when there is one
  std::optional<std::string> pod_uid;  // Kubernetes: the pod UID (with dashes)
  std::optional<std::string> qos;      // Kubernetes: "guaranteed", "burstable", "besteffort"
  std::optional<std::string> runtime;  // container: "docker", "containerd", "cri-o", "podman"
  // container: the full 64-digit ID; run: the group's path (`kill --cgroup` takes it); else
  // empty.
  std::string full_id;

  bool operator==(const Owner& other) const = default;
};

// JSON's spelling: "slurm-job", "container", "pod", "gpuclean-run", "systemd-unit", "cgroup".
const char* to_string(Owner::Kind kind);
std::optional<Owner::Kind> owner_kind_from_string(std::string_view text);

// A frozen cgroup a process is in (cgroup v2: `frozen 1` in cgroup.events; v1 freezer:
// freezer.state FROZEN), and which groups to thaw. gpuclean never thaws on its own.
struct FrozenCgroup {
  enum class Version { kV2, kV1Freezer };
  Version version = Version::kV2;
  std::string directory;  // the process's own group (a filesystem path under the mount)
  // The groups whose own freeze is set (v2 cgroup.freeze 1, v1 freezer.self_freezing 1), the
  // process's group or ancestors, outermost first: each must be thawed. Never empty.
  std::vector<std::string> frozen_by;
};

// "v2", "v1-freezer" (JSON's spelling).
const char* to_string(FrozenCgroup::Version version);
// The shell command that thaws it: "echo 0 > DIR/cgroup.freeze" (v2) or "echo THAWED >
// DIR/freezer.state" (v1) for each of frozen_by, joined by " && ".
std::string thaw_command(const FrozenCgroup& frozen);

// Everything /proc says about one thread group. Optional members are data that could not be
// read (permission, vanished mid-read); they are never filled with sentinels.
struct ProcessInfo {
  Pid pid = 0;
  Pid ppid = 0;
  Pid pgid = 0;
  Pid sid = 0;
  char state = '?';
  std::string comm;                  // untrusted: any bytes but NUL, up to 15
  std::vector<std::string> cmdline;  // argv; untrusted; empty for kernel threads and Zl leaders
  std::optional<Uid> uid;            // effective uid
  std::string user;                  // name for uid, or the number when it has none
  std::uint64_t start_ticks = 0;     // stat field 22: clock ticks since boot (identity check)
  std::uint64_t cpu_ticks = 0;       // stat fields 14 + 15: CPU time used, clock ticks (top's CPU%)
  std::uint64_t rss_pages = 0;       // stat field 24: resident pages (top's RSS)
  std::optional<double> start_time;  // seconds since the Unix epoch
  bool kernel_thread = false;        // PF_KTHREAD
  std::vector<ThreadInfo> threads;   // leader first
  std::vector<Pid> nspid;            // NSpid: outermost first; >1 entry = nested PID namespace
  std::optional<std::string> cgroup;  // cgroup v2 path ("0::" line)
  std::optional<Owner> owner;         // from the cgroup paths; nullopt in the root group
  // Reading its command line (or maps) did not answer within the read deadline: its mmap lock
  // is held by a stuck thread (procfs/proc_fs.h). cmdline is then empty. A finding: `stuck`.
  bool memory_map_locked = false;
  // The cgroup v1 freezer hierarchy's path ("N:freezer:/path"), on hosts that mount one.
  std::optional<std::string> freezer_cgroup;
  // The frozen cgroup it is in (procfs::settle_blocked). A finding: `frozen`.
  std::optional<FrozenCgroup> frozen;
};

// True when some thread of the group is alive (not Z or X): false for a plain zombie (only the
// exit status is left for the parent), true for a zombie leader whose other threads run (Zl).
bool has_live_thread(const ProcessInfo& process);

// What the kernel says a file is, whatever path it was reached by (docs/reference.md, "A
// holder is found by what it holds"): a device node is its device number, so a second node
// with the same numbers or a bind mount of it is the same device; any other file is its
// inode on its file system, so a hard link is the same file and a look-alike at the same path
// in another mount namespace is not.
struct FileIdentity {
  enum class Kind { kCharDevice, kBlockDevice, kOther };
  Kind kind = Kind::kOther;
  unsigned rdev_major = 0;  // the device number, for device nodes (0:0 otherwise)
  unsigned rdev_minor = 0;
  std::uint64_t dev = 0;  // the file system the inode is on (an opaque dev_t)
  std::uint64_t ino = 0;

  // Device nodes match by kind and number; other files by (dev, ino).
  [[nodiscard]] bool same_file(const FileIdentity& other) const;
  bool operator==(const FileIdentity& other) const = default;
};

// A DRM node of an AMD or Intel GPU, or AMD's /dev/kfd (docs/reference.md, "AMD and Intel
// GPUs"): which GPU the file is, as sysfs says for the node's device number.
struct DrmNode {
  enum class Kind {
    kRender,   // /dev/dri/renderDN: what compute (ROCm, Level Zero, Vulkan) opens
    kPrimary,  // /dev/dri/cardN: what a display server or console opens
    kKfd,      // /dev/kfd: AMD's compute interface, one for every AMD GPU (no fdinfo of its own)
  };
  Kind kind = Kind::kRender;
  std::string pci_address;  // the GPU's ("0000:c3:00.0"); empty for /dev/kfd
  bool operator==(const DrmNode& other) const = default;
};

// One DRM client (an open file description of a DRM node) as the kernel's per-client usage
// stats in /proc/PID/fdinfo/FD describe it (docs/facts.md, "DRM clients").
struct DrmClient {
  std::string driver;                      // drm-driver: "amdgpu", "i915", "xe", …
  std::string pdev;                        // drm-pdev (legacy amdgpu: pdev): PCI address
  std::optional<std::uint64_t> client_id;  // drm-client-id: one per open file description
  // Device-local memory (VRAM) it holds: the resident figure where the driver gives one, summed
  // over its device-local regions; nullopt when the fdinfo names no such region.
  std::optional<Bytes> vram;
  bool operator==(const DrmClient& other) const = default;
};

// A file selected as "the device" (by --device-glob or the NVIDIA defaults).
struct DeviceFile {
  std::string path;                      // canonical (symlinks resolved): for display
  std::optional<unsigned> nvidia_minor;  // N when the file is the char device (195, N), N < 255
  // Taken once per selection by stat(2) of the path; nullopt when it could not be (the file
  // vanished between glob and stat): then nothing can be matched to it.
  std::optional<FileIdentity> identity;
  // Set when it is a DRM node of a GPU sysfs lists, or /dev/kfd (last, with its default: the
  // positional initialisers above stay as they were).
  std::optional<DrmNode> drm = std::nullopt;
};

// One device file a process holds, and how.
struct HeldFile {
  std::string path;  // canonical path of the selected device file
  // The path the holder's descriptor or mapping names when it is not `path`: a second node
  // with the same device number, a bind mount, a path in another mount namespace. Display only:
  // the match is by identity (FileIdentity).
  std::optional<std::string> opened_as;
  std::vector<int> fds;                  // descriptor numbers in the holder's table
  bool readable = false;                 // some fd open for reading
  bool writable = false;                 // some fd open for writing
  bool mapped = false;                   // referenced in /proc/PID/maps
  bool deleted = false;                  // the kernel reported the path as "(deleted)"
  std::optional<Pid> via_thread;         // seen only through task/TID (zombie-led group)
  std::optional<unsigned> nvidia_minor;  // N for /dev/nvidiaN (195,N): that GPU's file
  std::optional<FileIdentity> identity;  // the selected file's (for re-checks); not shown
  std::optional<DrmNode> drm;            // the selected file's, when it is a DRM node or kfd
  // What the fdinfo of its descriptors says, for a DRM node: one entry per client id.
  std::vector<DrmClient> drm_clients;
};

enum class HolderClass {
  kActive,
  kOrphan,
  kHeir,
  kZombieLeader,
  kStuck,
  kForeign,
  kMonitor,
  kZombie,
  kFrozen,  // in a frozen cgroup: it runs again when thawed (ProcessInfo::frozen)
};

// docs/reference.md's spelling of the class ("zombie-leader", …).
const char* to_string(HolderClass klass);
std::optional<HolderClass> holder_class_from_string(std::string_view text);

// The node's own GPU software: daemons every job on the node depends on, and monitoring tools.
// Recognised only from a root-owned executable in a system directory (procfs/node_service.h),
// never from a name alone. A role beside the class: a service is never a problem for holding
// the GPU, and only an explicit PID (with a confirmation) makes it a kill target.
enum class NodeService {
  kMpsControl,     // nvidia-cuda-mps-control -d: the MPS control daemon
  kMpsServer,      // nvidia-cuda-mps-server: the MPS server its clients run in
  kPersistenced,   // nvidia-persistenced
  kDcgm,           // nv-hostengine: DCGM's host engine
  kFabricManager,  // nv-fabricmanager
  kMonitorTool,    // nvidia-smi, dcgmi, dcgm-exporter: they look, they hold nothing for long
};

// JSON's spelling: "mps-control", "mps-server", "persistenced", "dcgm", "fabric-manager",
// "monitor-tool".
const char* to_string(NodeService service);
// For people: "MPS control daemon", "MPS server", …
const char* describe(NodeService service);

// What ties a holder to a dead owner D (a PID NVML still names and /proc no longer has).
// kProcessGroup/kSession: the holder's process group or session ID is D, so D led the group
// or session the holder is in (while the group or session lives the kernel does not reuse D).
// kOrphanWithContext: the holder is an orphan mapping an inherited CUDA context that NVML does
// not list itself — evidence only when it is the only such orphan and D the only dead owner
// left unexplained.
struct HeirEvidence {
  enum class Kind { kProcessGroup, kSession, kOrphanWithContext };
  Pid dead_owner = 0;
  Kind kind = Kind::kProcessGroup;
  // The dead owner's PID names another process now (DeadOwner::pid_handed_on): nvidia-smi shows
  // that process's name for it, not [Not Found].
  bool pid_handed_on = false;
};

// "process-group", "session", "orphan-with-context" (JSON spells it so).
const char* to_string(HeirEvidence::Kind kind);
// Why a holder named heir is one: one line, no trailing period, about that holder ("its
// process group ID is 442: the dead pid 442 led the process group it is in"). For
// kOrphanWithContext it states the whole rule (the only such orphan, the only dead owner left).
std::string describe(const HeirEvidence& evidence);

// A holder's use of the GPUs it holds memory on, from NVML's per-process utilisation samples
// (the newest of the last kActivityWindowSeconds; Gpu::activity): the highest figures over
// its GPUs. A holder with a context and no sample did nothing: 0.
struct HolderActivity {
  unsigned sm = 0;   // percent of the sample period its kernels ran on the SMs
  unsigned mem = 0;  // percent of it the memory interface was busy for it
  // How long it has shown no activity, from a tracker that watched it (top, the recorder's
  // history); nullopt where nobody watched that long.
  std::optional<double> idle_s;
  // Busy in looks that span more than one sample period (diagnose/activity.h's rule): work in
  // progress. A busy sample seen once is not enough: a process's last kernel shows in one or
  // two samples after it ends (docs/facts.md).
  bool sustained = false;
  // Its newest sample is non-zero (a kernel ran in that sample's period).
  [[nodiscard]] bool busy() const { return sm > 0 || mem > 0; }
  // Still computing: busy, and sustained.
  [[nodiscard]] bool computing() const { return busy() && sustained; }
};

struct Holder {
  ProcessInfo process;
  std::vector<HeldFile> devices;
  HolderClass klass = HolderClass::kActive;
  // GPU index → bytes NVML attributes to it (or, for an heir, to its dead owner): for a PID in
  // several of NVML's lists (compute, graphics, MPS), its largest figure once.
  std::map<unsigned, Bytes> gpu_memory;
  std::optional<Pid> inherited_from;  // heir: the dead owner NVML still names
  std::optional<HeirEvidence> heir;   // heir: why it is one (dead_owner == *inherited_from)
  bool visible = true;                // false: known only from NVML (foreign); /proc lacks it
  // Foreign: /proc has the PID, but its process holds no GPU device file: NVML's owner died and
  // the PID was handed on (the newcomer is not this holder; diagnose/diagnosis.h Input).
  bool pid_handed_on = false;
  // One of the node's GPU services (trusted by its executable, `executable`), or nullopt.
  std::optional<NodeService> service;
  std::string executable;  // the service's executable path, when `service` is set
  // NVML lists it in a GPU's MPS list: it runs as a client of an MPS server, `mps_server` when
  // that server is known (diagnose/diagnosis.h: the only one, the only one of its user, or the
  // only one of its user with its MPS pipe directory).
  bool mps_client = false;
  std::optional<Pid> mps_server;
  // The MPS pipe directory its environment names (CUDA_MPS_PIPE_DIRECTORY; MPS's default
  // /tmp/nvidia-mps when unset): what decides which server a client connects to. Read only for
  // MPS servers and MPS-listed clients of a user who runs two or more servers
  // (collect/gather.h); nullopt otherwise or when it could not be read. Text its user chose:
  // compared, never printed.
  std::optional<std::string> mps_pipe_directory;
  // Its GPU activity where NVML samples it on every GPU it holds memory on; nullopt otherwise
  // (no context, MIG or vGPU, a driver without the calls): never 0 for "unknown".
  std::optional<HolderActivity> activity;
};

// How much a problem weighs. An error makes the GPUs dirty (check fails). A warning is worth
// a line and its fix but leaves them clean: memory that is used on purpose yet wasted, such as
// a stray CUDA context; --strict (diagnose::Options::strict) makes such problems errors.
enum class Severity { kError, kWarning };

// "error", "warning" (JSON's `severity`).
const char* to_string(Severity severity);

// What a problem is about (docs/reference.md "Problem kinds"); text only at the output
// boundary (to_string: JSON's `kind`, the metrics' `kind` label).
enum class ProblemKind {
  kInUse,          // a holder at work with GPU memory
  kHolder,         // a holder of the device files, no GPU memory known
  kOrphan,         // its parent died: a leftover of a killed job
  kHeir,           // it holds the context of a dead owner NVML still lists
  kHeirAmbiguous,  // a dead owner's memory, several holders could hold it
  kZombieLeader,   // a zombie-led thread group (Zl) with live threads
  kStuck,          // in D, not coming out
  kForeign,        // NVML lists a PID this namespace cannot see
  kExiting,        // on its way out
  kMpsLeftover,    // a gone MPS client's memory, the MPS server's to free
  kUnattributed,   // used memory no visible process accounts for
  kMissingGpus,    // fewer GPUs than --expect-gpus
  kStrayContext,   // a context on a GPU it does no work on (a warning)
  kFrozen,         // in a frozen cgroup
};

// "in-use", "holder", "orphan", … as JSON and the metrics spell them.
const char* to_string(ProblemKind kind);
// Every kind, in the order above (the metrics export each, 0 when none).
const std::vector<ProblemKind>& all_problem_kinds();

// Something wrong with the GPUs, and the command that fixes it.
struct Problem {
  ProblemKind kind = ProblemKind::kHolder;
  std::optional<unsigned> gpu;  // NVML index, when the problem is on one GPU
  std::optional<Pid> pid;
  std::string message;  // one line, no trailing period: "GPU 3: 76.0 GiB held by …"
  std::string fix;      // the exact command (or action) to run
  // The GPU memory this problem counts, when it counts some. The problems of one GPU never
  // add up to more than its used memory (a figure cut to fit says so in its message).
  std::optional<Bytes> bytes = std::nullopt;
  // An error unless said otherwise (last: the positional initialisers above stay as they were).
  Severity severity = Severity::kError;
  // The holders of `pid`'s process tree this problem counts too (its fix, `gpuclean kill PID`,
  // ends them with it): one problem per tree and GPU, not one per process (issue 35).
  std::vector<Pid> descendants = {};
  // A leftover whose tree is still computing (an orphan's sustained activity, its own or a
  // descendant's: diagnose/activity.h): `kill --leftovers` leaves it without --include-busy.
  bool computing = false;
};

// How complete a /proc scan was: vanished and unreadable processes are normal and are
// summarised, never reported one by one.
struct ScanStats {
  std::size_t processes = 0;           // /proc entries looked at
  std::size_t vanished = 0;            // exited while being read
  std::size_t denied = 0;              // some part unreadable (EACCES/EPERM)
  std::size_t denied_other_users = 0;  // of `denied`: owned by another user than the scanner
  std::vector<Pid> denied_pids;        // the first few, for the summary line
  // Whose maps did not answer within the read deadline (their mmap lock is held by a stuck
  // thread; procfs/proc_fs.h): scanned through their descriptors only.
  std::vector<Pid> locked_pids;
  // Not read completely because of what they are or do: maps that did not answer within the
  // read deadline (the locked ones among them), or descriptors that did not either. What they
  // hold may be missing from the scan (docs/reference.md, "Never a verdict beyond what was
  // seen").
  std::size_t incomplete = 0;
  std::vector<Pid> incomplete_pids;  // the first few
  // The scan ran as root (euid 0): a permission refusal then comes from a supervisor more
  // privileged than root's namespace (PID 1 on a sandboxed host), not from ownership.
  bool as_root = false;
  // The scan held CAP_SYS_PTRACE: every process's descriptors and maps were open to it, so a
  // refusal comes from a supervisor, not ownership. Root without it (Docker's default
  // capabilities) is refused other users' descriptors like any user (procfs/capabilities.h).
  bool may_read_all = false;
  // /proc/PID/map_files could be read (root): mappings are matched by the mapped file's
  // device number too. When false, only by the inode maps prints, which misses a mapping of
  // a second node with the same number whose descriptor was closed.
  bool map_files_read = false;
  double seconds = 0;  // wall time of the scan
};

}  // namespace gpuclean

namespace gpuclean {

// One process in NVML's per-device lists.
struct GpuProcess {
  enum class Kind { kCompute, kGraphics, kMps };
  Pid pid = 0;                       // as NVML reports it: a host PID, possibly dead
  std::optional<Bytes> used_memory;  // absent when NVML says "not available" (MIG, WDDM)
  Kind kind = Kind::kCompute;
};

// "compute", "graphics", "mps".
const char* to_string(GpuProcess::Kind kind);

// "render", "primary", "kfd" (JSON spells them so).
const char* to_string(DrmNode::Kind kind);

// The newest utilisation sample of one process on one GPU.
struct ProcessSample {
  Pid pid = 0;  // as NVML reports it: a host PID, possibly dead
  unsigned sm = 0;
  unsigned mem = 0;
  // When the driver took it: microseconds since the Unix epoch (NVML stamps samples with
  // CLOCK_REALTIME); 0 where unknown (a view written before this field existed).
  std::uint64_t time_us = 0;
};

// How far back a look asks NVML for per-process samples: the driver takes one about every
// second (docs/facts.md), so two seconds always hold the latest and nothing older.
inline constexpr double kActivityWindowSeconds = 2.0;

// NVML's per-process utilisation samples of one GPU. A process with a context that is absent
// had no activity in the window (the H200 lists only busy processes).
struct GpuActivity {
  std::string source;  // the NVML function that answered
  std::vector<ProcessSample> samples;
};

struct GpuMemory {
  Bytes total = 0;
  Bytes used = 0;
  Bytes free = 0;
  std::optional<Bytes> reserved;  // driver/firmware reserve, when NVML's v2 query reports it
};

// What NVML (or, for an AMD or Intel GPU, the kernel's DRM interfaces) says about one GPU.
// Optional fields are those the driver did not answer.
struct Gpu {
  // Where the GPU comes from: NVML, or sysfs and its clients' fdinfo (issue 39). DRM GPUs are
  // numbered after NVML's, in PCI address order.
  enum class Source { kNvml, kDrm };
  Source source = Source::kNvml;
  std::string driver;  // DRM: the kernel driver ("amdgpu", "i915", "xe"); NVML: empty
  unsigned index = 0;
  std::string uuid;
  std::string name;
  std::string pci_bus_id;
  std::optional<unsigned> minor;  // /dev/nvidiaN
  std::optional<GpuMemory> memory;
  std::optional<bool> persistence_mode;
  std::optional<std::string> compute_mode;  // "default", "exclusive_process", "prohibited"
  std::optional<bool> mig_enabled;
  std::vector<GpuProcess> processes;  // compute, graphics and MPS lists, one entry per pid+kind
  // Sensors, each where the driver answers: percent of the last period a kernel ran, degrees
  // Celsius, milliwatts drawn.
  std::optional<unsigned> utilization;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> power_mw;
  // Per-process activity; nullopt where NVML does not give it, and activity_unavailable says
  // why (one line).
  std::optional<GpuActivity> activity;
  std::string activity_unavailable;
};

// "nvml", "drm" (JSON's `source` of a GPU).
const char* to_string(Gpu::Source source);

// Whether NVML answered: kPresent (a view), kAbsent (no driver or library), kDisabled
// (--no-nvml), kFailed (the library is there but init or a query failed: memory unknown).
enum class NvmlState { kPresent, kAbsent, kDisabled, kFailed };

// "present", "absent", "disabled", "failed" (JSON and metrics spell it so).
const char* to_string(NvmlState state);
// The inverse of to_string; nullopt for anything else.
std::optional<NvmlState> nvml_state_from_string(const std::string& text);

struct GpuView {
  std::string driver_version;
  std::string nvml_version;
  std::optional<int> cuda_driver_version;  // e.g. 13000 for 13.0
  std::vector<Gpu> gpus;
};

// One GPU as the diagnosis sees it.
struct GpuReport {
  Gpu gpu;
  // Used memory explained by live holders (heirs included) and by dead owners whose possible
  // heirs are named (ambiguous evidence): at most `used`.
  Bytes attributed = 0;
  Bytes unattributed = 0;  // used − attributed, never negative
};

// A PID NVML names on some GPU that /proc does not have: the process that made a CUDA context
// and is gone (or lives in another PID namespace), and who may hold its context now.
struct DeadOwner {
  Pid pid = 0;
  std::map<unsigned, Bytes> gpu_memory;  // GPU index → NVML's figure (largest of its lists)
  struct Candidate {
    Pid pid = 0;
    HeirEvidence evidence;  // evidence.dead_owner == this owner's pid
  };
  // Holders with evidence for it, ascending by pid. Empty: nobody here is tied to it (the
  // owner shows as a `foreign` holder).
  std::vector<Candidate> candidates;
  std::optional<Pid> heir;  // the one candidate named heir, when the evidence is unambiguous
  // Its PID now names another process, which holds no GPU device file (Input::handed_on_pids).
  bool pid_handed_on = false;
  // True when there are candidates but no heir: several holders have evidence for it, or
  // orphans with inherited contexts and dead owners cannot be paired one to one.
  bool ambiguous = false;
  std::string ambiguity;  // when ambiguous: why no candidate was chosen (one line, no period)
};

// What diagnose() concludes: the model every renderer draws.
struct Diagnosis {
  std::vector<GpuReport> gpus;         // selected GPUs, NVML index order
  std::vector<Holder> holders;         // ascending by pid; holders not visible here (foreign) last
  std::vector<DeadOwner> dead_owners;  // ascending by pid
  std::vector<Problem> problems;
  bool clean = true;  // no problem is an error (warnings alone leave it clean): !has_error
  // One command for all of them where two or more problems are leftovers that `kill
  // --leftovers` ends at once ("gpuclean kill --leftovers --yes", with the --gpus selection);
  // empty otherwise.
  std::string leftovers_fix;
};

// True when some problem is an error: what makes a diagnosis dirty.
bool has_error(const std::vector<Problem>& problems);

// The root of the dead job PID belongs to (the orphan, heir or zombie-leader problem that
// names it among its descendants): what ending PID's job means (top's K on a worker ends its
// whole job, as the problem's fix does). nullopt when PID is no dead job's member.
std::optional<Pid> dead_job_root(const Diagnosis& diagnosis, Pid pid);

}  // namespace gpuclean
