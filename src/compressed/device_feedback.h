// The device copy of an error-feedback residual (compression/error_feedback.h)
// for the kernel path's compressed collectives: the encode kernels compensate
// the input with it and update it in place, in stream order, and the host
// pulls it back only when something on the host reads the residual.
#pragma once

#include "compression/error_feedback.h"

namespace loom {

/// `feedback`'s residual in device memory on `device` (current), as new as
/// the host's: allocated on first use, and uploaded on `stream` when the
/// host's changed since; `stream` also waits for the last device work that
/// wrote it. Enqueue the kernels that update it on `stream`, then call
/// deviceResidualWritten.
float* deviceResidual(ErrorFeedback& feedback, int device, void* stream);

/// After the kernels that update `feedback`'s device residual were enqueued
/// on `stream`: the device copy is now the newer one.
void deviceResidualWritten(ErrorFeedback& feedback, void* stream);

}  // namespace loom
