#include "transports/ucx/ucx_endpoint.h"

#include "core/error.h"
#include "core/log.h"

namespace loom::ucx {

Endpoint::Endpoint(std::shared_ptr<WorkerState> worker, int peer,
                   const std::vector<uint8_t>& address)
    : worker_(std::move(worker)), peer_(peer), state_(std::make_shared<State>()) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  // PEER mode is what makes a dead peer an error rather than a hang. It also
  // steers UCX away from transports that cannot detect one (on one host
  // that means tcp over loopback instead of shared memory).
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &Endpoint::onError;
  params.err_handler.arg = state_.get();
  const ucs_status_t status = ucp_ep_create(worker_->worker(), &params, &ep_);
  if (status != UCS_OK) {
    raise(ErrorCode::RemoteError, "ucx: cannot create an endpoint to rank {}: {}", peer,
          statusText(status));
  }
}

Endpoint::~Endpoint() {
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // Links are drained before they are destroyed; force skips a flush that a
  // dead peer would never answer.
  params.flags = UCP_EP_CLOSE_FLAG_FORCE;
  const ucs_status_ptr_t request = ucp_ep_close_nbx(ep_, &params);
  if (UCS_PTR_IS_ERR(request)) {
    LOOM_WARN("ucx: closing the endpoint to rank {}: {}", peer_,
              statusText(UCS_PTR_STATUS(request)));
    return;
  }
  worker_->retire({request}, state_);
}

void Endpoint::onError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  static_cast<State*>(arg)->failure = status;
}

}  // namespace loom::ucx
