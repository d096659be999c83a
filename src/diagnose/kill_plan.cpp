#include "diagnose/kill_plan.h"

#include <algorithm>
#include <utility>

#include "diagnose/activity.h"
#include "diagnose/classify.h"

namespace gpuclean::diagnose {
namespace {

std::string pid_text(Pid pid) {
  return std::to_string(pid);
}

// Why `process` may never be signalled by gpuclean, or nullopt. `own` are gpuclean's ancestors
// and its descendants (its NVML helper).
struct Own {
  std::set<Pid> ancestors;
  std::set<Pid> children;
};

std::optional<std::string> protection(const ProcessInfo& process, const KillContext& context,
                                      const Own& own) {
  if (process.pid == 1) return "PID 1 (init) is never a target";
  if (process.pid == context.self) return "gpuclean itself";
  if (own.children.count(process.pid) > 0) return "gpuclean's own helper process";
  const std::set<Pid>& ancestors_of_self = own.ancestors;
  if (ancestors_of_self.count(process.pid) > 0) {
    return "an ancestor of gpuclean (the shell or program that started it)";
  }
  if (process.kernel_thread) return "a kernel thread";
  return std::nullopt;
}

std::string not_permitted(const ProcessInfo& process) {
  const std::string as = process.uid == Uid{0} ? "root" : "root or as " + process.user;
  return "owned by " + process.user + ": not permitted (run as " + as + ")";
}

bool in_cgroup(const ProcessInfo& process, const std::string& cgroup) {
  if (!process.cgroup) return false;
  const std::string prefix =
      cgroup.size() > 1 && cgroup.back() == '/' ? cgroup.substr(0, cgroup.size() - 1) : cgroup;
  return *process.cgroup == prefix || process.cgroup->rfind(prefix + "/", 0) == 0;
}

bool on_selected_gpu(const Holder& holder, const std::optional<std::set<unsigned>>& gpus) {
  if (!gpus) return true;
  return std::any_of(holder.gpu_memory.begin(), holder.gpu_memory.end(),
                     [&](const auto& entry) { return gpus->count(entry.first) > 0; });
}

// Why a node service is left out of a broad selection.
std::string service_reason(const Holder& h) {
  return std::string("the node's ") + describe(*h.service) + " (" + h.executable +
         "): a target only when named by PID, with --yes";
}

// Parents before children: by depth in the table, then PID. The depths are computed once for
// the whole table (each parent link followed once); looked up in each comparison, they made
// planning a chain of processes quadratic (issue 33: 5.8 s for a chain of 1,716).
void sort_parents_first(std::vector<KillTarget>& targets, const ProcessTable& table) {
  const std::map<Pid, int> depth = depths_in(table).depth;
  std::vector<std::pair<std::pair<int, Pid>, KillTarget>> keyed;
  keyed.reserve(targets.size());
  for (KillTarget& target : targets) {
    const Pid pid = target.process.pid;
    keyed.emplace_back(std::make_pair(depth.at(pid), pid), std::move(target));
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  targets.clear();
  for (auto& entry : keyed) targets.push_back(std::move(entry.second));
}

}  // namespace

bool KillSelectors::broad() const {
  return holders || leftovers || !sessions.empty() || !pgids.empty() || !users.empty() ||
         !cgroups.empty() || !owners.empty();
}

bool is_leftover(HolderClass klass) {
  return klass == HolderClass::kOrphan || klass == HolderClass::kHeir ||
         klass == HolderClass::kZombieLeader;
}

bool is_leftover(const Holder& holder) {
  // A stuck holder (a thread stayed in D, or its memory map is locked) is planned when its
  // lifecycle makes it a leftover: signals reach it once the wait ends. With its parent alive it
  // is someone's running work (before issue 32, a vfork parent in D was planned as "stuck").
  if (holder.klass == HolderClass::kStuck) return is_leftover(lifecycle_class(holder.process));
  return is_leftover(holder.klass);
}

namespace {

// What the phases of plan_kill share.
struct Planning {
  const ProcessTable& table;
  const KillSelectors& selectors;
  const KillContext& context;
  Own own;
  // The scan's holders, by PID, only where /proc still shows the same process (PID and start
  // time): a PID recycled since the scan is another process and inherits nothing.
  std::map<Pid, const Holder*> holder_of;
  std::set<Pid> recycled;
  std::map<Pid, Pid> ambiguous_candidate;  // holder → the dead owner it may have inherited from
  std::map<Pid, std::string> chosen;       // pid → why (the first selector that chose it)
  std::map<Pid, Pid> named_root;           // descendant → the named PID whose tree it is in
};

Planning start_planning(const ProcessTable& table, const std::vector<Holder>& holders,
                        const KillSelectors& selectors, const KillContext& context,
                        const std::vector<DeadOwner>& dead_owners) {
  Planning p{table,   selectors,
             context, Own{ancestors(table, context.self), descendants(table, context.self)},
             {},      {},
             {},      {},
             {}};
  for (const DeadOwner& owner : dead_owners) {
    if (!owner.ambiguous) continue;
    for (const auto& candidate : owner.candidates) p.ambiguous_candidate[candidate.pid] = owner.pid;
  }
  for (const Holder& h : holders) {
    if (!h.visible) continue;
    auto now = table.find(h.process.pid);
    if (now != table.end() && now->second.start_ticks != h.process.start_ticks) {
      p.recycled.insert(h.process.pid);
      continue;
    }
    p.holder_of[h.process.pid] = &h;
  }
  return p;
}

// The named PIDs, and their trees unless --no-tree.
void choose_named(Planning& p, KillPlan& plan) {
  for (Pid pid : p.selectors.pids) {
    auto it = p.table.find(pid);
    const auto wanted_start = p.selectors.start_ticks.find(pid);
    if (it == p.table.end() || (wanted_start != p.selectors.start_ticks.end() &&
                                it->second.start_ticks != wanted_start->second)) {
      plan.not_found.push_back(pid);
      continue;
    }
    if (auto reason = protection(it->second, p.context, p.own)) {
      plan.refused.push_back({pid, *reason});
      continue;
    }
    // Skipped here, it implies nothing below it either: a user naming root's tmux server must
    // not get every own process under it planned. (A monitor named by PID is a target: being
    // named is the evidence; a trusted one is a node service and needs a confirmation.)
    if (!p.context.privileged && it->second.uid && *it->second.uid != p.context.euid) {
      plan.skipped.push_back(
          {pid, not_permitted(it->second) + "; its descendants are not implied"});
      continue;
    }
    p.chosen.emplace(pid, "named");
    if (!p.selectors.tree) continue;
    for (Pid child : descendants(p.table, pid)) {
      p.chosen.emplace(child, "descendant of " + pid_text(pid));
      p.named_root.emplace(child, pid);
    }
  }
}

// Sessions, process groups, users, cgroups, jobs and containers: every process of the table.
void choose_by_membership(Planning& p) {
  const KillSelectors& s = p.selectors;
  for (const auto& [pid, info] : p.table) {
    for (Pid sid : s.sessions) {
      if (info.sid == sid) p.chosen.emplace(pid, "session " + pid_text(sid));
    }
    for (Pid pgid : s.pgids) {
      if (info.pgid == pgid) p.chosen.emplace(pid, "process group " + pid_text(pgid));
    }
    for (Uid uid : s.users) {
      if (info.uid == uid) p.chosen.emplace(pid, "user " + info.user);
    }
    for (const std::string& cgroup : s.cgroups) {
      if (in_cgroup(info, cgroup)) p.chosen.emplace(pid, "cgroup " + cgroup);
    }
    if (auto owner = owner_match(info, s.owners)) p.chosen.emplace(pid, *owner);
  }
}

// The holders of a leftover's tree: ROOT, then the holders among its descendants now.
std::vector<const Holder*> tree_holders(const Planning& p, const Holder& root,
                                        const std::set<Pid>& descendants) {
  std::vector<const Holder*> out{&root};
  for (Pid pid : descendants) {
    if (auto h = p.holder_of.find(pid); h != p.holder_of.end()) out.push_back(h->second);
  }
  return out;
}

// Why --leftovers leaves a leftover's tree alone for its activity: the root or a descendant
// still computing (its owner may live: an orphan), or nullopt.
std::optional<std::string> tree_busy_reason(const std::vector<const Holder*>& tree) {
  if (auto busy = busy_reason(*tree.front())) return busy;
  if (owner_gone(*tree.front())) return std::nullopt;
  for (std::size_t i = 1; i < tree.size(); ++i) {
    const Holder& h = *tree[i];
    if (!h.activity || !h.activity->computing()) continue;
    return "its descendant pid " + pid_text(h.process.pid) + " is still computing (SM " +
           std::to_string(h.activity->sm) +
           "%, sustained): check whose work it is (gpuclean explain " + pid_text(h.process.pid) +
           "); --include-busy takes it";
  }
  return std::nullopt;
}

// Why a holder --holders or --leftovers selects is not taken, or nullopt.
std::optional<std::string> holder_skip_reason(const Planning& p, const Holder& h,
                                              const std::vector<const Holder*>& tree) {
  const KillSelectors& s = p.selectors;
  const Pid pid = h.process.pid;
  const bool leftovers_only = s.leftovers && !s.holders;
  if (h.service) return service_reason(h);
  if (auto owner = p.ambiguous_candidate.find(pid);
      leftovers_only && owner != p.ambiguous_candidate.end()) {
    return "may hold the context of dead pid " + pid_text(owner->second) +
           ", but so may others (ambiguous): see gpuclean explain " + pid_text(owner->second) +
           ", then kill the right one by PID";
  }
  if (leftovers_only && !s.include_busy) {
    if (auto busy = tree_busy_reason(tree)) return busy;
  }
  if (p.recycled.count(pid) > 0) return "its PID was recycled since the scan (now another process)";
  if (p.table.count(pid) == 0) return "exited since the scan";
  return std::nullopt;
}

// What --holders or --leftovers selects of holder H: H alone for --holders; for --leftovers a
// leftover with its descendants now (`below`, unless --no-tree) and the holders among them,
// root first (issue 47: the tree status names in one problem, the unit `gpuclean kill ROOT`
// ends). nullopt when H is not selected: a monitor, not visible, not a leftover, or --gpus
// names no GPU any holder of the tree holds memory on.
struct SelectedTree {
  std::set<Pid> below;
  std::vector<const Holder*> holders;
};
std::optional<SelectedTree> selected_tree(const Planning& p, const Holder& h) {
  const KillSelectors& s = p.selectors;
  if (!h.visible || h.klass == HolderClass::kMonitor) return std::nullopt;
  const bool as_leftover = !s.holders && is_leftover(h);
  if (!s.holders && !as_leftover) return std::nullopt;
  const Pid pid = h.process.pid;
  SelectedTree tree;
  if (as_leftover && s.tree && p.table.count(pid) > 0 && p.recycled.count(pid) == 0) {
    tree.below = descendants(p.table, pid);
  }
  tree.holders = tree_holders(p, h, tree.below);
  if (std::none_of(tree.holders.begin(), tree.holders.end(),
                   [&](const Holder* t) { return on_selected_gpu(*t, s.gpus); })) {
    return std::nullopt;
  }
  return tree;
}

// --holders and --leftovers (narrowed by --gpus): each selected tree (selected_tree), never a
// node service, never an ambiguous heir candidate for --leftovers alone, and a leftover's tree
// left whole while it is still computing (tree_busy_reason).
void choose_holders(Planning& p, const std::vector<Holder>& holders, KillPlan& plan) {
  const KillSelectors& s = p.selectors;
  if (!s.holders && !s.leftovers) return;
  for (const Holder& h : holders) {
    const std::optional<SelectedTree> tree = selected_tree(p, h);
    if (!tree) continue;
    const Pid pid = h.process.pid;
    if (auto skip = holder_skip_reason(p, h, tree->holders)) {
      const bool gone = p.recycled.count(pid) > 0 || p.table.count(pid) == 0;
      plan.skipped.push_back({pid, *skip, gone && !h.service});
      continue;
    }
    p.chosen.emplace(pid, s.holders ? std::string("holder")
                                    : std::string("leftover (") + to_string(h.klass) + ")");
    for (Pid child : tree->below) {
      p.chosen.emplace(child, "descendant of leftover " + pid_text(pid));
    }
  }
}

// Each chosen process is a target unless protected, a node service chosen too broadly, or
// another user's without privilege. Targets come out parents first.
void targets_of_chosen(const Planning& p, KillPlan& plan) {
  for (const auto& [pid, why] : p.chosen) {
    const ProcessInfo& info = p.table.at(pid);
    const auto holder = p.holder_of.find(pid);
    const Holder* h = holder == p.holder_of.end() ? nullptr : holder->second;
    if (auto reason = protection(info, p.context, p.own)) {
      plan.skipped.push_back({pid, *reason});
    } else if (h != nullptr && h->service && p.named_root.count(pid) == 0 && why != "named") {
      // Chosen by a session, group, user or cgroup: too broad to end a node service.
      plan.skipped.push_back({pid, service_reason(*h)});
    } else if (!p.context.privileged && info.uid && *info.uid != p.context.euid) {
      plan.skipped.push_back({pid, not_permitted(info)});
    } else {
      KillTarget target;
      target.process = h != nullptr ? h->process : info;
      target.klass = h != nullptr ? h->klass : classify_from_proc(info);
      if (h != nullptr) {
        target.gpu_memory = h->gpu_memory;
        target.inherited_from = h->inherited_from;
      }
      target.why = why;
      plan.targets.push_back(std::move(target));
    }
  }
  sort_parents_first(plan.targets, p.table);
}

// Why the plan needs a confirmation: broad selectors; a node service among the targets (every
// job on the node may depend on it); a named PID's tree reaching another user or session (an
// explicit PID confirms that process, not whatever its tree reaches: a session leader's tree
// can hold another user's job or a detached daemon).
void confirm_reasons(const Planning& p, KillPlan& plan) {
  if (p.selectors.broad()) {
    plan.confirm_reasons.emplace_back("selectors other than explicit PIDs need a confirmation");
  }
  for (const KillTarget& target : plan.targets) {
    const auto holder = p.holder_of.find(target.process.pid);
    if (holder == p.holder_of.end() || !holder->second->service) continue;
    plan.confirm_reasons.push_back("pid " + pid_text(target.process.pid) + " is the node's " +
                                   describe(*holder->second->service) + " (" +
                                   holder->second->executable +
                                   "): jobs on the node may depend on it");
  }
  for (const KillTarget& target : plan.targets) {
    auto root = p.named_root.find(target.process.pid);
    if (root == p.named_root.end()) continue;
    const ProcessInfo& named = p.table.at(root->second);
    const ProcessInfo& t = target.process;
    if (t.uid && named.uid && *t.uid != *named.uid) {
      plan.confirm_reasons.push_back("the tree of pid " + pid_text(named.pid) +
                                     " reaches another user's process (pid " + pid_text(t.pid) +
                                     ", user " + t.user + ")");
    } else if (t.sid != named.sid) {
      plan.confirm_reasons.push_back("the tree of pid " + pid_text(named.pid) +
                                     " reaches another session (pid " + pid_text(t.pid) +
                                     ", session " + pid_text(t.sid) + ")");
    }
  }
}

}  // namespace

std::map<ProcessIdentity, BusyLook> leftover_activity_to_settle(const ProcessTable& table,
                                                                const std::vector<Holder>& holders,
                                                                const KillSelectors& selectors,
                                                                const KillContext& context) {
  std::map<ProcessIdentity, BusyLook> out;
  if (!selectors.leftovers || selectors.holders || selectors.include_busy) return out;
  const Planning p = start_planning(table, holders, selectors, context, {});
  for (const Holder& h : holders) {
    if (owner_gone(h)) continue;  // its activity decides nothing
    const std::optional<SelectedTree> tree = selected_tree(p, h);
    if (!tree || table.count(h.process.pid) == 0 || p.recycled.count(h.process.pid) > 0) continue;
    const std::map<ProcessIdentity, BusyLook> busy = unsettled(tree->holders);
    out.insert(busy.begin(), busy.end());
  }
  return out;
}

KillPlan plan_kill(const ProcessTable& table, const std::vector<Holder>& holders,
                   const KillSelectors& selectors, const KillContext& context,
                   const std::vector<DeadOwner>& dead_owners) {
  KillPlan plan;
  Planning planning = start_planning(table, holders, selectors, context, dead_owners);
  choose_named(planning, plan);
  choose_by_membership(planning);
  choose_holders(planning, holders, plan);
  targets_of_chosen(planning, plan);
  confirm_reasons(planning, plan);
  return plan;
}

}  // namespace gpuclean::diagnose
