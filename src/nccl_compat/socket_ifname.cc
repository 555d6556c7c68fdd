#include "socket_ifname.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <string_view>
#include <vector>

namespace loom_nccl {
namespace {

/// Names of up interfaces with an IPv4 or IPv6 address, in the kernel's order.
std::vector<std::string> addressedInterfaces() {
  std::vector<std::string> names;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return names;
  for (const ifaddrs* itf = list; itf != nullptr; itf = itf->ifa_next) {
    if (itf->ifa_addr == nullptr || (itf->ifa_flags & IFF_UP) == 0) continue;
    const int family = itf->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    bool seen = false;
    for (const auto& name : names) seen = seen || name == itf->ifa_name;
    if (!seen) names.emplace_back(itf->ifa_name);
  }
  freeifaddrs(list);
  return names;
}

std::vector<std::string> splitList(std::string_view list) {
  std::vector<std::string> items;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return items;
}

}  // namespace

std::optional<std::string> interfaceFor(const std::string& value) {
  std::string_view list = value;
  if (list.starts_with('^')) return std::nullopt;
  const bool exact = list.starts_with('=');
  if (exact) list.remove_prefix(1);
  const std::vector<std::string> wanted = splitList(list);
  if (wanted.empty()) return std::nullopt;
  const std::vector<std::string> present = addressedInterfaces();
  for (const auto& entry : wanted) {
    for (const auto& name : present) {
      if (exact ? name == entry : name.starts_with(entry)) return name;
    }
  }
  return wanted.front();
}

}  // namespace loom_nccl
