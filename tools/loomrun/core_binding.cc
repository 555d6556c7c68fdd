#include "core_binding.h"

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace loomrun {

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

Topology loadTopology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw std::runtime_error("hwloc cannot start");
  Topology topology(raw);
  if (hwloc_topology_load(raw) != 0) throw std::runtime_error("hwloc cannot read this machine");
  return topology;
}

/// This process's cores: each core's CPUs that it may run on, in order.
std::vector<Bitmap> usableCores(hwloc_topology_t topology) {
  Bitmap allowed(hwloc_bitmap_alloc());
  if (hwloc_get_cpubind(topology, allowed.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    hwloc_bitmap_copy(allowed.get(), hwloc_topology_get_allowed_cpuset(topology));
  }
  std::vector<Bitmap> cores;
  const int n = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
  for (int i = 0; i < n; ++i) {
    const hwloc_obj_t core =
        hwloc_get_obj_by_type(topology, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    Bitmap usable(hwloc_bitmap_alloc());
    hwloc_bitmap_and(usable.get(), core->cpuset, allowed.get());
    if (!hwloc_bitmap_iszero(usable.get())) cores.push_back(std::move(usable));
  }
  return cores;
}

}  // namespace

std::optional<Binding> bindingNamed(std::string_view word) {
  if (word == "auto") return Binding::Auto;
  if (word == "core") return Binding::Core;
  if (word == "none") return Binding::None;
  return std::nullopt;
}

std::vector<cpu_set_t> rankCpus(Binding binding, int nranks) {
  if (binding == Binding::None) return {};
  const Topology topology = loadTopology();
  const std::vector<Bitmap> cores = usableCores(topology.get());
  if (static_cast<int>(cores.size()) < nranks) {
    if (binding == Binding::Auto) return {};
    throw std::invalid_argument("--bind-to core: " + std::to_string(nranks) + " ranks but only " +
                                std::to_string(cores.size()) + " cores to run on");
  }
  const size_t share = cores.size() / static_cast<size_t>(nranks);
  std::vector<cpu_set_t> cpus(static_cast<size_t>(nranks));
  Bitmap set(hwloc_bitmap_alloc());
  for (size_t i = 0; i < cpus.size(); ++i) {
    hwloc_bitmap_zero(set.get());
    for (size_t c = i * share; c < (i + 1) * share; ++c) {
      hwloc_bitmap_or(set.get(), set.get(), cores[c].get());
    }
    hwloc_cpuset_to_glibc_sched_affinity(topology.get(), set.get(), &cpus[i], sizeof(cpu_set_t));
  }
  return cpus;
}

}  // namespace loomrun
