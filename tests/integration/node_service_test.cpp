// Issue 20: the node's GPU services (MPS control daemon and server) with real processes and the
// shipping gpuclean against the fake libnvidia-ml.so.1. The services are copies of
// holder_helper named like NVIDIA's daemons:
// - at an untrusted path (a temp directory) they are the ordinary processes they look like: an
//   orphan holding the device that `kill --leftovers` takes, memory that makes `check` fail.
//   This is the negative control: a name alone must never buy the trust;
// - at a system path (/usr/local/sbin, bind-mounted over in a private mount namespace that the
//   helpers and gpuclean share; root only) they are node services: never problems, never taken
//   by broad selectors, a named PID needs --yes; and MPS memory is judged the MPS way.
// Failed before the fix (run of 2026-12-01): the trusted daemon was {"class":"orphan","role":
// absent} and `check` exited 1 with the server's 66 MiB "in use".
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "fake_nvml_fixture.h"

namespace gpuclean::testing {
namespace {

using std::chrono_literals::operator""s;

constexpr unsigned long long kServerBytes = 66ull << 20;  // the H200's MPS server context
constexpr unsigned long long kClientBytes = 2ull << 30;

std::string mps_client_lines(pid_t pid, unsigned long long bytes) {
  return "process 0 compute " + std::to_string(pid) + " " + std::to_string(bytes) +
         "\nprocess 0 mps " + std::to_string(pid) + " " + std::to_string(bytes) + "\n";
}

// A PID that existed and is gone: a child that exited and was reaped.
pid_t gone_pid() {
  const pid_t pid = spawn({"/bin/true"});
  reap(pid);
  return pid;
}

// NAME's path along $PATH (spawn() does not search it), or "" when it is not installed.
std::string tool(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

const nlohmann::json* problem_of(const nlohmann::json& doc, pid_t pid) {
  for (const nlohmann::json& p : doc["problems"]) {
    if (p["pid"] == pid) return &p;
  }
  return nullptr;
}

class NodeServiceTest : public FakeNvmlTest {
 protected:
  // A copy of holder_helper named NAME in DIRECTORY, mode 0755.
  static std::string install(const std::string& directory, const std::string& name) {
    std::filesystem::create_directories(directory);
    const std::string path = directory + "/" + name;
    std::filesystem::copy_file(HOLDER_HELPER, path,
                               std::filesystem::copy_options::overwrite_existing);
    ::chmod(path.c_str(), 0755);
    return path;
  }
  // Starts `executable` as a daemon (double fork, setsid: its parent is init), through
  // `prefix` (nsenter into a mount namespace, or nothing); returns the daemon's PID.
  pid_t start_daemon(const std::vector<std::string>& prefix, const std::string& executable) {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {executable, "daemon", held_, ready_});
    const std::vector<pid_t> pids = start_argv(argv);
    EXPECT_EQ(pids.size(), 1u);
    return pids.empty() ? 0 : pids[0];
  }
  CommandResult gpuclean_in(const std::vector<std::string>& prefix,
                            const std::string& scenario_path, std::vector<std::string> args) {
    std::vector<std::string> argv = prefix;
    argv.push_back(GPUCLEAN_SHIPPING_BINARY);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--device-glob", held_});
    return run_command(argv, fake_env(variant_dir("r580"), scenario_path), 60s);
  }
  nlohmann::json status_in(const std::vector<std::string>& prefix, const std::string& scenario) {
    return parse(gpuclean_in(prefix, scenario, {"status", "--json"}));
  }
};

TEST_F(NodeServiceTest, ANameAloneIsNotTrusted) {
  const std::string bin = dir_.path() + "/bin";
  const pid_t daemon = start_daemon({}, install(bin, "nvidia-cuda-mps-control"));
  const pid_t server = start_daemon({}, install(bin, "nvidia-cuda-mps-server"));
  const std::string idle =
      scenario("used 0 " + std::to_string(kServerBytes) + "\n" + pid_line(server, kServerBytes));
  const nlohmann::json doc = status_in({}, idle);
  const nlohmann::json* d = find_holder(doc, daemon);
  ASSERT_NE(d, nullptr) << doc.dump(1);
  EXPECT_EQ(d->at("class"), "orphan");
  EXPECT_TRUE(d->at("role").is_null());
  EXPECT_TRUE(find_holder(doc, server)->at("role").is_null());
  EXPECT_EQ(gpuclean_in({}, idle, {"check"}).exit_code, 1) << "ordinary memory, ordinary orphan";
  const CommandResult leftovers =
      gpuclean_in({}, idle, {"kill", "--leftovers", "--dry-run", "--json"});
  EXPECT_NE(leftovers.out.find("\"pid\": " + std::to_string(daemon)), std::string::npos)
      << leftovers.out << leftovers.err;
  // A gone PID in NVML's MPS list with no trusted server is still the MPS server's memory
  // ("an MPS server gpuclean does not recognise"), never handed to an heir: before the review's
  // fix the weak rule named the fake daemon (the lone orphan with a context) its heir, and
  // --leftovers would have taken it for that.
  const pid_t gone = gone_pid();
  const std::string dead_client =
      scenario("used 0 " + std::to_string(kClientBytes + kServerBytes) + "\n" +
               pid_line(server, kServerBytes) + mps_client_lines(gone, kClientBytes));
  const nlohmann::json dead = status_in({}, dead_client);
  ASSERT_NE(problem_of(dead, gone), nullptr) << dead.dump(1);
  EXPECT_EQ(problem_of(dead, gone)->at("kind"), "mps-leftover");
  EXPECT_NE(find_holder(dead, daemon)->at("class"), "heir");
  // `kill GONE@START`: gone, but its memory still counted — not a clean kill (exit 1). Named
  // with a start time (any: the PID is not there), as a caller that saw it does: a plain PID
  // that is not there exits 1 for that alone (issue 47).
  const std::string gone_seen = std::to_string(gone) + "@1";
  const CommandResult killed = gpuclean_in({}, dead_client, {"kill", gone_seen});
  EXPECT_EQ(killed.exit_code, 1) << killed.err;
  EXPECT_NE(killed.err.find("is gone, but NVML still counts 2.0 GiB"), std::string::npos)
      << killed.err;
  // Negative control: a gone process NVML does not list is simply gone (exit 0).
  const CommandResult gone_clean = gpuclean_in({}, idle, {"kill", gone_seen});
  EXPECT_EQ(gone_clean.exit_code, 0) << gone_clean.err;
  EXPECT_NE(gone_clean.err.find("already gone"), std::string::npos) << gone_clean.err;
}

// The node, for the tests of trust across mount namespaces: PID 1 of a new PID namespace (a
// shell) stands in for the host's init. It and the trusted daemon share a mount namespace with
// /usr/local/sbin bound over (the test's copy of the executable); a second daemon runs the same
// file in a third, private mount namespace (a container's). Then gpuclean runs, as the test
// says, and prints status's JSON.
class NodeNamespaceTest : public NodeServiceTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: PID and mount namespaces, mounts";
    for (const char* dir : {"/", "/usr", "/usr/local", "/usr/local/sbin"}) {
      struct stat st {};
      if (::stat(dir, &st) != 0 || st.st_uid != 0 || (st.st_mode & 022) != 0) {
        GTEST_SKIP() << dir << " is missing or writable by others: no system path to trust";
      }
    }
    unshare_ = tool("unshare");
    if (unshare_.empty()) GTEST_SKIP() << "needs unshare (util-linux)";
    sbin_ = dir_.path() + "/sbin";
    executable_ = install(sbin_, "nvidia-cuda-mps-control");
    ::chmod(sbin_.c_str(), 0755);
    ::chmod(dir_.path().c_str(), 0755);
  }

