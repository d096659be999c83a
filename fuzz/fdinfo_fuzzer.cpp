// /proc/PID/fdinfo/N: "flags:" in octal, and a DRM node's client usage stats.
#include "fuzz_check.h"
#include "procfs/drm_fdinfo.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuclean::fuzz::as_text(data, size);
  const auto flags = gpuclean::procfs::parse_fdinfo_flags(text);
  if (flags) {
    gpuclean::fuzz::check(text.find("flags:") != std::string_view::npos,
                          "fdinfo flags come from a flags: line");
  }
  (void)gpuclean::procfs::parse_btime(text);
  if (const auto client = gpuclean::procfs::parse_drm_fdinfo(text)) {
    gpuclean::fuzz::check(text.find("drm-driver:") != std::string_view::npos ||
                              text.find("pdev:") != std::string_view::npos,
                          "a DRM client comes from drm-driver: or amdgpu's pdev:");
    if (client->vram && *client->vram > 0) {
      gpuclean::fuzz::check(text.find("vram") != std::string_view::npos ||
                                text.find("local") != std::string_view::npos,
                            "VRAM comes from a device-local region");
    }
  }
  return 0;
}
