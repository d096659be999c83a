#include "collect/gather.h"

#include "collect/activity_look.h"
#include "collect/gpu_sampler.h"
#include "procfs/drm_view.h"
#include "procfs/rolling_scan.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <future>

#include "diagnose/classify.h"
#include "nvml/fake_source.h"
#include "nvml/nvml_source.h"
#include "procfs/blocked.h"
#include "procfs/device_files.h"
#include "procfs/holder_scan.h"
#include "procfs/node_service.h"

namespace gpuclean::collect {
namespace {

// How many PIDs the scan's incomplete_sample names, as the scan's own (procfs::holder_scan).
constexpr std::size_t kIncompleteSample = 5;

void note_incomplete(ScanStats& stats, Pid pid) {
  ++stats.incomplete;
  if (stats.incomplete_pids.size() < kIncompleteSample) stats.incomplete_pids.push_back(pid);
}

// A holder from its /proc reading. A look at its executable that did not answer in time (a file
// system whose server stopped: procfs::look_up_service) leaves it a plain holder, counted in
// `stats` as read in part.
Holder make_holder(const procfs::ProcFs& proc, ProcessInfo process, std::vector<HeldFile> devices,
                   ScanStats& stats) {
  Holder holder;
  holder.process = std::move(process);
  holder.devices = std::move(devices);
  holder.klass = diagnose::classify_from_proc(holder.process);
  procfs::ServiceLookup lookup = procfs::look_up_service(proc, holder.process);
  if (lookup.service) {
    holder.service = lookup.service->service;
    holder.executable = std::move(lookup.service->executable);
  }
  if (lookup.unanswered) note_incomplete(stats, holder.process.pid);
  return holder;
}

}  // namespace

Result<std::vector<DeviceFile>> select_device_files(const CollectOptions& options,
                                                    const std::vector<std::string>& paths,
                                                    std::vector<procfs::DrmGpu>* drm_gpus) {
  procfs::DeviceSelection selection;
  selection.must_match = paths;
  selection.must_match.insert(selection.must_match.end(), options.device_globs.begin(),
                              options.device_globs.end());
  const bool defaults = selection.must_match.empty();
  if (defaults) selection.patterns = procfs::default_nvidia_globs();
  auto files = procfs::expand_device_files(selection);
  if (!files.ok() || options.no_drm) return files;
  std::vector<procfs::DrmGpu> gpus = procfs::find_drm_gpus(options.drm_roots);
  std::vector<DeviceFile> nodes;
  for (const procfs::DrmGpu& gpu : gpus)
    nodes.insert(nodes.end(), gpu.nodes.begin(), gpu.nodes.end());
  if (auto kfd = procfs::find_kfd(options.drm_roots, gpus)) nodes.push_back(std::move(*kfd));
  std::vector<DeviceFile> selected =
      procfs::mark_drm_nodes(std::move(files).value(), nodes, defaults);
  if (drm_gpus != nullptr) {
    // Only the DRM GPUs whose nodes are scanned: their memory per process is what the scan
    // reads, so a GPU a --device-glob left out would have all its memory unattributed.
    std::erase_if(gpus, [&selected](const procfs::DrmGpu& gpu) {
      return std::none_of(selected.begin(), selected.end(), [&gpu](const DeviceFile& f) {
        return f.drm && f.drm->pci_address == gpu.pci_address;
      });
    });
    *drm_gpus = std::move(gpus);
  }
  return selected;
}

diagnose::Unseen unseen_in(const Gathered& gathered) {
  // Memory is judged without /proc where NVML answered and every AMD or Intel GPU has a used
  // total (memory an unread process holds then shows as unattributed); an i915 or xe GPU has
  // none, and what an unread process holds there is seen nowhere else.
  const auto& view = gathered.input.gpu_view;
  const bool totals = !view || std::all_of(view->gpus.begin(), view->gpus.end(), [](const Gpu& g) {
    return g.source != Gpu::Source::kDrm || g.memory.has_value();
  });
  return diagnose::unseen_processes(gathered.stats,
                                    gathered.nvml_state == NvmlState::kPresent && totals);
}

std::vector<Holder> read_holders(const procfs::ProcFs& proc, procfs::HolderScan& scan) {
  std::vector<Holder> holders;
  std::vector<Pid> pids;
  for (const procfs::FileHolding& holding : scan.holdings) pids.push_back(holding.pid);
  std::vector<Result<ProcessInfo>> processes = proc.read_processes(pids);
  // Frozen groups, and whether a thread seen in D stays there (~200 ms, only when one is).
  procfs::settle_blocked(proc, processes);
  // A DRM client's fdinfo that did not answer in time: what the process holds is not known.
  for (const Pid late : procfs::fill_access(proc, scan.holdings)) note_incomplete(scan.stats, late);
  for (std::size_t i = 0; i < pids.size(); ++i) {
    procfs::FileHolding& holding = scan.holdings[i];
    Result<ProcessInfo>& process = processes[i];
    if (!process.ok()) {
      // Exited between the scan and now: it holds nothing any more.
      if (process.error().is_vanished()) ++scan.stats.vanished;
      continue;
    }
    if (holding.start_ticks != 0 && process->start_ticks != holding.start_ticks) {
      // Its PID was handed on after the scan: the newcomer never held what the scan found, and
      // must not inherit it (kill would approve it by its own start time). Vanished.
      ++scan.stats.vanished;
      continue;
    }
    holders.push_back(
        make_holder(proc, std::move(process).value(), std::move(holding.files), scan.stats));
  }
  return holders;
}

void read_mps_pipe_directories(const procfs::ProcFs& proc, const GpuView& view,
                               std::vector<Holder>& holders) {
  // MPS's pipe directory when CUDA_MPS_PIPE_DIRECTORY is unset (NVIDIA's MPS documentation).
  constexpr const char* kDefaultPipeDirectory = "/tmp/nvidia-mps";
  std::set<Pid> listed;
  for (const Gpu& gpu : view.gpus) {
    for (const GpuProcess& p : gpu.processes) {
      if (p.kind == GpuProcess::Kind::kMps) listed.insert(p.pid);
    }
  }
  std::map<Uid, unsigned> servers_of;
  for (const Holder& h : holders) {
    if (h.service == NodeService::kMpsServer && h.process.uid) ++servers_of[*h.process.uid];
  }
  // A user with two or more servers: the one server of a user needs no tie broken.
  auto tied = [&servers_of](const Holder& h) {
    const auto it = h.process.uid ? servers_of.find(*h.process.uid) : servers_of.end();
    return it != servers_of.end() && it->second >= 2;
  };
  std::set<Uid> wanted;  // users with such a client: only their servers are read
  for (const Holder& h : holders) {
    if (!h.service && listed.count(h.process.pid) > 0 && tied(h)) wanted.insert(*h.process.uid);
  }
  if (wanted.empty()) return;
  std::vector<Holder*> readers;
  std::vector<std::pair<Pid, std::uint64_t>> processes;
  for (Holder& h : holders) {
    const bool server = h.service == NodeService::kMpsServer;
    const bool client = !h.service && listed.count(h.process.pid) > 0;
    if ((server || client) && h.process.uid && wanted.count(*h.process.uid) > 0) {
      readers.push_back(&h);
      processes.emplace_back(h.process.pid, h.process.start_ticks);
    }
  }
  const std::vector<procfs::EnvironmentValue> values =
      proc.environment_values(processes, "CUDA_MPS_PIPE_DIRECTORY");
  for (std::size_t i = 0; i < readers.size(); ++i) {
    if (!values[i].read) continue;
    // An empty value says nothing MPS documents: not known, rather than a tie made up.
    if (!values[i].value) {
      readers[i]->mps_pipe_directory = kDefaultPipeDirectory;
    } else if (!values[i].value->empty()) {
      readers[i]->mps_pipe_directory = *values[i].value;
    }
  }
}

Gatherer::Gatherer(CollectOptions options, std::vector<DeviceFile> files, procfs::ProcFs proc)
    : options_(std::move(options)), files_(std::move(files)), proc_(std::move(proc)) {}

Gatherer::~Gatherer() = default;

void Gatherer::scan_in_turns(Duration full_period) {
  rolling_ = std::make_unique<procfs::RollingScan>(full_period);
}

std::variant<std::unique_ptr<Gatherer>, GatherError> Gatherer::open(const CollectOptions& options) {
  std::vector<procfs::DrmGpu> drm_gpus;
  auto files = select_device_files(options, {}, &drm_gpus);
  if (!files.ok()) return GatherError{true, files.error().message()};
  auto proc = procfs::ProcFs::open(options.proc_root, options.proc_timeout);
  if (!proc.ok()) return GatherError{false, proc.error().message()};
  auto gatherer = std::unique_ptr<Gatherer>(
      new Gatherer(options, std::move(files).value(), std::move(proc).value()));
  gatherer->drm_gpus_ = std::move(drm_gpus);
  if (!gatherer->drm_gpus_.empty() && !options.no_nvml) {
    // Until NVML answers, the NVIDIA GPUs are counted by their device nodes, so that a DRM
    // GPU keeps its index whether or not NVML answered this look.
    procfs::DeviceSelection nvidia;
    nvidia.patterns = procfs::default_nvidia_globs();
    if (auto nodes = procfs::expand_device_files(nvidia); nodes.ok()) {
      gatherer->nvidia_gpus_ = static_cast<unsigned>(std::count_if(
          nodes->begin(), nodes->end(), [](const DeviceFile& f) { return f.nvidia_minor; }));
    }
  }
  return gatherer;
}

void Gatherer::add_drm_gpus(diagnose::Input& input) {
  if (drm_gpus_.empty()) return;
  std::vector<std::optional<GpuMemory>> memory;
  memory.reserve(drm_gpus_.size());
  for (const procfs::DrmGpu& gpu : drm_gpus_) memory.push_back(procfs::read_drm_memory(gpu));
  // NVML's GPUs come first: as many as its last answer had (its view is here when it answered
  // this look), else as many as /dev/nvidiaN nodes.
  if (input.gpu_view) nvidia_gpus_ = static_cast<unsigned>(input.gpu_view->gpus.size());
  if (!input.gpu_view) input.gpu_view.emplace();
  const unsigned first = nvidia_gpus_;
  for (Gpu& gpu : procfs::drm_gpus(drm_gpus_, memory, input.holders, first)) {
    input.gpu_view->gpus.push_back(std::move(gpu));
  }
}

Gatherer::NvmlOutcome Gatherer::query_gpus() {
  NvmlOutcome outcome;
  if (options_.no_nvml) return outcome;
  if (helper_ && source_.state != nvml::OpenedSource::State::kPresent) {
    // Asked again on every collect until NVML answers: an init that timed out once (a driver
    // busy recovering) may answer by the next scrape of `metrics --listen` or poll of `wait`.
    source_tried_ = true;
    source_ = open_sampler_source(helper_, options_.nvml_timeout, gpu_details_);
  } else if (!source_tried_) {
    source_tried_ = true;
    // In this process only when no helper was started (tests of the gatherer itself): shut
    // NVML down properly — LeakSanitizer flags a library object left behind.
    source_ = options_.test_gpu_source.empty() ? nvml::open_nvml({.shutdown_on_destroy = true})
                                               : nvml::open_fake_source(options_.test_gpu_source);
  }
  outcome.message = source_.message;
  switch (source_.state) {
    case nvml::OpenedSource::State::kAbsent:
      outcome.state = NvmlState::kAbsent;
      return outcome;
    case nvml::OpenedSource::State::kFailed:
      outcome.state = NvmlState::kFailed;
      return outcome;
    case nvml::OpenedSource::State::kPresent:
      break;
  }
  auto view = source_.source->query();
  if (!view.ok()) {
    outcome.state = NvmlState::kFailed;
    outcome.message = view.error().message();
    return outcome;
  }
  outcome.state = NvmlState::kPresent;
  outcome.view = std::move(view).value();
  if (gpu_details_) outcome.details = source_.source->query_details();
  return outcome;
}

void Gatherer::use_gpu_source(nvml::OpenedSource source) {
  source_ = std::move(source);
  source_tried_ = true;
  helper_.reset();
}

void Gatherer::start_nvml_helper() {
  if (options_.no_nvml || source_tried_ || helper_) return;
  if (options_.early_helper && options_.test_gpu_source.empty()) {
    helper_ = std::move(options_.early_helper);
    return;
  }
  auto started = GpuSampler::start(options_, GpuSampler::Ending::kAbandon);
  if (started.ok()) {
    helper_ = std::move(started).value();
    return;
  }
  source_tried_ = true;
  source_.state = nvml::OpenedSource::State::kFailed;
  source_.message = "cannot start NVML's helper process: " + started.error().message();
}

std::optional<GpuView> Gatherer::query_gpu_view() {
  std::optional<GpuView> view = query_gpus().view;
  if (drm_gpus_.empty()) return view;
  // A DRM GPU's process list is its clients' fdinfo: a scan of the DRM nodes alone (kill's
  // polls ask whether the targets still hold their memory).
  std::vector<DeviceFile> nodes;
  std::copy_if(files_.begin(), files_.end(), std::back_inserter(nodes),
               [](const DeviceFile& f) { return f.drm && f.drm->kind != DrmNode::Kind::kKfd; });
  if (nodes.empty()) return view;  // none of their nodes selected: nothing to read
  diagnose::Input input;
  input.gpu_view = std::move(view);
  procfs::HolderScan scan = procfs::scan_holders(proc_, nodes, {.threads = options_.threads});
  // A late read leaves that holder's clients out; the full look after the poll says so.
  procfs::fill_access(proc_, scan.holdings);
  for (procfs::FileHolding& holding : scan.holdings) {
    Holder holder;
    holder.process.pid = holding.pid;
    holder.devices = std::move(holding.files);
    input.holders.push_back(std::move(holder));
  }
  add_drm_gpus(input);
  return input.gpu_view;
}

// Whether holding none of the selected files says a process is not NVML's (add_listed_only): with
// the NVIDIA defaults (every CUDA process holds /dev/nvidiactl), or a --device-glob of files that
// are not NVIDIA's (the user's stand-ins). A --device-glob of some NVIDIA nodes (/dev/nvidia1)
// leaves out files a CUDA process on another GPU holds: there the rule is off, and such a process
// keeps NVML's memory as before.
bool Gatherer::selection_shows_every_cuda_process() const {
  if (options_.device_globs.empty()) return true;
  constexpr unsigned kNvidiaMajor = 195;
  return std::none_of(files_.begin(), files_.end(), [](const DeviceFile& f) {
    return f.identity && f.identity->kind == FileIdentity::Kind::kCharDevice &&
           f.identity->rdev_major == kNvidiaMajor;
  });
}

// Processes NVML names that the scan did not find holding a device file. Each is scanned again,
// alone (it may have opened them since). A CUDA process keeps the device files open, so a live
// one whose descriptors and maps were read completely and hold none is not NVML's process: the
// owner died and its PID went to another (issue 48 item 2). Its memory is a dead owner's (an
// heir's, or nobody's here); the newcomer is never its holder. Kept as before, with no devices:
// one that could not be read (what it holds is unknown), a zombie (its context is being torn
// down), and an MPS client (it reaches the GPU through the server). The ones /proc lacks are
// dead owners or live in another PID namespace.
void Gatherer::add_listed_only(const GpuView& view, std::set<Pid>& seen, Gathered& out) {
  diagnose::Input& input = out.input;
  std::vector<Pid> listed_only;
  std::set<Pid> in_mps_list;
  for (const Gpu& gpu : view.gpus) {
    for (const GpuProcess& p : gpu.processes) {
      if (p.kind == GpuProcess::Kind::kMps) in_mps_list.insert(p.pid);
      if (seen.insert(p.pid).second) listed_only.push_back(p.pid);
    }
  }
  if (listed_only.empty()) return;
  std::sort(listed_only.begin(), listed_only.end());
  procfs::HolderScan again =
      procfs::scan_holders(proc_, files_, {.threads = 1, .only = listed_only});
  const std::set<Pid> unknown(again.not_read_fully.begin(), again.not_read_fully.end());
  std::vector<Holder> found = read_holders(proc_, again);
  std::set<Pid> holding;
  for (Holder& h : found) {
    holding.insert(h.process.pid);
    input.holders.push_back(std::move(h));
  }
  std::vector<Pid> rest;
  std::copy_if(listed_only.begin(), listed_only.end(), std::back_inserter(rest),
               [&holding](Pid pid) { return holding.count(pid) == 0; });
  std::vector<Result<ProcessInfo>> processes = proc_.read_processes(rest);
  procfs::settle_blocked(proc_, processes);
  const bool shows_all = selection_shows_every_cuda_process();
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (!processes[i].ok()) {
      input.missing_pids.insert(rest[i]);
      continue;
    }
    const bool handed_on = shows_all && unknown.count(rest[i]) == 0 &&
                           in_mps_list.count(rest[i]) == 0 && processes[i]->state != 'Z' &&
                           !processes[i]->kernel_thread;
    if (handed_on) {
      input.handed_on_pids.insert(rest[i]);
    } else {
      input.holders.push_back(make_holder(proc_, std::move(processes[i]).value(), {}, out.stats));
    }
  }
}