  struct NodeRun {
    nlohmann::json doc;
    pid_t host = 0;       // the daemon in PID 1's mount namespace
    pid_t container = 0;  // the same file run in a third mount namespace
  };

  // `gpuclean_line`: the script's last line, which runs gpuclean. Its arguments: $1 sbin, $2 the
  // device file, $3/$4 the daemons' ready files, $5 gpuclean, $6 unshare, $7 the executable's
  // path in the test's directory. PID 1 waits for both daemons (bounded), runs that line as its
  // child and exits with its status; the kernel then ends every process of the namespace.
  NodeRun run_as_node(const std::string& gpuclean_line) {
    const std::string host_ready = dir_.path() + "/host.ready";
    const std::string container_ready = dir_.path() + "/container.ready";
    const std::string script =
        "mount --bind \"$1\" /usr/local/sbin || exit 125\n"
        "/usr/local/sbin/nvidia-cuda-mps-control daemon \"$2\" \"$3\" || exit 125\n"
        "\"$6\" --mount --propagation private /usr/local/sbin/nvidia-cuda-mps-control daemon "
        "\"$2\" \"$4\" || exit 125\n"
        "i=0; while [ ! -s \"$3\" ] || [ ! -s \"$4\" ]; do\n"
        "  i=$((i + 1)); [ $i -gt 200 ] && exit 124; sleep 0.05\n"
        "done\n" +
        gpuclean_line + "\n";
    const CommandResult result =
        run_command({unshare_, "--pid", "--fork", "--mount-proc", "--propagation", "private", "sh",
                     "-c", script, "sh", sbin_, held_, host_ready, container_ready,
                     GPUCLEAN_SHIPPING_BINARY, unshare_, executable_},
                    60s);
    NodeRun run;
    if (result.exit_code == 125 || result.exit_code == 124) {
      ADD_FAILURE() << (result.exit_code == 125 ? "namespace setup failed: "
                                                : "the daemons did not start: ")
                    << result.err;
      return run;
    }
    run.doc = parse(result);
    run.host = std::stoi(slurp(host_ready));
    run.container = std::stoi(slurp(container_ready));
    return run;
  }

