// detectLaunchEnv: which launcher started us, and where this process sits.
#include "bootstrap/launch_env.h"

#include <unistd.h>

#include <cctype>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

namespace loom {
namespace {

constexpr long long kMaxWorld = 1 << 20;

bool present(const char* name) { return envString(name).has_value(); }

// Reads a required integer; envInt names the variable when it is malformed.
int requireInt(const char* name, long long min, long long max) {
  if (!present(name)) raise(ErrorCode::InvalidArgument, "{} is not set", name);
  return static_cast<int>(envInt(name, 0, min, max));
}

// The leading integer of a Slurm task-count list such as "4(x2),3".
std::optional<int> leadingInt(const char* name) {
  const auto text = envString(name);
  if (!text || !std::isdigit(static_cast<unsigned char>(text->front()))) return std::nullopt;
  size_t end = 0;
  while (end < text->size() && end < 9 && std::isdigit(static_cast<unsigned char>((*text)[end]))) {
    ++end;
  }
  return std::stoi(text->substr(0, end));
}

std::string firstOf(std::initializer_list<const char*> names, const std::string& fallback) {
  for (const char* name : names) {
    if (auto value = envString(name)) return *value;
  }
  return fallback;
}

// rank/world from a launcher's pair of variables; both or neither must be set.
void readRankAndSize(LaunchEnv& env, const char* rankVar, const char* sizeVar) {
  if (!present(sizeVar)) {
    raise(ErrorCode::InvalidArgument, "{} is set but {} is missing ({} launch)", rankVar, sizeVar,
          env.launcher);
  }
  env.worldSize = requireInt(sizeVar, 1, kMaxWorld);
  env.rank = static_cast<int>(envInt(rankVar, 0, 0, env.worldSize - 1));
}

void readLocal(LaunchEnv& env, const char* rankVar, const char* sizeVar) {
  env.localSize = static_cast<int>(envInt(sizeVar, env.worldSize, 1, env.worldSize));
  env.localRank = static_cast<int>(envInt(rankVar, env.rank % env.localSize, 0, env.localSize - 1));
}

void parseCommId(LaunchEnv& env) {
  const auto commId = envString("LOOM_COMM_ID");
  if (!commId) return;
  // host:port, [v6]:port; the host may be a name (resolved later).
  std::string host;
  std::string port;
  if (commId->front() == '[') {
    const size_t close = commId->find("]:");
    if (close != std::string::npos) {
      host = commId->substr(1, close - 1);
      port = commId->substr(close + 2);
    }
  } else if (const size_t colon = commId->rfind(':'); colon != std::string::npos) {
    host = commId->substr(0, colon);
    port = commId->substr(colon + 1);
  }
  char* end = nullptr;
  const long value = port.empty() ? 0 : std::strtol(port.c_str(), &end, 10);
  if (host.empty() || port.empty() || *end != '\0' || value < 1 || value > 65535) {
    raise(ErrorCode::InvalidArgument, "LOOM_COMM_ID='{}' is not host:port with port in [1, 65535]",
          *commId);
  }
  env.masterHost = host;
  env.masterPort = static_cast<int>(value);
}

}  // namespace

LaunchEnv detectLaunchEnv() {
  LaunchEnv env;
  if (present("LOOM_RANK") || present("LOOM_WORLD_SIZE")) {
    env.launcher = "loomrun";
    readRankAndSize(env, "LOOM_RANK", "LOOM_WORLD_SIZE");
    readLocal(env, "LOOM_LOCAL_RANK", "LOOM_LOCAL_SIZE");
    if (const auto hex = envString("LOOM_UNIQUE_ID")) {
      try {
        env.id = UniqueId::fromHex(*hex);
      } catch (const Error& e) {
        raise(ErrorCode::InvalidArgument, "LOOM_UNIQUE_ID: {}", e.what());
      }
    }
    // loomrun's children share its pid, which keeps concurrent runs apart.
    env.jobKey = firstOf({"LOOM_JOB_ID"}, fmt::format("loomrun.{}", getppid()));
    env.jobKeyShared = present("LOOM_JOB_ID");
  } else if (present("OMPI_COMM_WORLD_RANK")) {
    env.launcher = "openmpi";
    readRankAndSize(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    readLocal(env, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
    env.jobKey = firstOf({"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE"},
                         "openmpi");
  } else if (present("RANK") && present("WORLD_SIZE") &&
             (present("MASTER_ADDR") || present("LOCAL_RANK"))) {
    env.launcher = "torchrun";
    readRankAndSize(env, "RANK", "WORLD_SIZE");
    readLocal(env, "LOCAL_RANK", "LOCAL_WORLD_SIZE");
    env.masterHost = envString("MASTER_ADDR").value_or("");
    // MASTER_PORT is torch's own store; Loom uses the next port.
    env.masterPort = static_cast<int>(envInt("MASTER_PORT", 0, 1, 65534));
    env.jobKey = firstOf({"TORCHELASTIC_RUN_ID"},
                         fmt::format("torchrun.{}:{}", env.masterHost, env.masterPort));
  } else if (present("SLURM_PROCID")) {
    env.launcher = "slurm";
    const char* sizeVar = present("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_STEP_NUM_TASKS";
    readRankAndSize(env, "SLURM_PROCID", sizeVar);
    // Task counts per node look like "4" or "4(x2),3"; heterogeneous layouts
    // only give an upper bound here.
    std::optional<int> local = leadingInt("SLURM_NTASKS_PER_NODE");
    if (!local) local = leadingInt("SLURM_STEP_TASKS_PER_NODE");
    if (!local) local = leadingInt("SLURM_TASKS_PER_NODE");
    env.localSize = local.value_or(1);
    if (env.localSize < 1 || env.localSize > env.worldSize) {
      raise(ErrorCode::InvalidArgument, "Slurm tasks per node {} is not in [1, {}]", env.localSize,
            env.worldSize);
    }
    env.localRank = static_cast<int>(envInt("SLURM_LOCALID", 0, 0, env.localSize - 1));
    env.jobKey = fmt::format("slurm.{}.{}", firstOf({"SLURM_JOB_ID", "SLURM_JOBID"}, "0"),
                             firstOf({"SLURM_STEP_ID", "SLURM_STEPID"}, "0"));
  } else if (present("PMI_RANK")) {
    env.launcher = "pmi";
    readRankAndSize(env, "PMI_RANK", "PMI_SIZE");
    readLocal(env, "MPI_LOCALRANKID", "MPI_LOCALNRANKS");
    // The key-value space names the job; PMI_ID may be per process.
    env.jobKey = firstOf({"PMI_KVSNAME", "PMIX_NAMESPACE"}, "pmi");
    env.jobKeyShared = present("PMI_KVSNAME") || present("PMIX_NAMESPACE");
  } else {
    // Started by hand: one rank, as MPI runs a program started without mpirun.
    env.launcher = "none";
    env.jobKey = fmt::format("single.{}", getpid());
    env.jobKeyShared = false;
    LOOM_INFO(
        "no launcher environment found (LOOM_RANK/LOOM_WORLD_SIZE of loomrun, "
        "OMPI_COMM_WORLD_RANK of mpirun, RANK/WORLD_SIZE of torchrun, SLURM_PROCID of srun, "
        "PMI_RANK): running as a single rank");
  }
  parseCommId(env);
  LOOM_INFO("launched by {}: rank {} of {}, local {} of {}, job key '{}'", env.launcher, env.rank,
            env.worldSize, env.localRank, env.localSize, env.jobKey);
  return env;
}

}  // namespace loom
