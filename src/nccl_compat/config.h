// ncclConfig_t, as given to ncclCommInitRankConfig, ncclCommInitRankScalable and
// ncclCommSplit.
#pragma once

#include <nccl.h>

namespace loom_nccl {

/// Checks `config` (NULL: defaults) and logs at INFO what Loom ignores.
/// Throws ncclInvalidArgument for a config not set up with NCCL_CONFIG_INITIALIZER
/// or with a `blocking` other than 0 or 1. Every field is honoured or harmless:
/// Loom finishes each call before returning, which a non-blocking communicator
/// allows too, and the rest tunes GPU kernels and networks Loom does not use.
void checkConfig(const ncclConfig_t* config);

}  // namespace loom_nccl
