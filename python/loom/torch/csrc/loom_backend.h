// The torch.distributed backend "loom": a c10d::Backend on Loom's C API, for
// CPU tensors. Each process group gets its own Loom communicator, made from
// the c10d Store torch hands the backend (rank 0 publishes a unique id, the
// others read it), so no Loom-specific environment is needed.
//
// Collectives run on the calling thread, also for async_op=True: the Work
// returned is already complete, with a completed future (what DDP's comm
// hooks read). Tags of send/recv are not matched: messages between two ranks
// arrive in the order they were sent, as with NCCL.
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "loom/loom.h"

namespace loom::torch_backend {

class LoomBackend : public c10d::Backend {
 public:
  LoomBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
              std::chrono::milliseconds timeout);
  ~LoomBackend() override;

  const std::string getBackendName() const override { return "loom"; }
  bool supportsCoalescing() const override { return true; }

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
  /// Runs `enqueue` (which returns its first failure, or success) between
  /// loomGroupStart and loomGroupEnd, so its calls run as one batch; the
  /// group is always closed, and the first failure is thrown.
  template <typename Enqueue>
  void grouped(const char* what, Enqueue&& enqueue) {
    check(loomGroupStart(), what);
    const loomResult_t queued = enqueue();
    const loomResult_t ended = loomGroupEnd();
    check(queued != loomSuccess ? queued : ended, what);
  }
  loomComm_t live(const char* what) const;

  loomComm_t comm_ = nullptr;
  /// Error feedback per DDP bucket: the residual belongs to a tensor across steps.
  std::map<int64_t, std::pair<loomErrorFeedback_t, int64_t>> feedback_;
  bool coalescing_ = false;
  std::vector<at::Tensor> coalesced_;  // what endCoalescing's Work reports
};

}  // namespace loom::torch_backend
