// loom-topo: shows the machine Loom sees (or a topology file), the rings and
// trees it would build, and estimates collectives at scale on paper.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "scaling_json.h"
#include "search_report.h"
#include "tools/loom-topo/topology_print.h"
#include "tools/simulate/scaling_table.h"
#include "topology/detect.h"
#include "topology/topo_file.h"

namespace {

struct Options {
  std::string file;
  bool dump = false;
  bool json = false;
  std::string simulate;
  size_t bytes = size_t{1} << 30;
  std::vector<int> ranks;
  int check = 0;
};

loom::Collective collectiveNamed(const std::string& name) {
  if (name == "allreduce") return loom::Collective::AllReduce;
  if (name == "allgather") return loom::Collective::AllGather;
  if (name == "reducescatter") return loom::Collective::ReduceScatter;
  loom::raise(loom::ErrorCode::InvalidArgument,
              "--simulate '{}': the model covers allreduce, allgather and reducescatter", name);
}

loom::topo::Topology load(const Options& o) {
  if (!o.file.empty()) return loom::topo::loadTopologyFile(o.file);
  loom::topo::DetectReport report;
  loom::topo::Topology t = loom::topo::detectTopology(&report);
  if (!o.dump && !o.json) {
    for (const std::string& note : report.notes) std::cout << "# " << note << "\n";
  }
  return t;
}

int run(const Options& o) {
  const loom::topo::Topology t = load(o);
  if (o.dump) {
    std::cout << loom::topo::saveTopologyXml(t);
    return 0;
  }
  if (!o.simulate.empty()) {
    loom::tuner::ScalingOptions s;
    s.collective = collectiveNamed(o.simulate);
    s.bytes = o.bytes;
    if (!o.ranks.empty()) {
      s.rankCounts = o.ranks;
    } else {
      // The default sizes this file cannot place give way to the whole file.
      const std::vector<int> asked = s.rankCounts;
      s.rankCounts = loom::tuner::placeableRankCounts(t, asked);
      if (s.rankCounts != asked && !o.json) {
        std::cout << "# one host of " << s.rankCounts.back()
                  << " GPU(s): world sizes up to it (a file of two or more hosts scales beyond; "
                     "--ranks picks sizes)\n";
      }
    }
    s.simulateUpTo = o.check;
    const auto rows = loom::tuner::scalingTable(t, s);
    if (o.json) {
      loomtopo::printScalingJson(std::cout, t.source, rows, s);
      return 0;
    }
    std::cout << "# " << t.source << "\n";
    loom::tuner::printScalingTable(std::cout, rows, s);
    return 0;
  }
  if (o.json) {
    loom::topo::printTopologyJson(std::cout, t);
    std::cout << "\n";
    return 0;
  }
  loom::topo::printSummaryTree(std::cout, t);
  std::cout << "\n";
  loom::topo::printPathMatrix(std::cout, t);
  std::cout << "\n";
  loomtopo::printSearch(std::cout, t);
  return 0;
}

}  // namespace

// Only CLI11's option setup can throw out of main: a programming error, found at once.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  Options o;
  CLI::App app{"Show the topology Loom sees, its rings and trees; estimate collectives at scale.",
               "loom-topo"};
  app.add_option("--file", o.file, "topology file (XML, docs/topology.md) instead of detection")
      ->check(CLI::ExistingFile);
  app.add_flag("--dump", o.dump, "write the topology as XML to stdout");
  app.add_flag("--json", o.json,
               "print the topology and its path matrix as JSON (with --simulate: the table)");
  app.add_option("--simulate", o.simulate,
                 "estimate a collective (allreduce, allgather, reducescatter) per world size");
  app.add_option("--bytes", o.bytes, "message size for --simulate, e.g. 1G, 64K (default 1G)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--ranks", o.ranks, "world sizes for --simulate (default 8,16,...,1024)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--check", o.check,
                 "also run the timed plan simulator for world sizes up to this (slow)");
  app.footer("See docs/tuner.md and docs/scaling.md.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-topo: %s\n", e.what());
    return 1;
  }
}
