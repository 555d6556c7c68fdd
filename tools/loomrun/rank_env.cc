#include "rank_env.h"

#include <array>
#include <string_view>

namespace loomrun {

namespace {

// Set for every rank; an inherited value (say, loomrun started from inside
// another loomrun job) must never leak through and contradict ours.
constexpr std::array<std::string_view, 5> kOwned = {
    "LOOM_RANK", "LOOM_WORLD_SIZE", "LOOM_LOCAL_RANK", "LOOM_LOCAL_SIZE", "LOOM_UNIQUE_ID"};

std::string_view nameOf(std::string_view entry) { return entry.substr(0, entry.find('=')); }

bool owned(std::string_view name) {
  for (const auto owned : kOwned) {
    if (name == owned) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> buildRankEnvironment(const char* const* base, int rank,
                                              const JobIdentity& job) {
  std::vector<std::string> env;
  bool haveJobId = false;
  for (const char* const* entry = base; entry && *entry; ++entry) {
    const std::string_view name = nameOf(*entry);
    if (owned(name)) continue;
    if (name == "LOOM_JOB_ID") haveJobId = true;
    env.emplace_back(*entry);
  }
  // One machine: the local rank is the rank and the local size is the world.
  env.push_back("LOOM_RANK=" + std::to_string(rank));
  env.push_back("LOOM_WORLD_SIZE=" + std::to_string(job.worldSize));
  env.push_back("LOOM_LOCAL_RANK=" + std::to_string(rank));
  env.push_back("LOOM_LOCAL_SIZE=" + std::to_string(job.worldSize));
  env.push_back("LOOM_UNIQUE_ID=" + job.uniqueIdHex);
  // Ranks otherwise key the job on getppid(), which differs per rank when the
  // program is wrapped (`sh -c prog`); an explicit key is the same everywhere.
  if (!haveJobId && !job.jobId.empty()) env.push_back("LOOM_JOB_ID=" + job.jobId);
  return env;
}

}  // namespace loomrun
