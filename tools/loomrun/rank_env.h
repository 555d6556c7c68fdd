// The environment each rank starts with: loomrun's own, minus any stale launch
// variables, plus this rank's identity and the job's unique id.
#pragma once

#include <string>
#include <vector>

namespace loomrun {

struct JobIdentity {
  int worldSize = 1;
  std::string uniqueIdHex;  // LOOM_UNIQUE_ID
  std::string jobId;        // LOOM_JOB_ID, used only when the base has none
};

/// `base` is a null-terminated "NAME=value" array such as environ.
std::vector<std::string> buildRankEnvironment(const char* const* base, int rank,
                                              const JobIdentity& job);

}  // namespace loomrun
