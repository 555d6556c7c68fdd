// The `loom-topo --simulate` table: for each world size, every modelled
// candidate's predicted time and bus bandwidth on one topology file, plus the
// tuner's pick. World sizes up to the file's GPUs use the file's own ranks
// (the first n GPUs, host by host); larger ones replicate the file's hosts on
// paper (replicateHosts), which needs a file of two or more equal hosts.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "topology/graph.h"
#include "tuner/tuner.h"

namespace loom::tuner {

struct ScalingRow {
  int ranks = 0;
  int hosts = 0;
  int channels = 0;                ///< ring channels found
  std::vector<Choice> candidates;  ///< model times
  Choice pick;                     ///< the tuner's choice
  std::vector<double> simulated;   ///< per candidate when asked for, else empty
};

struct ScalingOptions {
  Collective collective = Collective::AllReduce;
  size_t bytes = size_t{1} << 30;
  std::vector<int> rankCounts = {8, 16, 32, 64, 128, 256, 512, 1024};
  size_t maxChunkBytes = size_t{256} << 10;
  /// Also run the timed simulator for world sizes up to this (0: never).
  int simulateUpTo = 0;
};

/// One row per rank count. Throws Error(InvalidArgument) for a rank count the
/// file cannot provide (more ranks than GPUs on a one-host file, or not a
/// multiple of the ranks per host when replicating), saying which it can.
std::vector<ScalingRow> scalingTable(const topo::Topology& topology, const ScalingOptions& options);

/// The world sizes among `counts` that `topology` can place: up to its own
/// GPUs, and beyond that (files of two or more hosts) multiples of a host's
/// ranks. On a one-host file the file's own GPU count is added when some
/// asked size exceeded it, so the table still ends at the whole machine.
std::vector<int> placeableRankCounts(const topo::Topology& topology,
                                     const std::vector<int>& counts);

/// Bus bandwidth in GB/s as nccl-tests reports it: all-reduce moves
/// 2(n-1)/n of the data over each rank's busiest link, all-gather and
/// reduce-scatter (n-1)/n of the n * bytes they gather or scatter.
double busBandwidth(Collective collective, size_t bytes, int ranks, double microseconds);

/// "Ringx3" for a ring on 3 channels, the algorithm's name otherwise.
std::string candidateName(const Candidate& candidate);

/// Prints the rows as an aligned table, one line per rank count.
void printScalingTable(std::ostream& out, const std::vector<ScalingRow>& rows,
                       const ScalingOptions& options);

}  // namespace loom::tuner
