// The state behind a UcxWorker: UCP context, worker and its event fd, shared
// (shared_ptr) by the UcxWorker and every link and endpoint made from it, so
// the worker outlives every request and endpoint that refers to it.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace loom::ucx {

/// UCX's text for `status`, for error messages.
inline const char* statusText(ucs_status_t status) { return ucs_status_string(status); }

/// Posts a tagged receive and returns its request, never nullptr: UCX 1.13
/// does not report the length of a receive that completes inside the call, so
/// immediate completion is refused and the length comes from
/// ucp_tag_recv_request_test. Throws SystemError naming `peer` (-1: any).
void* postTagReceive(ucp_worker_h worker, void* buffer, size_t bytes, uint64_t tag, uint64_t mask,
                     int peer);

class WorkerState {
 public:
  /// `settings`: UCX configuration (name without or with UCX_, value) applied
  /// to this context only. Throws Error(InvalidArgument) for a value UCX
  /// cannot parse, Error(SystemError) if UCX cannot initialise.
  explicit WorkerState(const std::vector<std::pair<std::string, std::string>>& settings);
  ~WorkerState();
  WorkerState(const WorkerState&) = delete;
  WorkerState& operator=(const WorkerState&) = delete;

  ucp_worker_h worker() const { return worker_; }
  /// Readable once the worker has events after progress() or wait() armed it.
  int eventFd() const { return efd_; }
  /// Hex-encoded worker address.
  const std::string& address() const { return address_; }

  /// Drives the worker once; true if UCX reports it did something. After a run
  /// of idle calls it arms the event fd, so a caller that polls eventFd() next
  /// wakes on the next event. Unarmed, the fd simply stays quiet; callers poll
  /// it for at most a millisecond, so nothing is lost, only latency.
  bool progress();

  /// Progresses, arms and sleeps on the event fd for at most `cap`: for waits
  /// outside executors (handshake, teardown).
  void wait(std::chrono::milliseconds cap);

  /// Takes requests a link or handshake is done with, and `keepAlive`, the
  /// memory they read or write. Requests completed within a short grace are
  /// freed at once; the rest stay here, with their memory, until this worker
  /// is destroyed, so UCX never writes into freed memory.
  void retire(std::vector<void*> requests, std::shared_ptr<void> keepAlive);

 private:
  struct Orphan {
    std::vector<void*> requests;
    std::shared_ptr<void> keepAlive;
  };
  /// Frees completed requests of `requests`; true when none is left.
  static bool freeCompleted(std::vector<void*>& requests);
  /// ucp_worker_arm; false if events are pending or arming does not work.
  bool arm();

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  std::string address_;
  int idleCalls_ = 0;
  bool armFailed_ = false;  // then the fd never wakes us; waits fall back to timeouts
  std::vector<Orphan> orphans_;
};

}  // namespace loom::ucx
