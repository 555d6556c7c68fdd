// NCCL_* environment variables onto LOOM_* ones (docs/nccl-compat.md has the table).
#pragma once

namespace loom_nccl {

/// Sets the LOOM_* variable of every NCCL_* variable that has a Loom meaning,
/// unless that LOOM_* variable is already set, and logs the others in one INFO
/// line. Runs once per process, from every entry point that can be the first
/// to reach Loom: Loom reads its variables when a communicator is created, and
/// LOOM_DEBUG at its first log line.
void mapEnvironmentOnce();

}  // namespace loom_nccl
