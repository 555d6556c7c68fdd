// NCCL_SOCKET_IFNAME names interfaces by prefix ("eth" matches eth0), exactly
// with '=' ("=eth0"), as a comma-separated list, or excludes with '^'. Loom's
// LOOM_SOCKET_IFNAME names one interface exactly.
#pragma once

#include <optional>
#include <string>

namespace loom_nccl {

/// The interface LOOM_SOCKET_IFNAME should name for NCCL_SOCKET_IFNAME=`value`:
/// the first up interface with an address that matches the first entry of the
/// list that matches any. With no match, the first entry as written, so that
/// Loom fails naming it rather than silently using another interface. nullopt
/// for an exclusion list ("^docker"), which Loom cannot express.
std::optional<std::string> interfaceFor(const std::string& value);

}  // namespace loom_nccl
