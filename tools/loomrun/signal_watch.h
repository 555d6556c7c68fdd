// loomrun learns about signals through a signalfd, so its supervision loop is
// one poll() over signals and output pipes with no async handlers.
//
// The signals are blocked in the constructor, which must run before any thread
// starts (the rendezvous server's thread inherits the mask): a signal blocked in
// only some threads could be delivered to a thread that never reads the fd.
#pragma once

#include <signal.h>

#include <vector>

#include "unique_fd.h"

namespace loomrun {

class SignalWatch {
 public:
  SignalWatch();

  int fd() const { return fd_.get(); }
  /// The mask loomrun started with; children restore it before exec.
  const sigset_t& originalMask() const { return originalMask_; }
  /// Every signal read since the last call (non-blocking).
  std::vector<int> drain();

 private:
  sigset_t originalMask_;
  UniqueFd fd_;
};

}  // namespace loomrun
