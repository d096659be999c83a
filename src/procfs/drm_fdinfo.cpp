#include "procfs/drm_fdinfo.h"

#include <charconv>
#include <map>
#include <string>

#include "core/whole_number.h"
#include "procfs/parse.h"

namespace gpuclean::procfs {
namespace {

// "1234 KiB", "12 MiB", "4096" (bytes), and amdgpu 5.14–5.18's "1234 kB" (KiB: it printed
// bytes / 1024). nullopt for anything else, or a value that would overflow.
std::optional<Bytes> parse_amount(std::string_view text) {
  text = trim(text);
  Bytes value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr == text.data()) return std::nullopt;
  const std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  Bytes scale = 1;
  if (unit == "KiB" || unit == "kB") {
    scale = Bytes{1} << 10;
  } else if (unit == "MiB") {
    scale = Bytes{1} << 20;
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  if (value > UINT64_MAX / scale) return std::nullopt;
  return value * scale;
}

// One region's figures, as far as the text gives them.
struct RegionFigures {
  std::optional<Bytes> resident;
  std::optional<Bytes> legacy;  // drm-memory-<region>
  std::optional<Bytes> total;
  bool malformed = false;  // some figure of it did not parse
  [[nodiscard]] std::optional<Bytes> best() const {
    if (resident) return resident;
    if (legacy) return legacy;
    return total;
  }
};

}  // namespace

bool is_device_local_region(std::string_view region) {
  auto numbered = [&region](std::string_view stem) {
    if (!region.starts_with(stem)) return false;
    const std::string_view digits = region.substr(stem.size());
    return digits.find_first_not_of("0123456789") == std::string_view::npos;
  };
  return numbered("vram") || (numbered("local") && region.size() > 5);
}

std::optional<DrmClient> parse_drm_fdinfo(std::string_view text) {
  DrmClient client;
  bool is_client = false;
  bool malformed = false;
  std::optional<Bytes> legacy_vram;  // amdgpu 5.14–5.18: "vram mem:"
  std::map<std::string, RegionFigures, std::less<>> regions;
  for_each_line(text, [&](std::string_view line) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (key == "drm-driver") {
      client.driver = std::string(value);
      is_client = true;
    } else if (key == "drm-pdev" || key == "pdev") {
      client.pdev = std::string(value);
      is_client = is_client || key == "pdev";
    } else if (key == "drm-client-id") {
      if (auto id = whole_number<std::uint64_t>(value)) client.client_id = *id;
    } else if (key == "vram mem") {
      legacy_vram = parse_amount(value);
      malformed = malformed || !legacy_vram;
    } else {
      std::optional<Bytes> RegionFigures::*slot = nullptr;
      std::string_view region;
      for (auto [prefix, member] :
           {std::pair{std::string_view("drm-resident-"), &RegionFigures::resident},
            std::pair{std::string_view("drm-memory-"), &RegionFigures::legacy},
            std::pair{std::string_view("drm-total-"), &RegionFigures::total}}) {
        if (key.starts_with(prefix)) {
          slot = member;
          region = key.substr(prefix.size());
        }
      }
      if (slot == nullptr || !is_device_local_region(region)) return;
      RegionFigures& figures = regions[std::string(region)];
      figures.*slot = parse_amount(value);
      figures.malformed = figures.malformed || !(figures.*slot);
    }
  });
  if (!is_client) return std::nullopt;
  Bytes sum = 0;
  bool any = false;
  for (const auto& [name, figures] : regions) {
    malformed = malformed || figures.malformed;
    if (auto bytes = figures.best()) {
      if (*bytes > UINT64_MAX - sum) malformed = true;
      sum += *bytes;
      any = true;
    }
  }
  if (!any && legacy_vram) {
    sum = *legacy_vram;
    any = true;
  }
  if (any && !malformed) client.vram = sum;
  return client;
}

}  // namespace gpuclean::procfs
