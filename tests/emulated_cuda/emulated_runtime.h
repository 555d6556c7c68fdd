// What the emulated kernel plugin (emulated_kernels.cc) needs of the emulated
// runtime: the stream a cudaStream_t names, to run its "kernels" on.
#pragma once

#include "emulated_cuda/emulated_streams.h"

namespace loom::emulated {

/// The stream behind `stream` (nullptr and the legacy/per-thread handles: the
/// default stream).
Stream& streamOf(void* stream);
/// The event behind a cudaEvent_t handle.
Event& eventOf(void* event);

}  // namespace loom::emulated
