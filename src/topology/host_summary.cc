#include "topology/host_summary.h"

#include <hwloc.h>

#include "core/error.h"

namespace loom {

std::string HostSummary::toString() const {
  return fmt::format("{} package(s), {} NUMA node(s), {} core(s), {} hardware thread(s)", packages,
                     numaNodes, cores, processingUnits);
}

HostSummary detectHostSummary() {
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) raiseErrno("hwloc_topology_init");
  if (hwloc_topology_load(topology) != 0) {
    hwloc_topology_destroy(topology);
    raiseErrno("hwloc_topology_load");
  }
  auto count = [&](hwloc_obj_type_t type) {
    const int n = hwloc_get_nbobjs_by_type(topology, type);
    return n < 0 ? 0 : n;
  };
  HostSummary s;
  s.packages = count(HWLOC_OBJ_PACKAGE);
  s.numaNodes = count(HWLOC_OBJ_NUMANODE);
  s.cores = count(HWLOC_OBJ_CORE);
  s.processingUnits = count(HWLOC_OBJ_PU);
  hwloc_topology_destroy(topology);
  return s;
}

}  // namespace loom
