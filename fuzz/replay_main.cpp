// Replays fuzz inputs through the fuzz targets without libFuzzer, so the gcc and ASan builds of
// ./test.sh run every seed (fuzz/corpus/NAME) and every kept crash (fuzz/regressions/NAME) on
// each change, even where clang is missing.
//   fuzz_replay NAME DIR_OR_FILE…
// Each target's source is compiled with LLVMFuzzerTestOneInput renamed to gpuclean_fuzz_NAME
// (fuzz/CMakeLists.txt). A violated property aborts, as under libFuzzer.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#define GPUCLEAN_FUZZ_TARGET(name) \
  extern "C" int gpuclean_fuzz_##name(const std::uint8_t* data, std::size_t size);
GPUCLEAN_FUZZ_TARGET(stat)
GPUCLEAN_FUZZ_TARGET(status)
GPUCLEAN_FUZZ_TARGET(nspid)
GPUCLEAN_FUZZ_TARGET(cmdline)
GPUCLEAN_FUZZ_TARGET(cgroup)
GPUCLEAN_FUZZ_TARGET(mountinfo)
GPUCLEAN_FUZZ_TARGET(maps)
GPUCLEAN_FUZZ_TARGET(fdinfo)
GPUCLEAN_FUZZ_TARGET(fd_link)
GPUCLEAN_FUZZ_TARGET(run_record)
GPUCLEAN_FUZZ_TARGET(snapshot)
GPUCLEAN_FUZZ_TARGET(duration)
GPUCLEAN_FUZZ_TARGET(signal)
GPUCLEAN_FUZZ_TARGET(gpu_list)
GPUCLEAN_FUZZ_TARGET(escape)
GPUCLEAN_FUZZ_TARGET(http_request)
#undef GPUCLEAN_FUZZ_TARGET

namespace {

using Target = int (*)(const std::uint8_t*, std::size_t);

const std::map<std::string, Target>& targets() {
  static const std::map<std::string, Target> table = {
      {"stat", gpuclean_fuzz_stat},         {"status", gpuclean_fuzz_status},
      {"nspid", gpuclean_fuzz_nspid},       {"cmdline", gpuclean_fuzz_cmdline},
      {"cgroup", gpuclean_fuzz_cgroup},     {"mountinfo", gpuclean_fuzz_mountinfo},
      {"maps", gpuclean_fuzz_maps},         {"fdinfo", gpuclean_fuzz_fdinfo},
      {"fd_link", gpuclean_fuzz_fd_link},   {"run_record", gpuclean_fuzz_run_record},
      {"snapshot", gpuclean_fuzz_snapshot}, {"duration", gpuclean_fuzz_duration},
      {"signal", gpuclean_fuzz_signal},     {"gpu_list", gpuclean_fuzz_gpu_list},
      {"escape", gpuclean_fuzz_escape},     {"http_request", gpuclean_fuzz_http_request},
  };
  return table;
}

int replay(Target target, const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("%s (%zu bytes)\n", file.c_str(), bytes.size());
  std::fflush(stdout);  // the name is out before a crash
  target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || targets().count(argv[1]) == 0) {
    std::fprintf(stderr, "usage: fuzz_replay NAME DIR_OR_FILE...\n");
    return 2;
  }
  const Target target = targets().at(argv[1]);
  int inputs = 0;
  for (int i = 2; i < argc; ++i) {
    const std::filesystem::path path(argv[i]);
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (entry.is_regular_file()) inputs += replay(target, entry.path());
      }
    } else if (std::filesystem::exists(path)) {
      inputs += replay(target, path);
    }
  }
  std::printf("%d inputs replayed, no property violated\n", inputs);
  return inputs > 0 ? 0 : 1;
}
