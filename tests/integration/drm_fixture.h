// A machine with AMD or Intel GPUs, written as files (issue 39): a sysfs tree whose
// class/drm entries lead to PCI devices with a driver link, the device nodes as plain files
// under a /dev root (the test binary matches them by inode, as --device-glob files), and a
// /proc tree whose processes hold those nodes through fd links, each fd with the fdinfo text a
// DRM driver writes. What each driver writes is docs/facts.md's ("DRM clients").
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuclean::testing {

class DrmFixture {
 public:
  DrmFixture() {
    root_ = std::filesystem::temp_directory_path() /
            ("gpuclean-drm-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(sys() / "class/drm");
    std::filesystem::create_directories(dev() / "dri");
    std::filesystem::create_directories(proc());
    write(proc() / "stat", "cpu  1 2 3 4\nbtime 1764500000\n");
  }
  ~DrmFixture() { std::filesystem::remove_all(root_); }
  DrmFixture(const DrmFixture&) = delete;
  DrmFixture& operator=(const DrmFixture&) = delete;

  [[nodiscard]] std::filesystem::path sys() const { return root_ / "sys"; }
  [[nodiscard]] std::filesystem::path dev() const { return root_ / "dev"; }
  [[nodiscard]] std::filesystem::path proc() const { return root_ / "proc"; }

  struct Node {
    std::string name;    // "renderD128", "card0", or a connector such as "card0-DP-1"
    std::string number;  // its `dev` file: "226:128"
  };
  // A PCI device at `address` bound to `driver`, with these DRM nodes (each also made under
  // dev()/dri); `vram` = {total, used} for amdgpu's mem_info files, when given.
  void add_gpu(const std::string& address, const std::string& driver, const std::string& vendor,
               const std::vector<Node>& nodes,
               std::optional<std::pair<std::uint64_t, std::uint64_t>> vram = std::nullopt,
               const std::string& product = "") {
    const auto device = sys() / "devices/pci0000:00" / address;
    std::filesystem::create_directories(device);
    std::filesystem::create_directories(sys() / "bus/pci/drivers" / driver);
    std::filesystem::create_symlink(sys() / "bus/pci/drivers" / driver, device / "driver");
    write(device / "vendor", vendor + "\n");
    write(device / "device", "0x74a1\n");
    if (!product.empty()) {
      write(device / "product_name", product + "\n");
      write(device / "unique_id", "a1b2c3d4e5f60718\n");
    }
    if (vram) {
      write(device / "mem_info_vram_total", std::to_string(vram->first) + "\n");
      write(device / "mem_info_vram_used", std::to_string(vram->second) + "\n");
    }
    for (const Node& node : nodes) {
      const auto entry = sys() / "class/drm" / node.name;
      std::filesystem::create_directories(entry);
      std::filesystem::create_symlink(device, entry / "device");
      write(entry / "dev", node.number + "\n");
      write(dev() / "dri" / node.name, "");
    }
  }
  void add_kfd() { write(dev() / "kfd", ""); }

  struct Fd {
    int number = 0;
    std::filesystem::path target;  // the node it holds
    std::string fdinfo;            // the driver's lines after pos/flags/mnt_id
  };
  // A process: stat, status, cmdline, cgroup, one thread, and its fds.
  void add_process(int pid, int ppid, const std::string& comm, unsigned uid,
                   const std::vector<Fd>& fds) {
    const auto dir = proc() / std::to_string(pid);
    std::filesystem::create_directories(dir / "fd");
    std::filesystem::create_directories(dir / "fdinfo");
    std::filesystem::create_directories(dir / "task" / std::to_string(pid));
    const std::string stat = std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid) +
                             " " + std::to_string(pid) + " " + std::to_string(pid) +
                             " 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n";
    write(dir / "stat", stat);
    write(dir / "task" / std::to_string(pid) / "stat", stat);
    write(dir / "task" / std::to_string(pid) / "wchan", "0");
    const std::string id = std::to_string(uid);
    write(dir / "status",
          "Name:\t" + comm + "\nState:\tS (sleeping)\nTgid:\t" + std::to_string(pid) +
              "\nNSpid:\t" + std::to_string(pid) + "\nPid:\t" + std::to_string(pid) + "\nPPid:\t" +
              std::to_string(ppid) + "\nUid:\t" + id + "\t" + id + "\t" + id + "\t" + id + "\n");
    write(dir / "cmdline", comm + std::string(1, '\0'));
    write(dir / "cgroup", "0::/user.slice/user-" + id + ".slice/session-3.scope\n");
    write(dir / "maps", "");
    for (const Fd& fd : fds) {
      std::filesystem::create_symlink(fd.target, dir / "fd" / std::to_string(fd.number));
      write(dir / "fdinfo" / std::to_string(fd.number),
            "pos:\t0\nflags:\t02100002\nmnt_id:\t25\n" + fd.fdinfo);
    }
  }

  // The test binary's options that point gpuclean at this machine.
  [[nodiscard]] std::vector<std::string> roots() const {
    return {"--proc-root",  proc().string(),  "--drm-sys-root",
            sys().string(), "--drm-dev-root", dev().string()};
  }

 private:
  static void write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path root_;
};

// amdgpu since 5.19 (drm-memory-*, KiB), with a client id.
inline std::string amdgpu_fdinfo(const std::string& pdev, int client, std::uint64_t vram_kib) {
  return "drm-driver:\tamdgpu\ndrm-pdev:\t" + pdev + "\ndrm-client-id:\t" + std::to_string(client) +
         "\ndrm-memory-vram:\t" + std::to_string(vram_kib) +
         " KiB\ndrm-memory-gtt: \t2048 KiB\ndrm-memory-cpu: \t0 KiB\n";
}

}  // namespace gpuclean::testing
