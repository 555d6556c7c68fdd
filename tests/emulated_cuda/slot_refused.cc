// Two processes whose device FIFOs cannot reach each other (the job sets
// LOOM_EMULATED_IPC=0, so each peer goes through the proxy) and a bulk slot
// larger than the links' largest message (LOOM_CUDA_SLOT_BYTES above
// LOOM_SHM_SLOT_BYTES / LOOM_TCP_SLOT_BYTES): the proxy ships a slot as one
// link message, so the setting cannot work. Creating the communicator must
// fail on both ranks, neither waiting for the other, with
// loomInvalidArgument naming the variable. Prints "slot refused: reported" on
// success.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <cstdio>
#include <string>

#include "tests/emulated_cuda/emulated_rank.h"

using loom::emulated_test::fail;

int main() {
  int devices = 0;
  // Also loads CUDA before the communicator is made, so it decides to walk.
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping\n");
    return 77;
  }
  loomComm_t comm = nullptr;
  const loomResult_t result = loomCommInitFromEnv(&comm);
  if (result == loomSuccess) {
    loomCommDestroy(comm);
    return fail(-1, "init accepted a slot larger than the links carry");
  }
  if (result != loomInvalidArgument) return fail(-1, "init failed, but not as loomInvalidArgument");
  const std::string why = loomGetLastError(nullptr);
  if (why.find("LOOM_CUDA_SLOT_BYTES=") == std::string::npos ||
      why.find("LOOM_TCP_SLOT_BYTES") == std::string::npos) {
    return fail(-1, "the error does not name the settings");
  }
  if (comm != nullptr) return fail(-1, "a failed init handed out a communicator");
  std::printf("%s\nslot refused: reported\n", why.c_str());
  return 0;
}
