// Which CPUs each rank may run on. Ranks that spin for each other must not
// share a core: two ranks that the scheduler happened to start on one core
// take turns (each spins, then yields the core to the other), and the load
// balancer leaves them there, since each ran a moment ago and looks cache-hot.
// On a 2-core VM an 8-byte all-reduce then took 8.6-12 us a call instead of
// 0.2-0.3 in about one short run of three. mpirun binds each rank to a core
// by default for the same reason; so does loomrun (a share of the cores
// each, where there are more cores than ranks).
#pragma once

#include <sched.h>

#include <optional>
#include <string_view>
#include <vector>

namespace loomrun {

/// --bind-to: `core` gives each rank cores of its own, an equal share in
/// order (so a rank's own threads keep cores to run on: 2 ranks on 16 cores
/// get 8 each); `none` leaves placement to the scheduler; `auto` binds where
/// every rank gets a core, and not where ranks outnumber cores (then binding
/// would only stack them up).
enum class Binding { Auto, Core, None };

std::optional<Binding> bindingNamed(std::string_view word);

/// Rank i's CPUs at [i], or nothing where ranks are not bound. Rank i gets
/// cores [i * k, (i + 1) * k) for k = cores / nranks. A core is one of this
/// process's (its CPU affinity, as taskset or a cgroup set it), with
/// only the CPUs of it that this process may use. Throws
/// std::invalid_argument where `core` is asked for more ranks than there are
/// cores, std::runtime_error where hwloc cannot read the machine.
std::vector<cpu_set_t> rankCpus(Binding binding, int nranks);

}  // namespace loomrun
