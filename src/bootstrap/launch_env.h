// Reading the world from the launcher's environment: loomrun, OpenMPI, PMI,
// Slurm, torchrun. See docs/launching.md.
#pragma once

#include <optional>
#include <string>

#include "bootstrap/unique_id.h"

namespace loom {

struct LaunchEnv {
  std::string launcher;  // "loomrun", "openmpi", "pmi", "slurm", "torchrun"; "none": one rank
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  int localSize = 1;
  /// The id when the launcher passed one (LOOM_UNIQUE_ID); otherwise rendezvous
  /// details the ranks can all derive (see resolveUniqueId).
  std::optional<UniqueId> id;
  std::string masterHost;  // torchrun MASTER_ADDR, or LOOM_COMM_ID host
  int masterPort = 0;
  std::string jobKey;  // stable per job (OMPI jobid, SLURM_JOB_ID.STEP, ...)
  /// False when jobKey is a per-process fallback (loomrun-style variables
  /// without LOOM_JOB_ID, ranks started by hand around LOOM_COMM_ID): then it
  /// cannot name the job in the handshake.
  bool jobKeyShared = true;
};

/// The launcher's rank, world and job; with no launcher environment, a world
/// of one rank (launcher "none", logged at INFO). Throws InvalidArgument when
/// values are inconsistent.
LaunchEnv detectLaunchEnv();

/// The id every rank of `env` agrees on. With LOOM_UNIQUE_ID it is that.
/// Otherwise rank 0 starts the rendezvous server at a derived address
/// (MASTER_ADDR:MASTER_PORT+1 / LOOM_COMM_ID / loopback and a port derived from
/// the job key) with a secret derived from LOOM_SECRET or the job key, and the
/// other ranks compute the same id.
UniqueId resolveUniqueId(const LaunchEnv& env);

}  // namespace loom
