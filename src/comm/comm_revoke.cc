// loomCommRevoke across ranks: the revoking rank marks the communicator in
// every local rank's status word (shared memory) and rings their doorbells,
// and asks the rendezvous to announce it to every rank, which ranks on other
// hosts read the next time a wait of theirs idles. Waits check the word while
// idle and every call checks it first, so a revoked communicator answers
// loomRevoked everywhere within milliseconds.
#include "comm/comm.h"
#include "core/log.h"
#include "device_paths/device_walk.h"

namespace loom {

void markRevoked(Comm& comm, int byRank) {
  int32_t none = 0;
  comm.revokedBy->compare_exchange_strong(none, byRank + 1, std::memory_order_acq_rel);
  // Peers will not hear a goodbye from a revoked communicator: its disconnect
  // is a failure to them, which they see as the revoke already.
  comm.leaveCleanly = false;
  abortDeviceWalks(comm);  // kernels waiting on peers give up, so destroy does not wait
}

void revokeComm(Comm& comm) {
  markRevoked(comm, comm.rank);
  if (comm.shm) {
    for (int r = 0; r < comm.nranks; ++r) {
      if (r == comm.rank || !comm.shm->isMapped(r)) continue;
      int32_t none = 0;
      comm.shm->headerOf(r).status.revokedBy.compare_exchange_strong(none, comm.rank + 1);
      comm.shm->headerOf(r).doorbell.ring();
    }
    comm.shm->myDoorbell().ring();  // a wait of this rank in another thread
  }
  if (comm.bootstrap && !comm.allLocal) comm.bootstrap->revoke("");
}

void revokeOnMismatch(Comm& comm, const std::string& error) {
  if (comm.allLocal || !comm.bootstrap) return;
  comm.revokedOnMismatch = true;
  markRevoked(comm, comm.rank);
  comm.bootstrap->revoke(error);
}

[[noreturn]] void raiseRevoked(const Comm& comm, int byRank) {
  const bool onMismatch = byRank == comm.rank
                              ? comm.revokedOnMismatch
                              : comm.bootstrap && !comm.bootstrap->revokedOnMismatch().empty();
  raise(ErrorCode::Revoked, "rank {} revoked the communicator ({}){}", byRank,
        onMismatch ? "it found ranks in different calls" : "loomCommRevoke",
        byRank == comm.rank ? "" : "; this rank's calls on it fail from now on");
}

}  // namespace loom