Gathered Gatherer::collect() {
  // NVML (its init alone is ~17 ms on an H200) runs beside the /proc scan.
  auto nvml_future = std::async(std::launch::async, [this] { return query_gpus(); });
  procfs::ScanOptions scan_options;
  scan_options.threads = options_.threads;
  bool full_scan = true;
  std::vector<procfs::FileHolding> rechecked;  // known holders whose descriptors still hold
  const auto now = procfs::RollingScan::Clock::now();
  if (rolling_) {
    if (auto present = proc_.list_pids(); present.ok()) {
      std::vector<Pid> chosen = rolling_->choose(*present, likely_holders_, now);
      full_scan = rolling_->last_was_full();
      // Most of a refresh's cost is one lookup per descriptor (bench/top_bench.sh, perf):
      // a known holder's held descriptors are re-checked, not its whole table, between its
      // full reads.
      std::vector<Pid> to_scan;
      for (Pid pid : chosen) {
        auto known = known_holdings_.find(pid);
        // A young process is read whole: it is still opening files and mapping its context.
        if (!full_scan && known != known_holdings_.end() && !rolling_->young(pid, now) &&
            now - known->second.scanned < procfs::RollingScan::kYoung &&
            procfs::still_holds(proc_, pid, known->second.holding.files)) {
          rechecked.push_back(known->second.holding);
        } else {
          to_scan.push_back(pid);
        }
      }
      scan_options.only = std::move(to_scan);
    }
  }
  procfs::HolderScan scan = procfs::scan_holders(proc_, files_, scan_options);
  NvmlOutcome nvml = nvml_future.get();
  const double looked_at = nvml.view ? unix_now() : 0;
  if (rolling_) {
    std::map<Pid, KnownHolding> known;
    for (const procfs::FileHolding& h : scan.holdings) known[h.pid] = {h, now};
    for (procfs::FileHolding& h : rechecked) {
      known[h.pid] = {h, known_holdings_.at(h.pid).scanned};
      scan.holdings.push_back(std::move(h));
    }
    known_holdings_ = std::move(known);
    std::sort(scan.holdings.begin(), scan.holdings.end(),
              [](const auto& a, const auto& b) { return a.pid < b.pid; });
  }

  Gathered out;
  out.files = files_;
  out.input.holders = read_holders(proc_, scan);
  out.stats = scan.stats;
  out.nvml_state = nvml.state;
  out.nvml_message = nvml.message;
  out.gpu_details = std::move(nvml.details);
  out.looked_at = looked_at;
  out.input.self = ::getpid();
  std::set<Pid> seen;
  for (const Holder& h : out.input.holders) seen.insert(h.process.pid);
  if (nvml.view) {
    add_listed_only(*nvml.view, seen, out);
    read_mps_pipe_directories(proc_, *nvml.view, out.input.holders);
    out.input.gpu_view = std::move(nvml.view);
  }
  add_drm_gpus(out.input);
  if (rolling_) {
    likely_holders_.clear();
    for (const Holder& h : out.input.holders) likely_holders_.insert(h.process.pid);
  }
  return out;
}

std::variant<Gathered, GatherError> gather(const CollectOptions& options, GatherRequest request) {
  auto gatherer = Gatherer::open(options);
  if (auto* error = std::get_if<GatherError>(&gatherer)) return *error;
  Gatherer& g = *std::get<std::unique_ptr<Gatherer>>(gatherer);
  if (request.gpu_details) g.want_gpu_details();
  g.start_nvml_helper();
  Gathered gathered = g.collect();
  if (request.settle_activity) settle_leftover_activity(g, gathered);
  return gathered;
}

}  // namespace gpuclean::collect