  // Negative control of both tests: the same file, run by root in a third mount namespace (a
  // container's), is an ordinary process: its own root would name its own file, and that
  // proves nothing.
  static void expect_untrusted(const NodeRun& run) {
    const nlohmann::json* container = find_holder(run.doc, run.container);
    ASSERT_NE(container, nullptr) << run.doc.dump(1);
    EXPECT_TRUE(container->at("role").is_null()) << container->dump(1);
    EXPECT_EQ(container->at("class"), "orphan");
  }

  std::string unshare_;
  std::string sbin_;
  std::string executable_;
};

// Issue 16: the systemd units give gpuclean a mount namespace of its own (ProtectSystem=,
// PrivateTmp=), while the node's services run in the host's, PID 1's. A service there is still
// the node's; one in a third namespace (a container's) is not. Here a PID namespace stands in
// for the node: its PID 1 (a shell) and the trusted daemon share a mount namespace with
// /usr/local/sbin bound over; the sandboxed gpuclean (and the untrusted daemon) are each in a
// private copy of it, as systemd makes them. Failed before the fix (run of 2026-12-01): the
// daemon in PID 1's namespace had role null and class orphan, as the systemd helper saw a
// root nvidia-smi under the real units.
TEST_F(NodeNamespaceTest, AServiceInTheHostsMountNamespaceIsTrustedFromASandboxedGpuclean) {
  const NodeRun run = run_as_node(
      "\"$6\" --mount --propagation private \"$5\" status --json --no-nvml --device-glob \"$2\"");
  const nlohmann::json* host = find_holder(run.doc, run.host);
  ASSERT_NE(host, nullptr) << run.doc.dump(1);
  EXPECT_EQ(host->at("role"), "mps-control") << host->dump(1);
  expect_untrusted(run);
}

// Issue 17: a DaemonSet's gpuclean (contrib/k8s/daemonset.yaml: hostPID) runs in the pod's
// mount namespace with the image's root, while the node's services run in the host's, PID
// 1's. /proc/PID/exe then names the host's path ("/usr/local/sbin/nvidia-cuda-mps-control"),
// which in the image is another file (GPU images carry NVIDIA's tools) or none. The path is
// checked where the process runs it: in PID 1's root (/proc/1/root), walked without symlinks.
// Here a PID namespace stands in for the node, as above; gpuclean's namespace mounts a tmpfs
// over /usr/local/sbin holding its own root-owned copy of the executable: the image.
// Failed before the fix (run of 2026-12-02, the shipping binary of b5d8586): the host's daemon
// had role null, executable null and class "orphan" (the path named the image's copy in
// gpuclean's namespace: another inode).
TEST_F(NodeNamespaceTest, AServiceInTheHostsMountNamespaceIsTrustedFromAPodWithItsOwnRoot) {
  const NodeRun run = run_as_node(
      "\"$6\" --mount --propagation private sh -c 'mount -t tmpfs -o mode=0755 image "
      "/usr/local/sbin && cp \"$1\" /usr/local/sbin/nvidia-cuda-mps-control && chmod 0755 "
      "/usr/local/sbin/nvidia-cuda-mps-control || exit 125; exec \"$0\" status --json --no-nvml "
      "--device-glob \"$2\"' \"$5\" \"$7\" \"$2\"");
  const nlohmann::json* host = find_holder(run.doc, run.host);
  ASSERT_NE(host, nullptr) << run.doc.dump(1);
  EXPECT_EQ(host->at("role"), "mps-control") << host->dump(1);
  EXPECT_EQ(host->at("executable"), "/usr/local/sbin/nvidia-cuda-mps-control");
  EXPECT_EQ(host->at("class"), "active");
  expect_untrusted(run);
}

