// simulateCollective: lays out each rank's buffers the way the C API's
// pointers do (including the in-place layouts), runs the plans, and reads the
// outputs back.
#include <algorithm>
#include <cmath>

#include "collectives/algorithms.h"
#include "core/error.h"
#include "tools/simulate/simulator.h"

namespace loom {
namespace {

// Separate input and output; output starts as NaN, so unwritten elements show.
SimBuffers separate(const std::vector<double>& input, size_t outputElements) {
  SimBuffers b;
  b.memory = input;
  b.memory.resize(input.size() + outputElements, std::nan(""));
  b.inputElements = input.size();
  b.outputOffset = input.size();
  b.outputElements = outputElements;
  return b;
}

// The input sits inside a larger output (AllGather, Gather at the root).
SimBuffers inputInsideOutput(const std::vector<double>& input, size_t outputElements,
                             size_t offset) {
  SimBuffers b;
  b.memory.assign(outputElements, std::nan(""));
  std::copy(input.begin(), input.end(), b.memory.begin() + static_cast<ptrdiff_t>(offset));
  b.inputOffset = offset;
  b.inputElements = input.size();
  b.outputElements = outputElements;
  return b;
}

// The output sits inside the input (ReduceScatter, Scatter at the root), or
// coincides with it (offset 0, equal sizes).
SimBuffers outputInsideInput(const std::vector<double>& input, size_t outputElements,
                             size_t offset) {
  SimBuffers b;
  b.memory = input;
  b.inputElements = input.size();
  b.outputOffset = offset;
  b.outputElements = outputElements;
  return b;
}

SimBuffers inPlaceLayout(const SimCollective& call, int rank, const std::vector<double>& input,
                         size_t outputElements) {
  const bool isRoot = rank == call.root;
  const size_t own = static_cast<size_t>(rank) * call.count;
  switch (call.collective) {
    case Collective::AllReduce:
    case Collective::AllToAll:
      return outputInsideInput(input, outputElements, 0);
    case Collective::AllGather:
      return inputInsideOutput(input, outputElements, own);
    case Collective::ReduceScatter:
      return outputInsideInput(input, outputElements, own);
    case Collective::Broadcast:
    case Collective::Reduce:
      if (isRoot) return outputInsideInput(input, outputElements, 0);
      break;
    case Collective::Gather:
      if (isRoot) return inputInsideOutput(input, outputElements, own);
      break;
    case Collective::Scatter:
      if (isRoot) return outputInsideInput(input, outputElements, own);
      break;
    case Collective::Send:
    case Collective::Recv:
      break;
  }
  // Ranks whose buffers play no in-place role keep them apart.
  return separate(input, outputElements);
}

// The same contents as an aliased in-place layout, in two distinct ranges.
SimBuffers unalias(const SimBuffers& b) {
  SimBuffers split;
  auto begin = b.memory.begin();
  split.memory.assign(begin + static_cast<ptrdiff_t>(b.inputOffset),
                      begin + static_cast<ptrdiff_t>(b.inputOffset + b.inputElements));
  split.memory.insert(split.memory.end(), begin + static_cast<ptrdiff_t>(b.outputOffset),
                      begin + static_cast<ptrdiff_t>(b.outputOffset + b.outputElements));
  split.inputElements = b.inputElements;
  split.outputOffset = b.inputElements;
  split.outputElements = b.outputElements;
  return split;
}

// Hierarchical all-reduce runs as phases, one after the other; everything
// else is one plan.
std::vector<RankPlan> phasesOf(const SimCollective& call, const PlanRequest& req,
                               const SimOptions& options) {
  if (call.algorithm == Algorithm::Hierarchical && call.collective == Collective::AllReduce) {
    return hierarchicalAllReduce(options.hosts, req.rank, req.count, req.channels);
  }
  if (call.algorithm == Algorithm::HostTree && call.collective == Collective::AllReduce) {
    return hostTreeAllReduce(options.hosts, req.rank, req.count, req.inPlace);
  }
  std::vector<RankPlan> one;
  one.push_back(makePlan(req));
  return one;
}

void accumulate(SimStats& total, const SimStats& phase) {
  if (total.messagesSent.empty()) {
    total = phase;
    return;
  }
  for (size_t r = 0; r < phase.messagesSent.size(); ++r) {
    total.messagesSent[r] += phase.messagesSent[r];
    total.elementsSent[r] += phase.elementsSent[r];
  }
  total.maxSteps = std::max(total.maxSteps, phase.maxSteps);
  total.rounds += phase.rounds;
}

}  // namespace

SimResult simulateCollective(const SimCollective& call,
                             const std::vector<std::vector<double>>& inputs,
                             const SimOptions& options) {
  if (call.collective == Collective::Send || call.collective == Collective::Recv) {
    raise(ErrorCode::InvalidArgument, "simulate {} with simulatePlans: it needs a partner",
          toString(call.collective));
  }
  if (call.nranks < 1 || inputs.size() != static_cast<size_t>(call.nranks)) {
    raise(ErrorCode::InvalidArgument, "{} inputs for {} ranks", inputs.size(), call.nranks);
  }
  std::vector<std::vector<SimJob>> jobs(inputs.size());
  std::vector<std::vector<RankPlan>> phases(inputs.size());
  for (int r = 0; r < call.nranks; ++r) {
    PlanRequest req;
    req.collective = call.collective;
    req.algorithm = call.algorithm;
    req.rank = r;
    req.nranks = call.nranks;
    req.root = call.root;
    req.count = call.count;
    req.inPlace = call.inPlace;
    req.channels = call.channels;
    SimJob job;
    phases[r] = phasesOf(call, req, options);
    const size_t inputCount = inputElements(call.collective, call.count, call.nranks, r, call.root);
    const size_t outputCount =
        outputElements(call.collective, call.count, call.nranks, r, call.root);
    if (inputs[r].size() != inputCount) {
      raise(ErrorCode::InvalidArgument, "{} on rank {} needs {} input elements, got {}",
            toString(call.collective), r, inputCount, inputs[r].size());
    }
    if (!call.inPlace) {
      job.buffers = separate(inputs[r], outputCount);
    } else {
      job.buffers = inPlaceLayout(call, r, inputs[r], outputCount);
      if (!options.aliasInPlace) job.buffers = unalias(job.buffers);
    }
    jobs[r].push_back(std::move(job));
  }
  SimResult result;
  for (size_t phase = 0; phase < phases[0].size(); ++phase) {
    for (size_t r = 0; r < jobs.size(); ++r) jobs[r][0].plan = std::move(phases[r][phase]);
    accumulate(result.stats, simulatePlans(jobs, options));
  }
  for (auto& rankJobs : jobs) {
    const SimBuffers& b = rankJobs[0].buffers;
    auto begin = b.memory.begin() + static_cast<ptrdiff_t>(b.outputOffset);
    result.outputs.emplace_back(begin, begin + static_cast<ptrdiff_t>(b.outputElements));
  }
  return result;
}

}  // namespace loom
