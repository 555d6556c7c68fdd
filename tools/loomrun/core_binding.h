// Which CPUs each rank may run on. Ranks that spin for each other must not
// share a CPU: two ranks that the scheduler happened to start on one take
// turns (each spins, then yields it to the other), and the load balancer
// leaves them there, since each ran a moment ago and looks cache-hot. On a
// 2-core VM an unbound 8-byte all-reduce then took 8.6-12 us a call instead
// of 0.2-0.6 in 3 of 15 short runs. mpirun binds each rank (to a core for up
// to two ranks) for the same reason; loomrun gives each rank an equal share
// of the cores.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace loomrun {

/// --bind-to: `core` gives each rank cores of its own, an equal share in
/// order (so a rank's own threads keep cores to run on: 2 ranks on 16 cores
/// get 8 each), or a CPU of its own where ranks outnumber cores but not CPUs
/// (hardware threads); `none` leaves placement to the scheduler; `auto`
/// binds as `core` does where it can, and not where ranks outnumber CPUs
/// (then binding would only stack them up).
enum class Binding { Auto, Core, None };

std::optional<Binding> bindingNamed(std::string_view word);

/// A CPU set as sched_setaffinity takes it, sized to its highest CPU (so a
/// machine past CPU_SETSIZE, 1024 CPUs, is no exception).
using CpuMask = std::vector<unsigned long>;

/// Rank i's CPUs at [i], or nothing where ranks are not bound. Rank i gets
/// units [i * k, (i + 1) * k) for k = units / nranks, a unit being a core
/// (or a CPU, see Binding) with those of its CPUs that this process may use
/// (its CPU affinity, as taskset or a cgroup set it). Throws
/// std::invalid_argument where `core` is asked for more ranks than CPUs,
/// std::runtime_error where hwloc cannot read the machine.
std::vector<CpuMask> rankCpus(Binding binding, int nranks);

}  // namespace loomrun