class TrustedNodeServiceTest : public NodeServiceTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: a bind mount in a mount namespace";
    for (const char* dir : {"/", "/usr", "/usr/local", "/usr/local/sbin"}) {
      struct stat st {};
      if (::stat(dir, &st) != 0 || st.st_uid != 0 || (st.st_mode & 022) != 0) {
        GTEST_SKIP() << dir << " is missing or writable by others: no system path to trust";
      }
    }
    // The services' directory, mounted over /usr/local/sbin in a namespace held open by a
    // sleeping process; the helpers and gpuclean enter it with nsenter.
    const std::string sbin = dir_.path() + "/sbin";
    install(sbin, "nvidia-cuda-mps-control");
    install(sbin, "nvidia-cuda-mps-server");
    ::chmod(sbin.c_str(), 0755);
    ::chmod(dir_.path().c_str(), 0755);
    const std::string mounted = dir_.path() + "/mounted";
    const std::string unshare = tool("unshare");
    const std::string nsenter = tool("nsenter");
    if (unshare.empty() || nsenter.empty())
      GTEST_SKIP() << "needs unshare and nsenter (util-linux)";
    namespace_holder_ = spawn(
        {unshare, "--mount", "--propagation", "private", "sh", "-c",
         "mount --bind \"$0\" /usr/local/sbin && : > \"$1\" && exec sleep 300", sbin, mounted});
    reaper_.adopt(namespace_holder_);
    launchers_.push_back(namespace_holder_);
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(mounted); }))
        << "unshare/mount failed";
    ns_ = {nsenter, "--mount=/proc/" + std::to_string(namespace_holder_) + "/ns/mnt", "--"};
    daemon_ = start_daemon(ns_, "/usr/local/sbin/nvidia-cuda-mps-control");
    server_ = start_daemon(ns_, "/usr/local/sbin/nvidia-cuda-mps-server");
  }
  std::string scenario_with(unsigned long long used, const std::string& lines) {
    return scenario("used 0 " + std::to_string(used) + "\n" + lines);
  }
  pid_t namespace_holder_ = 0;
  std::vector<std::string> ns_;
  pid_t daemon_ = 0;
  pid_t server_ = 0;
};

