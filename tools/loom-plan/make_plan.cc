#include "make_plan.h"

#include "core/error.h"
#include "topology/detect.h"
#include "topology/topo_file.h"

namespace loom::plan {

PlanResult makePlan(const PlannerOptions& o) {
  const topo::Topology topology =
      o.topoFile.empty() ? topo::detectTopology() : topo::loadTopologyFile(o.topoFile);
  int gpus = o.gpus;
  if (gpus == 0) gpus = static_cast<int>(topo::defaultRankNodes(topology).size());
  RankPlacement placement(topology, gpus);

  PlanResult plan;
  plan.model = o.model;
  plan.topology = o.topoFile.empty() ? "this machine (detected)" : topology.source;
  plan.gpus = gpus;
  plan.hardware = o.hardware;
  plan.ranked = rankLayouts(o.model, enumerateLayouts(o.model, gpus, o.limits), o.hardware, o.comm,
                            placement);
  if (o.layout) {
    const std::string why = whyInvalid(o.model, gpus, *o.layout);
    if (!why.empty()) raise(ErrorCode::InvalidArgument, "--layout {}: {}", o.layout->label(), why);
    plan.asked = predict(o.model, *o.layout, o.hardware, o.comm, placement);
    for (size_t i = 0; i < plan.ranked.size(); ++i) {
      if (plan.ranked[i].layout.label() == o.layout->label()) {
        plan.askedPlace = static_cast<int>(i) + 1;
      }
    }
  }
  return plan;
}

}  // namespace loom::plan
