#include "core_binding.h"

#include <hwloc.h>

#include <climits>
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

/// This process's units of `type` (cores, or CPUs): each one's CPUs that it
/// may run on, in order.
std::vector<Bitmap> usable(hwloc_topology_t topology, hwloc_obj_type_t type) {
  Bitmap allowed(hwloc_bitmap_alloc());
  if (hwloc_get_cpubind(topology, allowed.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    hwloc_bitmap_copy(allowed.get(), hwloc_topology_get_allowed_cpuset(topology));
  }
  std::vector<Bitmap> units;
  const int n = hwloc_get_nbobjs_by_type(topology, type);
  for (int i = 0; i < n; ++i) {
    const hwloc_obj_t unit = hwloc_get_obj_by_type(topology, type, static_cast<unsigned>(i));
    Bitmap cpus(hwloc_bitmap_alloc());
    hwloc_bitmap_and(cpus.get(), unit->cpuset, allowed.get());
    if (!hwloc_bitmap_iszero(cpus.get())) units.push_back(std::move(cpus));
  }
  return units;
}

CpuMask maskOf(hwloc_const_bitmap_t set) {
  constexpr unsigned kBits = sizeof(unsigned long) * CHAR_BIT;
  CpuMask mask(static_cast<size_t>(hwloc_bitmap_last(set)) / kBits + 1, 0);
  unsigned cpu = 0;
  hwloc_bitmap_foreach_begin(cpu, set) { mask[cpu / kBits] |= 1UL << (cpu % kBits); }
  hwloc_bitmap_foreach_end();
  return mask;
}

}  // namespace

std::optional<Binding> bindingNamed(std::string_view word) {
  if (word == "auto") return Binding::Auto;
  if (word == "core") return Binding::Core;
  if (word == "none") return Binding::None;
  return std::nullopt;
}

std::vector<CpuMask> rankCpus(Binding binding, int nranks) {
  if (binding == Binding::None) return {};
  const Topology topology = loadTopology();
  const auto ranks = static_cast<size_t>(nranks);
  std::vector<Bitmap> units = usable(topology.get(), HWLOC_OBJ_CORE);
  if (units.size() < ranks) units = usable(topology.get(), HWLOC_OBJ_PU);
  if (units.size() < ranks) {
    if (binding == Binding::Auto) return {};
    throw std::invalid_argument("--bind-to core: " + std::to_string(nranks) + " ranks but only " +
                                std::to_string(units.size()) + " CPUs to run on");
  }
  const size_t share = units.size() / ranks;
  std::vector<CpuMask> masks;
  Bitmap set(hwloc_bitmap_alloc());
  for (size_t i = 0; i < ranks; ++i) {
    hwloc_bitmap_zero(set.get());
    for (size_t u = i * share; u < (i + 1) * share; ++u) {
      hwloc_bitmap_or(set.get(), set.get(), units[u].get());
    }
    masks.push_back(maskOf(set.get()));
  }
  return masks;
}

}  // namespace loomrun
