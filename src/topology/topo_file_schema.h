// Element and attribute names of the topology file format (docs/topology.md),
// shared by the reader and the writer so the two cannot drift apart.
#pragma once

namespace loom::topo {

inline constexpr const char* kRootElement = "loom_topology";
inline constexpr const char* kLinkElement = "link";
inline constexpr const char* kFormatVersion = "1";

inline constexpr const char* kVersionAttr = "version";
inline constexpr const char* kSourceAttr = "source";

// Node elements (tag = nodeKindName).
inline constexpr const char* kIdAttr = "id";
inline constexpr const char* kHostAttr = "host";
inline constexpr const char* kNameAttr = "name";
inline constexpr const char* kBusAttr = "bus";
inline constexpr const char* kNumaAttr = "numa";
inline constexpr const char* kCoresAttr = "cores";
inline constexpr const char* kRankAttr = "rank";

// <link>.
inline constexpr const char* kLinkA = "a";
inline constexpr const char* kLinkB = "b";
inline constexpr const char* kKindAttr = "kind";
inline constexpr const char* kBandwidthAttr = "bandwidth";
inline constexpr const char* kLatencyAttr = "latency";
inline constexpr const char* kLanesAttr = "lanes";
inline constexpr const char* kGenerationAttr = "generation";
inline constexpr const char* kBridgeAttr = "bridge";

}  // namespace loom::topo
