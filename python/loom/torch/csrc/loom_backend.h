// The torch.distributed backend "loom": a c10d::Backend on Loom's C API, for
// CPU tensors. Each process group gets its own Loom communicator, made from
// the c10d Store torch hands the backend (rank 0 publishes a unique id, the
// others read it), so no Loom-specific environment is needed.
//
// Blocking calls run on the caller's thread when nothing is queued; calls
// with async_op=True and batches go to the group's worker thread
// (work_queue.h), and their Work completes there, future included (what
// DDP's comm hooks chain on). Sends and receives wait until one of them is
// waited on, or another call comes, and then run together as one group on
// the worker (p2p_batch.h). Arguments are checked on the caller's thread, so
// a refused call throws at once and touches nothing. Tags of send/recv are
// not matched: messages between two ranks arrive in the order they were
// sent, as with NCCL.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "loom/loom.h"
#include "loom_work.h"
#include "monitored_barrier.h"
#include "p2p_batch.h"
#include "work_queue.h"

namespace loom::torch_backend {

class LoomBackend : public c10d::Backend {
 public:
  LoomBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
              std::chrono::milliseconds timeout);
  /// Takes over `comm`, already created (a split or shrink of another
  /// group's); `barrier` is how its monitored_barrier reaches the store.
  LoomBackend(loomComm_t comm, int rank, int size, std::chrono::milliseconds timeout,
              MonitoredBarrier barrier);
  ~LoomBackend() override;

  const std::string getBackendName() const override { return "loom"; }
  bool supportsCoalescing() const override { return true; }
  bool supportsSplitting() const override { return true; }
  bool supportsShrinking() const override { return true; }
  /// The group's options as torch reads them (split_group copies them).
  c10::intrusive_ptr<Options> getBackendOptions() override {
    return c10::make_intrusive<Options>("loom", timeout_);
  }
  /// dist.split_group: the ranks of this group in `ranks` (group ranks, in the
  /// new order) form a new group by loomCommSplit, in order with the calls
  /// already made; every rank of this group calls it, and those not in
  /// `ranks` get nullptr. The new group keeps this group's timeout.
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  /// dist.shrink_group: the ranks of this group not in `ranksToExclude` form
  /// a new group by loomCommShrink (the dead ones need not be excluded: the
  /// rendezvous finds them). With torch's SHRINK_ABORT (1) this group is
  /// revoked first, so calls in progress or queued end at once. Only the
  /// ranks that stay call it. The new group keeps this group's timeout.
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranksToExclude,
                                           int shrinkFlags,
                                           const c10::intrusive_ptr<Options>& opts) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  /// A barrier whose failure names the rank that did not arrive (Loom's
  /// message); its deadline is the group's, not `opts.timeout`.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;

  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  /// Averages `tensor` (float32, float16 or bfloat16) across the group with
  /// Loom's in-flight compression (docs/compression.md): the DDP comm hooks'
  /// work. With `feedback`, the residual the codec dropped is kept per `key`
  /// (a DDP bucket) and added back at its next call.
  void compressedAverage(at::Tensor& tensor, const loomCompression& codec, bool feedback,
                         int64_t key);

  /// Frees the communicator (destroy_process_group); later calls fail clearly.
  void shutdown() override;
  /// Unblocks every call waiting inside Loom (loomCommAbort).
  void abort() override;

 private:
  /// Throws a c10d error carrying Loom's message unless `result` is success.
  void check(loomResult_t result, const char* what) const;
  /// Runs `enqueue` (which returns its first failure, or success, or throws)
  /// between loomGroupStart and loomGroupEnd, so its calls run as one batch;
  /// the group is always closed, and the first failure is thrown.
  template <typename Enqueue>
  void grouped(const char* what, Enqueue&& enqueue) {
    check(loomGroupStart(), what);
    loomResult_t queued = loomSuccess;
    try {
      queued = enqueue();
    } catch (...) {
      loomGroupEnd();
      throw;
    }
    const loomResult_t ended = loomGroupEnd();
    check(queued != loomSuccess ? queued : ended, what);
  }
  loomComm_t live(const char* what) const;
  /// Adopts `comm` and makes the send/receive batcher that submits to the worker.
  void start(loomComm_t comm);
  /// Throws a c10d error for `what` once the group was aborted.
  void refuseIfAborted(const char* what) const;
  /// A send or receive: batched until needed (p2p_batch.h), or part of a batch.
  c10::intrusive_ptr<c10d::Work> pointToPoint(c10d::OpType type, std::vector<at::Tensor> result,
                                              std::function<loomResult_t()> enqueue,
                                              const char* what);
  /// Runs `run` (which makes the Loom calls and writes results back) now on
  /// this thread when `async` is false and nothing is queued, else on the
  /// worker; inside a batch (startCoalescing), at endCoalescing. Returns the
  /// call's Work, its result `result`.
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, std::vector<at::Tensor> result,
                                        bool async, std::function<void()> run);
  /// Checks an all-gather of `input` into `output` now; the returned run does it.
  std::function<void()> allGatherRun(const at::Tensor& output, const at::Tensor& input,
                                     const char* what);
  /// Checks a reduce-scatter of `input` into `output` now; the returned run does it.
  std::function<void()> reduceScatterRun(const at::Tensor& output, const at::Tensor& input,
                                         const c10d::ReduceOp& reduceOp, const char* what);

  loomComm_t comm_ = nullptr;
  std::chrono::milliseconds timeout_;
  /// Set by abort(): tasks still queued fail without touching the communicator.
  std::atomic<bool> aborted_{false};
  WorkQueue queue_;
  std::shared_ptr<P2pBatch> p2p_;
  /// A batch's calls and their Works, run as one Loom group at endCoalescing.
  std::vector<std::function<void()>> batch_;
  std::vector<c10::intrusive_ptr<LoomWork>> batchWorks_;
  /// Error feedback per DDP bucket: the residual belongs to a tensor across steps.
  std::map<int64_t, std::pair<loomErrorFeedback_t, int64_t>> feedback_;
  bool coalescing_ = false;
  std::vector<at::Tensor> coalesced_;  // what endCoalescing's Work reports
  MonitoredBarrier monitored_;
  int shrinks_ = 0;  // names each shrunk group's keys on this group's store
};

}  // namespace loom::torch_backend
