// What hwloc says about this host, in brief. The full topology model (GPUs,
// NICs, PCIe tree, path classes) is the topology issue's; this is the part the
// communicator logs at init and that placement decisions can start from.
#pragma once

#include <string>

namespace loom {

struct HostSummary {
  int packages = 0;
  int numaNodes = 0;
  int cores = 0;
  int processingUnits = 0;

  std::string toString() const;
};

/// Reads the machine with hwloc. Throws SystemError if hwloc cannot load it.
HostSummary detectHostSummary();

}  // namespace loom