TEST_F(TrustedNodeServiceTest, MpsDaemonAndServerAreNodeServicesNotProblems) {
  const std::string idle = scenario_with(kServerBytes, pid_line(server_, kServerBytes));
  const nlohmann::json doc = status_in(ns_, idle);
  const nlohmann::json* d = find_holder(doc, daemon_);
  ASSERT_NE(d, nullptr) << doc.dump(1);
  EXPECT_EQ(d->at("role"), "mps-control") << d->dump(1);
  EXPECT_EQ(d->at("executable"), "/usr/local/sbin/nvidia-cuda-mps-control");
  EXPECT_EQ(d->at("class"), "active") << "a daemon's parent is init by design";
  EXPECT_EQ(find_holder(doc, server_)->at("role"), "mps-server");
  EXPECT_TRUE(doc["problems"].empty()) << doc["problems"].dump(1);
  EXPECT_EQ(doc["verdict"], "clean");
  EXPECT_EQ(gpuclean_in(ns_, idle, {"check"}).exit_code, 0);
  const CommandResult text = gpuclean_in(ns_, idle, {"status"});
  EXPECT_NE(text.out.find("Node services"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("mps-control"), std::string::npos) << text.out;
  // The same processes seen from outside the namespace: the path names no such file there, so
  // nothing is trusted (negative control inside the same test).
  const nlohmann::json outside = status_in({}, idle);
  EXPECT_TRUE(find_holder(outside, daemon_)->at("role").is_null());
  EXPECT_EQ(find_holder(outside, daemon_)->at("class"), "orphan");
}

TEST_F(TrustedNodeServiceTest, BroadSelectorsLeaveServicesAndANamedOneNeedsYes) {
  const pid_t client = start("hold", held_).at(0);
  const std::string busy =
      scenario_with(kClientBytes + kServerBytes,
                    pid_line(server_, kServerBytes) + mps_client_lines(client, kClientBytes));
  const nlohmann::json doc = status_in(ns_, busy);
  const nlohmann::json* c = find_holder(doc, client);
  ASSERT_NE(c, nullptr) << doc.dump(1);
  EXPECT_EQ(c->at("role"), "mps-client");
  EXPECT_EQ(c->at("mps_server"), server_);
  EXPECT_EQ(c->at("gpu_memory")["0"], kClientBytes) << "once, though NVML lists it twice";
  ASSERT_EQ(doc["problems"].size(), 1u) << doc["problems"].dump(1);
  EXPECT_EQ(doc["problems"][0]["pid"], client);

  const CommandResult holders =
      gpuclean_in(ns_, busy, {"kill", "--holders", "--dry-run", "--json"});
  const nlohmann::json plan = parse(holders);
  ASSERT_EQ(plan["targets"].size(), 1u) << plan.dump(1) << holders.err;
  EXPECT_EQ(plan["targets"][0]["pid"], client);
  EXPECT_NE(holders.err.find("not touching pid " + std::to_string(daemon_) +
                             ": the node's MPS control daemon"),
            std::string::npos)
      << holders.err;
  const CommandResult leftovers = gpuclean_in(ns_, busy, {"kill", "--leftovers", "--dry-run"});
  EXPECT_EQ(leftovers.exit_code, 0) << leftovers.err;
  EXPECT_NE(leftovers.err.find("nothing to kill"), std::string::npos) << leftovers.out;

  const nlohmann::json named =
      parse(gpuclean_in(ns_, busy, {"kill", std::to_string(daemon_), "--dry-run", "--json"}));
  ASSERT_EQ(named["targets"].size(), 1u) << named.dump(1);
  ASSERT_EQ(named["confirm_reasons"].size(), 1u) << named.dump(1);
  EXPECT_NE(named["confirm_reasons"][0].get<std::string>().find(
                "is the node's MPS control daemon (/usr/local/sbin/nvidia-cuda-mps-control)"),
            std::string::npos);
  // Without --yes and no terminal to ask on, nothing is signalled.
  const CommandResult refused = gpuclean_in(ns_, busy, {"kill", std::to_string(daemon_)});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(proc_state(daemon_), '\0') << "the daemon lives";
}

TEST_F(TrustedNodeServiceTest, MemoryTheServerHoldsForGoneClientsIsAnMpsLeftover) {
  const pid_t gone = gone_pid();
  const std::string dead_client =
      scenario_with(kClientBytes + kServerBytes,
                    pid_line(server_, kServerBytes) + mps_client_lines(gone, kClientBytes));
  const nlohmann::json doc = status_in(ns_, dead_client);
  const nlohmann::json* p = problem_of(doc, gone);
  ASSERT_NE(p, nullptr) << doc.dump(1);
  EXPECT_EQ(p->at("kind"), "mps-leftover");
  EXPECT_NE(p->at("fix").get<std::string>().find("echo quit | nvidia-cuda-mps-control"),
            std::string::npos);
  EXPECT_EQ(doc["problems"].size(), 1u) << doc["problems"].dump(1);

  const nlohmann::json swollen =
      status_in(ns_, scenario_with(3ull << 30, pid_line(server_, 3ull << 30)));
  const nlohmann::json* s = problem_of(swollen, server_);
  ASSERT_NE(s, nullptr) << swollen.dump(1);
  EXPECT_EQ(s->at("kind"), "mps-leftover");
  EXPECT_NE(s->at("message").get<std::string>().find("no MPS client left"), std::string::npos);
}

// Issue 48 item 10: two MPS servers of one user (a second one left by an earlier run with
// another CUDA_MPS_PIPE_DIRECTORY, as tests/gpu/mps.sh met on an H100). The pipe directory a
// client connects through names its server; on 43ce5a9 each client's mps_server was null.
TEST_F(TrustedNodeServiceTest, TwoServersOfOneUserAreToldApartByThePipeDirectory) {
  const std::string env = tool("env");
  if (env.empty()) GTEST_SKIP() << "needs env (coreutils)";
  const std::string pipe = dir_.path() + "/pipe";
  std::vector<std::string> with_pipe = ns_;
  with_pipe.insert(with_pipe.end(), {env, "CUDA_MPS_PIPE_DIRECTORY=" + pipe});
  const pid_t second = start_daemon(with_pipe, "/usr/local/sbin/nvidia-cuda-mps-server");
  ASSERT_GT(second, 0);
  // server_ was started with the variable unset: MPS's default directory.
  auto client = [&](const std::string& setting) {
    return start_argv({env, setting, HOLDER_HELPER, "hold", held_, ready_}).at(0);
  };
  const pid_t in_pipe = client("CUDA_MPS_PIPE_DIRECTORY=" + pipe);
  const pid_t in_default = client("--unset=CUDA_MPS_PIPE_DIRECTORY");
  const pid_t elsewhere = client("CUDA_MPS_PIPE_DIRECTORY=" + dir_.path() + "/no-server");
  const nlohmann::json doc = status_in(
      ns_, scenario_with(3 * kClientBytes + 2 * kServerBytes,
                         pid_line(server_, kServerBytes) + pid_line(second, kServerBytes) +
                             mps_client_lines(in_pipe, kClientBytes) +
                             mps_client_lines(in_default, kClientBytes) +
                             mps_client_lines(elsewhere, kClientBytes)));
  ASSERT_EQ(find_holder(doc, second)->at("role"), "mps-server") << doc.dump(1);
  ASSERT_EQ(find_holder(doc, server_)->at("uid"), find_holder(doc, second)->at("uid"));
  const nlohmann::json* a = find_holder(doc, in_pipe);
  ASSERT_NE(a, nullptr) << doc.dump(1);
  EXPECT_EQ(a->at("role"), "mps-client");
  EXPECT_EQ(a->at("mps_server"), second) << a->dump(1);
  EXPECT_EQ(find_holder(doc, in_default)->at("mps_server"), server_) << doc.dump(1);
  // Negative control: a directory neither server has names no server.
  const nlohmann::json* c = find_holder(doc, elsewhere);
  EXPECT_EQ(c->at("role"), "mps-client");
  EXPECT_TRUE(c->at("mps_server").is_null()) << c->dump(1);
}

// Review of issue 20: the file proves nothing about the code a user runs with it. The same
// trusted executable run by an unprivileged user (who could LD_PRELOAD anything into it) is an
// ordinary process: an orphan holding the device, a --leftovers target.
TEST_F(TrustedNodeServiceTest, ATrustedExecutableRunByAUserIsNotAService) {
  const std::string setpriv = tool("setpriv");
  if (setpriv.empty()) GTEST_SKIP() << "needs setpriv (util-linux)";
  ::chmod(held_.c_str(), 0666);
  // nobody must be able to open the device file and write its ready file.
  const std::string open_dir = dir_.path() + "/open";
  std::filesystem::create_directory(open_dir);
  ::chmod(open_dir.c_str(), 0777);
  ready_ = open_dir + "/ready";
  std::vector<std::string> as_nobody = ns_;
  as_nobody.insert(as_nobody.end(),
                   {setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  const pid_t user_daemon = start_daemon(as_nobody, "/usr/local/sbin/nvidia-cuda-mps-control");
  ASSERT_GT(user_daemon, 0);
  const nlohmann::json doc = status_in(ns_, scenario_with(0, ""));
  const nlohmann::json* u = find_holder(doc, user_daemon);
  ASSERT_NE(u, nullptr) << doc.dump(1);
  EXPECT_EQ(u->at("uid"), 65534);
  EXPECT_TRUE(u->at("role").is_null()) << u->dump(1);
  EXPECT_EQ(u->at("class"), "orphan");
  // Negative control: root's copy of the same file, started the same way, is the service.
  EXPECT_EQ(find_holder(doc, daemon_)->at("role"), "mps-control");
}

}  // namespace
}  // namespace gpuclean::testing
