// Topology files: the XML format documented in docs/topology.md. Loading
// validates (validateTopology) and reports errors with the element and line;
// saving writes a file that loads back to an equal Topology.
#pragma once

#include <string>

#include "topology/graph.h"

namespace loom::topo {

/// Parses XML text. `sourceName` names the input in error messages. Throws
/// Error(InvalidArgument) "<sourceName>:<line>: <element>: <problem>" on any
/// malformed, unknown or inconsistent content. Bounded: inputs over 64 MiB or
/// 10^6 elements are rejected before building the graph.
Topology parseTopologyXml(const std::string& text, const std::string& sourceName);

/// Reads and parses a file. Throws Error(InvalidArgument) when it cannot be read.
Topology loadTopologyFile(const std::string& path);

/// Serialises; parseTopologyXml(saveTopologyXml(t)) == t field by field.
std::string saveTopologyXml(const Topology& topology);

/// Field-by-field equality (for round-trip tests and tools).
bool sameTopology(const Topology& a, const Topology& b);

}  // namespace loom::topo
