// One UCP endpoint to a peer's worker, with peer-failure handling: when UCX
// finds the peer unreachable (its process died, its worker closed), the error
// is recorded here and the link turns it into RemoteError the next time it
// needs the peer, instead of waiting forever.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <vector>

#include "transports/ucx/ucx_worker.h"

namespace loom::ucx {

class Endpoint {
 public:
  /// `address`: the peer's raw worker address. Throws RemoteError naming `peer`
  /// if UCX cannot create the endpoint.
  Endpoint(std::shared_ptr<WorkerState> worker, int peer, const std::vector<uint8_t>& address);
  /// Force-closes the endpoint: operations still on it complete with an error.
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  ucp_ep_h ep() const { return ep_; }
  int peer() const { return peer_; }
  /// UCS_OK while the peer is reachable, else the error UCX reported.
  ucs_status_t failure() const { return state_->failure; }

 private:
  // UCX's error callback writes here; it lives apart from the Endpoint so that
  // a close still in flight at destruction can keep it alive (WorkerState::retire).
  struct State {
    ucs_status_t failure = UCS_OK;
  };
  static void onError(void* arg, ucp_ep_h ep, ucs_status_t status);

  std::shared_ptr<WorkerState> worker_;
  int peer_;
  std::shared_ptr<State> state_;
  ucp_ep_h ep_ = nullptr;
};

}  // namespace loom::ucx
