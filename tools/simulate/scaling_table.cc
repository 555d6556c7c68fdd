#include "tools/simulate/scaling_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <ostream>

#include "core/error.h"
#include "tools/simulate/plan_timing.h"

namespace loom::tuner {

std::string candidateName(const Candidate& c) {
  if (c.algorithm != Algorithm::Ring) return toString(c.algorithm);
  return fmt::format("{}x{}", toString(c.algorithm), c.channels);
}

namespace {

std::string formatTime(double us) {
  if (std::isnan(us)) return "-";
  if (us >= 1e6) return fmt::format("{:.3f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.2f} ms", us / 1e3);
  return fmt::format("{:.1f} us", us);
}

// The file's machine with `ranks` ranks: its own GPUs while it has enough,
// else host 0 copied as often as needed.
class Machines {
 public:
  explicit Machines(const topo::Topology& t) : t_(t) {
    const size_t gpus = t.nodesOfKind(topo::NodeKind::Gpu).size();
    capacity_ = static_cast<int>(gpus);
  }

  TunerTopology at(int ranks) {
    if (ranks <= capacity_ || capacity_ == 0) {
      return tunerTopologyFor(t_, topo::defaultRankNodes(t_, ranks));
    }
    if (!fits(ranks)) {
      raise(ErrorCode::InvalidArgument,
            "{} ranks: '{}' has {} GPU(s) on {} host(s); it places up to {} ranks{} "
            "(--ranks picks the world sizes)",
            ranks, t_.source, capacity_, whole().hostCount(), capacity_,
            whole().hostCount() < 2 ? ", and a file of two or more hosts scales beyond"
                                    : fmt::format(", and beyond that multiples of {}", perHost()));
    }
    if (rings_.empty()) rings_ = topo::searchRings(whole());
    return replicateHosts(whole(), rings_, ranks / perHost());
  }

  /// Whether `ranks` can be placed: the file's own GPUs, or whole copies of
  /// its hosts (two or more of them).
  bool fits(int ranks) {
    if (ranks <= capacity_ || capacity_ == 0) return true;
    return whole().hostCount() >= 2 && perHost() > 0 && ranks % perHost() == 0;
  }
  int capacity() const { return capacity_; }

 private:
  /// Every GPU of the file as a rank (built once, on first need).
  const topo::RankGraph& whole() {
    if (!whole_) whole_.emplace(t_, topo::defaultRankNodes(t_), loomHopOptions());
    return *whole_;
  }
  int perHost() { return static_cast<int>(whole().ranksOn(0).size()); }

  const topo::Topology& t_;
  int capacity_ = 0;
  std::optional<topo::RankGraph> whole_;
  std::vector<topo::Ring> rings_;
};

}  // namespace

std::vector<int> placeableRankCounts(const topo::Topology& topology,
                                     const std::vector<int>& counts) {
  Machines machines(topology);
  std::vector<int> fitting;
  bool dropped = false;
  for (const int ranks : counts) {
    if (machines.fits(ranks)) {
      fitting.push_back(ranks);
    } else {
      dropped = true;
    }
  }
  const int whole = machines.capacity();
  if (dropped && whole > 0 && std::find(fitting.begin(), fitting.end(), whole) == fitting.end()) {
    fitting.push_back(whole);
    std::sort(fitting.begin(), fitting.end());
  }
  return fitting;
}

double busBandwidth(Collective collective, size_t bytes, int ranks, double microseconds) {
  if (!(microseconds > 0) || ranks < 1) return 0;
  const double n = ranks;
  switch (collective) {
    case Collective::AllReduce:
      return static_cast<double>(bytes) / (microseconds * 1e3) * 2 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return static_cast<double>(bytes) * n / (microseconds * 1e3) * (n - 1) / n;
    default:
      return static_cast<double>(bytes) / (microseconds * 1e3);
  }
}

std::vector<ScalingRow> scalingTable(const topo::Topology& topology,
                                     const ScalingOptions& options) {
  Machines machines(topology);
  std::vector<ScalingRow> rows;
  for (int ranks : options.rankCounts) {
    const TunerTopology t = machines.at(ranks);
    Request req;
    req.collective = options.collective;
    req.bytes = options.bytes;
    req.maxChunkBytes = options.maxChunkBytes;
    ScalingRow row;
    row.ranks = ranks;
    row.hosts = t.hosts;
    row.channels = t.maxChannels();
    row.candidates = modelledCandidates(t, req);
    row.pick = choose(t, req);
    if (ranks <= options.simulateUpTo) {
      for (const Choice& c : row.candidates) {
        row.simulated.push_back(
            simulateCandidate(t, req.collective, req.bytes, c.candidate).microseconds);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void printScalingTable(std::ostream& out, const std::vector<ScalingRow>& rows,
                       const ScalingOptions& options) {
  out << fmt::format("# {} of {} bytes; time and busbw (GB/s) per candidate (model{})\n",
                     toString(options.collective), options.bytes,
                     options.simulateUpTo > 0 ? "; sim: timed plan simulation" : "");
  for (const ScalingRow& row : rows) {
    out << fmt::format("{:>6} ranks {:>4} host(s):", row.ranks, row.hosts);
    for (size_t i = 0; i < row.candidates.size(); ++i) {
      const Choice& c = row.candidates[i];
      out << fmt::format(
          "  {} {} ({:.3g})", candidateName(c.candidate), formatTime(c.microseconds),
          busBandwidth(options.collective, options.bytes, row.ranks, c.microseconds));
      if (i < row.simulated.size()) out << fmt::format(" [sim {}]", formatTime(row.simulated[i]));
    }
    out << fmt::format("  -> {}, chunk {} B\n", candidateName(row.pick.candidate),
                       row.pick.candidate.chunkBytes);
  }
}

}  // namespace loom::tuner
