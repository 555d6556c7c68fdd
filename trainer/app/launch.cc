#include "app/launch.h"

#include <cstdlib>
#include <string>

namespace loom::train {
namespace {

// The rank variables of the launchers loomCommInitFromEnv understands (docs/launching.md).
constexpr const char* kRankVariables[] = {"LOOM_RANK", "OMPI_COMM_WORLD_RANK", "RANK",
                                          "SLURM_PROCID", "PMI_RANK"};

const char* launcherRank() {
  for (const char* name : kRankVariables) {
    if (const char* value = std::getenv(name)) return value;
  }
  return nullptr;
}

}  // namespace

bool startedByLauncher() { return launcherRank() != nullptr; }

bool launcherRankIsZero() {
  const char* rank = launcherRank();
  return rank == nullptr || std::string(rank) == "0";
}

loom::Comm joinWorld() {
  if (launcherRank() != nullptr) return loom::Comm::fromEnv();
  std::vector<loom::Comm> one = loom::Comm::initAll(1);
  return std::move(one.front());
}

}  // namespace loom::train
