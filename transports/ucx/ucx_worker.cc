#include "transports/ucx/ucx_worker.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "core/deadline.h"
#include "core/error.h"
#include "core/log.h"
#include "transports/ucx/ucx_transport.h"
#include "transports/ucx/ucx_wire.h"

namespace loom {
namespace ucx {
namespace {

// Arming costs syscalls; an executor that is only spinning briefly should not pay them.
constexpr int kIdleCallsBeforeArm = 16;
// Normally every retired request is complete at once (receives are cancelled,
// endpoints force-closed); this only bounds a teardown racing a transfer.
constexpr std::chrono::milliseconds kRetireGrace{100};
constexpr std::chrono::milliseconds kDestroyGrace{500};

void check(ucs_status_t status, const char* what) {
  if (status != UCS_OK) {
    raise(ErrorCode::SystemError, "ucx: {} failed: {}", what, statusText(status));
  }
}

}  // namespace

void* postTagReceive(ucp_worker_h worker, void* buffer, size_t bytes, uint64_t tag, uint64_t mask,
                     int peer) {
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  const ucs_status_ptr_t request = ucp_tag_recv_nbx(worker, buffer, bytes, tag, mask, &params);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) {
    const ucs_status_t status = request == nullptr ? UCS_ERR_NO_PROGRESS : UCS_PTR_STATUS(request);
    if (peer >= 0) {
      raise(ErrorCode::SystemError, "ucx: posting a receive from rank {} failed: {}", peer,
            statusText(status));
    }
    raise(ErrorCode::SystemError, "ucx: posting a receive failed: {}", statusText(status));
  }
  return request;
}

WorkerState::WorkerState(const std::vector<std::pair<std::string, std::string>>& settings) {
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // Per-context settings, unlike setenv, leave other workers of the process alone.
  for (const auto& [name, value] : settings) {
    const std::string bare = name.starts_with("UCX_") ? name.substr(4) : name;
    const ucs_status_t status = ucp_config_modify(config, bare.c_str(), value.c_str());
    if (status != UCS_OK) {
      ucp_config_release(config);
      raise(ErrorCode::InvalidArgument, "ucx: setting UCX_{}={} was refused: {}", bare, value,
            statusText(status));
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  // WAKEUP gives the worker an event fd executors can sleep on.
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  const ucs_status_t initStatus = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check(initStatus, "ucp_init");
  try {
    ucp_worker_params_t workerParams{};
    workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // Links of a rank are driven by one thread at a time, but not always the
    // thread that created the worker.
    workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    check(ucp_worker_create(context_, &workerParams, &worker_), "ucp_worker_create");
    ucp_address_t* address = nullptr;
    size_t length = 0;
    check(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address");
    address_ = toHex(address, length);
    ucp_worker_release_address(worker_, address);
    check(ucp_worker_get_efd(worker_, &efd_), "ucp_worker_get_efd");
  } catch (...) {
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    throw;
  }
}

WorkerState::~WorkerState() {
  // Orphans are requests a transfer still held at teardown; cancelling
  // completes pending receives, and endpoints are closed already.
  for (Orphan& orphan : orphans_) {
    for (void* request : orphan.requests) ucp_request_cancel(worker_, request);
  }
  const Deadline deadline = Deadline::after(kDestroyGrace);
  while (!orphans_.empty()) {
    ucp_worker_progress(worker_);
    std::erase_if(orphans_, [](Orphan& o) { return freeCompleted(o.requests); });
    if (deadline.expired()) {
      LOOM_WARN("ucx: destroying a worker with {} transfers still in flight", orphans_.size());
      break;
    }
  }
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
  // Only now may the memory of requests that never completed go.
  orphans_.clear();
}

bool WorkerState::progress() {
  if (ucp_worker_progress(worker_) != 0) {
    idleCalls_ = 0;
    return true;
  }
  if (!orphans_.empty()) {
    std::erase_if(orphans_, [](Orphan& o) { return freeCompleted(o.requests); });
  }
  if (++idleCalls_ >= kIdleCallsBeforeArm) arm();
  return false;
}

bool WorkerState::arm() {
  if (armFailed_) return false;
  const ucs_status_t status = ucp_worker_arm(worker_);
  // UCS_ERR_BUSY: events arrived meanwhile; the next progress takes them.
  if (status == UCS_OK || status == UCS_ERR_BUSY) return status == UCS_OK;
  // Not fatal: callers poll the fd for a bounded time and progress again.
  LOOM_WARN("ucx: ucp_worker_arm failed ({}); idle waits will poll", statusText(status));
  armFailed_ = true;
  return false;
}

void WorkerState::wait(std::chrono::milliseconds cap) {
  if (ucp_worker_progress(worker_) != 0) return;
  if (!arm() && !armFailed_) return;  // events pending
  pollfd fd{efd_, POLLIN, 0};
  if (::poll(&fd, 1, static_cast<int>(cap.count())) < 0 && errno != EINTR) {
    raiseErrno("poll on the ucx worker's event fd");
  }
}

bool WorkerState::freeCompleted(std::vector<void*>& requests) {
  std::erase_if(requests, [](void* request) {
    if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
    ucp_request_free(request);
    return true;
  });
  return requests.empty();
}

void WorkerState::retire(std::vector<void*> requests, std::shared_ptr<void> keepAlive) {
  std::erase(requests, nullptr);
  const Deadline deadline = Deadline::after(kRetireGrace);
  while (!freeCompleted(requests) && !deadline.expired()) ucp_worker_progress(worker_);
  if (!requests.empty()) orphans_.push_back({std::move(requests), std::move(keepAlive)});
}

}  // namespace ucx

UcxWorker::UcxWorker(const Settings& settings)
    : state_(std::make_shared<ucx::WorkerState>(settings)) {}
UcxWorker::~UcxWorker() = default;

const std::string& UcxWorker::address() const { return state_->address(); }

}  // namespace loom
