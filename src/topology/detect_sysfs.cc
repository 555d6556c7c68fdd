// Small sysfs readers shared by the detection sources.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "topology/detect_parts.h"
#include "topology/graph.h"

namespace loom::topo::detect {

std::optional<std::string> readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  const size_t end = line.find_last_not_of(" \t\r\n");
  line.erase(end == std::string::npos ? 0 : end + 1);
  return line;
}

std::optional<std::string> normalizeBusId(const std::string& text) {
  // domain:bus:device.function in hex; NVML writes an 8-digit domain.
  const size_t colon1 = text.find(':');
  const size_t colon2 = text.find(':', colon1 + 1);
  const size_t dot = text.find('.', colon2 + 1);
  if (colon1 == std::string::npos || colon2 == std::string::npos || dot == std::string::npos) {
    return std::nullopt;
  }
  auto field = [&](size_t begin, size_t end, size_t minDigits, size_t maxDigits,
                   unsigned limit) -> std::optional<unsigned> {
    const size_t digits = end - begin;
    if (digits < minDigits || digits > maxDigits) return std::nullopt;
    unsigned value = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + begin, text.data() + end, value, 16);
    if (ec != std::errc() || ptr != text.data() + end || value > limit) return std::nullopt;
    return value;
  };
  const auto domain = field(0, colon1, 4, 8, 0xffff);
  const auto bus = field(colon1 + 1, colon2, 2, 2, 0xff);
  const auto device = field(colon2 + 1, dot, 2, 2, 0x1f);
  const auto function = field(dot + 1, text.size(), 1, 1, 7);
  if (!domain || !bus || !device || !function) return std::nullopt;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", *domain, *bus, *device, *function);
}

std::optional<std::string> pciAddressOfSysfsPath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path real = std::filesystem::canonical(path, error);
  if (error) return std::nullopt;
  std::optional<std::string> last;
  for (const auto& part : real) {
    if (auto bus = normalizeBusId(part.string())) last = bus;
  }
  return last;
}

int pciNumaNode(const std::string& busId) {
  const auto text = readLine("/sys/bus/pci/devices/" + busId + "/numa_node");
  if (!text) return -1;
  try {
    return std::max(-1, std::stoi(*text));
  } catch (const std::exception&) {
    return -1;
  }
}

PciLink pciCurrentLink(const std::string& busId) {
  PciLink link;
  const std::string base = "/sys/bus/pci/devices/" + busId + "/";
  const auto speed = readLine(base + "current_link_speed");  // "16.0 GT/s PCIe"
  const auto width = readLine(base + "current_link_width");  // "16"
  if (!speed || !width) return link;
  double gts = 0;
  int lanes = 0;
  if (std::sscanf(speed->c_str(), "%lf", &gts) != 1 ||
      std::sscanf(width->c_str(), "%d", &lanes) != 1) {
    return link;
  }
  // Transfer rate per generation: 2.5, 5, 8, 16, 32, 64 GT/s.
  const double rates[] = {2.5, 5, 8, 16, 32, 64};
  for (int gen = 1; gen <= 6; ++gen) {
    if (gts == rates[gen - 1] && lanes >= 1 && lanes <= 32) {
      link.generation = gen;
      link.width = lanes;
      link.bandwidth = pcieBandwidth(gen, lanes);
    }
  }
  return link;
}

}  // namespace loom::topo::detect
