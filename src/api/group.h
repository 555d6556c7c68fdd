// loomGroupStart/End. The group being built is per thread, as the API
// requires: the one piece of library state outside a communicator.
#pragma once

#include <vector>

#include "comm/operation.h"

namespace loom {

/// Queues `op` if a group is open on this thread and returns true; else false.
bool enqueueInGroup(Comm& comm, const Operation& op);
void groupStart();
/// Runs the queued operations when the outermost group closes.
void groupEnd();

}  // namespace loom
