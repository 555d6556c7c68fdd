// ncclGroupStart/End on top of Loom's groups. Collectives go straight into
// Loom's group (loomGroupStart/End nest the same way); the shim adds what Loom's
// group does not know: communicators created inside a group, and buffers that
// must outlive the calls that queued them.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace loom_nccl::group {

/// Whether a group is open on this thread.
bool isOpen();

/// Queues `create` (which creates one communicator and throws a Failure if it
/// cannot) to run at the outermost ncclGroupEnd, concurrently with the group's
/// other creations: one thread may create every rank of a communicator in one
/// group, and each creation waits for all ranks.
void deferCreation(std::function<void()> create);

/// Keeps `buffer` alive until the outermost ncclGroupEnd has run the queued
/// collectives (a PreMulSum call's scaled input); outside a group, frees it.
void keepUntilGroupEnd(std::unique_ptr<std::byte[]> buffer);

}  // namespace loom_nccl::group
