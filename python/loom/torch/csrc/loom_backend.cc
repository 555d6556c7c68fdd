#include "loom_backend.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

#include "tensor_rules.h"

namespace loom::torch_backend {

namespace {

/// One pair of an all-to-all: a send to `peer` and a receive from it.
loomResult_t exchange(const void* send, int64_t sendCount, void* recv, int64_t recvCount,
                      loomDataType_t type, int peer, loomComm_t comm) {
  const loomResult_t sent = loomSend(send, sendCount, type, peer, comm, nullptr);
  return sent != loomSuccess ? sent : loomRecv(recv, recvCount, type, peer, comm, nullptr);
}

}  // namespace

namespace {

/// This machine's name, boot id and network namespace: ranks that agree on
/// all three reach each other over loopback; hosts or containers that share a
/// host name are still told apart.
std::string thisHost() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  std::string host = name;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (std::getline(boot, id)) host += "/" + id;
  char netns[64] = {};
  if (::readlink("/proc/self/ns/net", netns, sizeof(netns) - 1) > 0)
    host += "/" + std::string(netns);
  return host;
}

}  // namespace

LoomBackend::LoomBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::chrono::milliseconds timeout)
    : Backend(rank, size), timeout_(timeout), monitored_(store, "", rank, size) {
  // Loom's deadline for every wait of this group comes from
  // init_process_group(timeout=...) / new_group(timeout=...), unless the user
  // set LOOM_TIMEOUT (seconds) themselves. Per communicator: other groups and
  // the process environment are untouched.
  loomCommConfig config = LOOM_COMM_CONFIG_INITIALIZER;
  if (std::getenv("LOOM_TIMEOUT") == nullptr) {
    config.timeoutMs =
        static_cast<int>(std::clamp<int64_t>(timeout.count(), 1, std::numeric_limits<int>::max()));
  }
  // Each process group hands its own (prefixed) store: one id per group.
  const std::string key = "loom/unique_id";
  // Every rank names its host, so that rank 0 can keep the rendezvous on
  // loopback when they all share its host (nothing opened to the network).
  store->set("loom/host/" + std::to_string(rank), thisHost());
  loomUniqueId id{};
  if (rank == 0) {
    bool allHere = true;
    for (int r = 1; r < size && allHere; ++r) {
      const std::vector<uint8_t> host = store->get("loom/host/" + std::to_string(r));
      allHere = std::string(host.begin(), host.end()) == thisHost();
    }
    if (allHere) {
      check(loomGetLocalUniqueId(&id), "loomGetLocalUniqueId");
    } else {
      check(loomGetUniqueId(&id), "loomGetUniqueId");
    }
    const std::vector<uint8_t> bytes(id.internal, id.internal + LOOM_UNIQUE_ID_BYTES);
    store->set(key, bytes);
  } else {
    const std::vector<uint8_t> bytes = store->get(key);
    if (bytes.size() != LOOM_UNIQUE_ID_BYTES) {
      refuse("the store's unique id has " + std::to_string(bytes.size()) + " bytes, expected " +
             std::to_string(LOOM_UNIQUE_ID_BYTES));
    }
    std::copy(bytes.begin(), bytes.end(), id.internal);
  }
  loomComm_t made = nullptr;
  const loomResult_t result = loomCommInitRankConfig(&made, size, id, rank, &config);
  if (result != loomSuccess) {
    C10_THROW_ERROR(DistBackendError, std::string("loom backend: rank ") + std::to_string(rank) +
                                          " of " + std::to_string(size) +
                                          " could not join: " + loomGetLastError(nullptr));
  }
  start(made);
}

LoomBackend::LoomBackend(loomComm_t comm, int rank, int size, std::chrono::milliseconds timeout,
                         MonitoredBarrier barrier)
    : Backend(rank, size), timeout_(timeout), monitored_(std::move(barrier)) {
  start(comm);
}

void LoomBackend::start(loomComm_t comm) {
  comm_ = comm;
  p2p_ = std::make_shared<P2pBatch>([this](std::vector<P2pBatch::Call> calls) {
    queue_.push([this, calls = std::move(calls)] {
      std::exception_ptr error;
      try {
        refuseIfAborted("these sends and receives");
        grouped("send/recv", [&] {
          for (const P2pBatch::Call& call : calls) {
            const loomResult_t r = call.enqueue();
            if (r != loomSuccess) return r;
          }
          return loomSuccess;
        });
      } catch (...) {
        error = std::current_exception();
      }
      for (const P2pBatch::Call& call : calls) call.work->complete(error);
    });
  });
}

LoomBackend::~LoomBackend() { shutdown(); }

c10::intrusive_ptr<c10d::Backend> LoomBackend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                     const std::vector<int>& ranks,
                                                     const c10::intrusive_ptr<Options>& /*opts*/) {
  if (coalescing_) refuse("split_group inside a coalescing block");
  if (ranks.empty()) refuse("split_group with an empty group");
  const auto mine = std::find(ranks.begin(), ranks.end(), getRank());
  const bool member = mine != ranks.end();
  // Groups of one split are disjoint, so the lowest rank names each.
  const int color = member ? *std::min_element(ranks.begin(), ranks.end()) : LOOM_SPLIT_NOCOLOR;
  const int key = member ? static_cast<int>(mine - ranks.begin()) : 0;
  loomComm_t child = nullptr;
  // After every call made before it, like any other collective of this group.
  launch(c10d::OpType::UNKNOWN, {}, false, [this, color, key, &child] {
    check(loomCommSplit(comm_, color, key, &child), "split_group");
  })->wait();
  if (child == nullptr) return {};
  const int size = static_cast<int>(ranks.size());
  // torch hands the new group a store of its own.
  return c10::make_intrusive<LoomBackend>(child, key, size, timeout_,
                                          MonitoredBarrier(store, "", key, size));
}

c10::intrusive_ptr<c10d::Backend> LoomBackend::shrink(const std::vector<int64_t>& ranksToExclude,
                                                      int shrinkFlags,
                                                      const c10::intrusive_ptr<Options>& /*opts*/) {
  if (coalescing_) refuse("shrink_group inside a coalescing block");
  if (comm_ == nullptr) refuse("shrink_group on a group that was shut down or aborted");
  const std::vector<int> exclude(ranksToExclude.begin(), ranksToExclude.end());
  constexpr int kTorchShrinkAbort = 1;  // torch.distributed.SHRINK_ABORT
  const bool abortCalls = (shrinkFlags & kTorchShrinkAbort) != 0;
  if (abortCalls) check(loomCommRevoke(comm_), "shrink_group");
  loomComm_t child = nullptr;
  // Behind the calls already queued, which fail at once if revoked.
  launch(c10d::OpType::UNKNOWN, {}, false, [this, &exclude, abortCalls, &child] {
    check(loomCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &child,
                         abortCalls ? LOOM_SHRINK_ABORT : LOOM_SHRINK_DEFAULT),
          "shrink_group");
  })->wait();
  int rank = 0;
  int size = 0;
  check(loomCommUserRank(child, &rank), "shrink_group");
  check(loomCommCount(child, &size), "shrink_group");
  // Every survivor shrinks this group the same number of times: the count
  // names the shrunk group's keys alike on all of them.
  return c10::make_intrusive<LoomBackend>(
      child, rank, size, timeout_,
      monitored_.derived("shrink" + std::to_string(shrinks_++), rank, size));
}

void LoomBackend::shutdown() {
  if (p2p_) p2p_->close();
  queue_.drain();  // queued calls still run: the communicator is alive
  for (auto& [key, entry] : feedback_) loomErrorFeedbackDestroy(entry.first);
  feedback_.clear();
  if (comm_ != nullptr) loomCommDestroy(comm_);
  comm_ = nullptr;
}

void LoomBackend::abort() {
  if (comm_ == nullptr) return;
  // The call in progress returns loomAborted, queued ones fail unrun; only
  // then is the communicator freed.
  aborted_.store(true);
  p2p_->close();
  loomCommRevoke(comm_);
  queue_.drain();
  loomCommAbort(comm_);
  comm_ = nullptr;
}

c10::intrusive_ptr<c10d::Work> LoomBackend::launch(c10d::OpType type,
                                                   std::vector<at::Tensor> result, bool async,
                                                   std::function<void()> run) {
  if (coalescing_) {
    auto work = c10::make_intrusive<LoomWork>(result, type);
    coalesced_.insert(coalesced_.end(), result.begin(), result.end());
    batch_.push_back(std::move(run));
    batchWorks_.push_back(work);
    return work;
  }
  p2p_->flush();  // sends and receives made before this call go first
  auto guardedRun = [this, run = std::move(run)] {
    refuseIfAborted("this call");
    run();
  };
  if (!async && queue_.tryRunHere(guardedRun)) return done(std::move(result), type);
  auto work = c10::make_intrusive<LoomWork>(std::move(result), type);
  queue_.push([work, guardedRun = std::move(guardedRun)] {
    try {
      guardedRun();
      work->complete();
    } catch (...) {
      work->complete(std::current_exception());
    }
  });
  return work;
}

void LoomBackend::compressedAverage(at::Tensor& tensor, const loomCompression& codec, bool feedback,
                                    int64_t key) {
  requireCpu(tensor, "compressed all_reduce");
  if (!tensor.is_contiguous()) refuse("compressed all_reduce of a non-contiguous tensor");
  loomComm_t comm = live("compressed all_reduce");
  auto run = [this, tensor, codec, feedback, key, comm] {
    loomCompression call = codec;
    call.feedback = nullptr;
    if (feedback) {
      auto found = feedback_.find(key);
      // A bucket that changed size (DDP rebuilds buckets after the first step)
      // starts a fresh residual.
      if (found != feedback_.end() && found->second.second != tensor.numel()) {
        loomErrorFeedbackDestroy(found->second.first);
        feedback_.erase(found);
        found = feedback_.end();
      }
      if (found == feedback_.end()) {
        loomErrorFeedback_t made = nullptr;
        check(loomErrorFeedbackCreate(&made, tensor.numel()), "error feedback");
        found = feedback_.emplace(key, std::make_pair(made, tensor.numel())).first;
      }
      call.feedback = found->second.first;
    }
    check(loomAllReduceEx(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(), loomType(tensor),
                          loomAvg, &call, comm, nullptr),
          "compressed all_reduce");
  };
  // The hooks wait for it; it queues behind earlier asynchronous calls.
  launch(c10d::OpType::ALLREDUCE, {tensor}, false, std::move(run))->wait();
}

void LoomBackend::refuseIfAborted(const char* what) const {
  if (aborted_.load()) {
    C10_THROW_ERROR(DistBackendError, std::string("loom backend: the process group was aborted "
                                                  "before ") +
                                          what + " ran");
  }
}

c10::intrusive_ptr<c10d::Work> LoomBackend::pointToPoint(c10d::OpType type,
                                                         std::vector<at::Tensor> result,
                                                         std::function<loomResult_t()> enqueue,
                                                         const char* what) {
  if (coalescing_) {
    return launch(type, std::move(result), true,
                  [this, enqueue = std::move(enqueue), what] { check(enqueue(), what); });
  }
  auto work = c10::make_intrusive<LoomWork>(std::move(result), type);
  p2p_->add(std::move(enqueue), work);
  return work;
}

loomComm_t LoomBackend::live(const char* what) const {
  if (comm_ == nullptr) {
    C10_THROW_ERROR(DistBackendError, std::string("loom backend: ") + what +
                                          " after the process group was shut down or aborted");
  }
  return comm_;
}

void LoomBackend::check(loomResult_t result, const char* what) const {
  if (result == loomSuccess) return;
  // The message is the calling thread's (the worker's for queued calls).
  const char* detail = loomGetLastError(nullptr);
  const std::string message =
      std::string("loom backend: ") + what + " failed on rank " + std::to_string(getRank()) + ": " +
      (detail != nullptr && *detail != '\0' ? detail : loomGetErrorString(result));
  if (result == loomInvalidArgument) C10_THROW_ERROR(ValueError, message);
  C10_THROW_ERROR(DistBackendError, message);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  Dense t(single(tensors, "broadcast"));
  const auto root = static_cast<int>(opts.rootRank);
  loomComm_t comm = live("broadcast");
  return launch(c10d::OpType::BROADCAST, tensors, opts.asyncOp, [this, t, root, comm]() mutable {
    check(loomBroadcast(t.data.data_ptr(), t.data.data_ptr(), t.data.numel(), loomType(t.data),
                        root, comm, nullptr),
          "broadcast");
    t.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  Dense t(single(tensors, "all_reduce"));
  const loomRedOp_t op = loomOp(opts.reduceOp, t.data);
  loomComm_t comm = live("all_reduce");
  return launch(c10d::OpType::ALLREDUCE, tensors, opts.asyncOp,
                [this, t, op, reduceOp = opts.reduceOp, comm]() mutable {
                  premultiply(reduceOp, t.data);
                  check(loomAllReduce(t.data.data_ptr(), t.data.data_ptr(), t.data.numel(),
                                      loomType(t.data), op, comm, nullptr),
                        "all_reduce");
                  t.writeBack();
                });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  // One Loom group: every rank enqueues the same list, which runs as a batch.
  std::vector<Dense> dense;
  dense.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    requireCpu(t, "all_reduce_coalesced");
    dense.emplace_back(t);
    loomOp(opts.reduceOp, dense.back().data);  // refuses what Loom cannot reduce, now
  }
  loomComm_t comm = live("all_reduce_coalesced");
  return launch(c10d::OpType::ALLREDUCE_COALESCED, tensors, opts.asyncOp,
                [this, dense, reduceOp = opts.reduceOp, comm]() mutable {
                  for (Dense& d : dense) premultiply(reduceOp, d.data);
                  grouped("all_reduce_coalesced", [&] {
                    for (Dense& d : dense) {
                      const loomResult_t r =
                          loomAllReduce(d.data.data_ptr(), d.data.data_ptr(), d.data.numel(),
                                        loomType(d.data), loomOp(reduceOp, d.data), comm, nullptr);
                      if (r != loomSuccess) return r;
                    }
                    return loomSuccess;
                  });
                  for (Dense& d : dense) d.writeBack();
                });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::reduce(std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOptions& opts) {
  Dense t(single(tensors, "reduce"));
  const loomRedOp_t op = loomOp(opts.reduceOp, t.data);
  const auto root = static_cast<int>(opts.rootRank);
  loomComm_t comm = live("reduce");
  return launch(c10d::OpType::REDUCE, tensors, opts.asyncOp,
                [this, t, op, root, reduceOp = opts.reduceOp, comm]() mutable {
                  premultiply(reduceOp, t.data);
                  check(loomReduce(t.data.data_ptr(), t.data.data_ptr(), t.data.numel(),
                                   loomType(t.data), op, root, comm, nullptr),
                        "reduce");
                  t.writeBack();
                });
}

std::function<void()> LoomBackend::allGatherRun(const at::Tensor& output, const at::Tensor& input,
                                                const char* what) {
  requireCpu(input, what);
  requireCpu(output, what);
  sameLayout(input, output, what);
  if (output.numel() != input.numel() * getSize()) {
    refuse(std::string(what) + ": output has " + std::to_string(output.numel()) +
           " elements, expected " + std::to_string(input.numel()) + " x " +
           std::to_string(getSize()));
  }
  loomComm_t comm = live(what);
  return [this, in = input.contiguous(), out = Dense(output), what, comm]() mutable {
    check(
        loomAllGather(in.data_ptr(), out.data.data_ptr(), in.numel(), loomType(in), comm, nullptr),
        what);
    out.writeBack();
  };
}

c10::intrusive_ptr<c10d::Work> LoomBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions& opts) {
  return launch(c10d::OpType::_ALLGATHER_BASE, {output}, opts.asyncOp,
                allGatherRun(output, input, "all_gather_into_tensor"));
}

c10::intrusive_ptr<c10d::Work> LoomBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllgatherOptions& opts) {
  const at::Tensor& input = single(inputs, "all_gather");
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != getSize()) {
    refuse("all_gather takes one list of " + std::to_string(getSize()) + " output tensors");
  }
  for (const at::Tensor& o : outputs[0]) {
    requireCpu(o, "all_gather output");
    sameLayout(input, o, "all_gather");
    if (o.numel() != input.numel()) {
      refuse("all_gather: an output tensor has " + std::to_string(o.numel()) +
             " elements but the input has " + std::to_string(input.numel()));
    }
  }
  at::Tensor flat = at::empty({input.numel() * getSize()}, input.options());
  auto gather = allGatherRun(flat, input, "all_gather");
  return launch(c10d::OpType::ALLGATHER, outputs[0], opts.asyncOp,
                [gather = std::move(gather), flat, outs = outputs[0], n = input.numel()] {
                  gather();
                  for (size_t r = 0; r < outs.size(); ++r) {
                    at::Tensor o = outs[r];
                    o.copy_(flat.narrow(0, static_cast<int64_t>(r) * n, n).view_as(o));
                  }
                });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  if (outputs.size() != inputs.size())
    refuse("all_gather_into_tensor_coalesced: list lengths differ");
  std::vector<std::function<void()>> runs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    runs.push_back(allGatherRun(outputs[i], inputs[i], "all_gather_into_tensor_coalesced"));
  }
  return launch(c10d::OpType::COALESCED, outputs, opts.asyncOp, [runs = std::move(runs)] {
    for (const auto& run : runs) run();
  });
}

std::function<void()> LoomBackend::reduceScatterRun(const at::Tensor& output,
                                                    const at::Tensor& input,
                                                    const c10d::ReduceOp& reduceOp,
                                                    const char* what) {
  requireCpu(input, what);
  requireCpu(output, what);
  sameLayout(input, output, what);
  if (input.numel() != output.numel() * getSize()) {
    refuse(std::string(what) + ": input has " + std::to_string(input.numel()) +
           " elements, expected " + std::to_string(output.numel()) + " x " +
           std::to_string(getSize()));
  }
  const loomRedOp_t op = loomOp(reduceOp, input);
  loomComm_t comm = live(what);
  return [this, in = input.contiguous(), out = Dense(output), reduceOp, op, what, comm]() mutable {
    if (reduceOp.op_ == c10d::ReduceOp::PREMUL_SUM) {
      in = in.clone();  // the caller's input stays untouched
      premultiply(reduceOp, in);
    }
    check(loomReduceScatter(in.data_ptr(), out.data.data_ptr(), out.data.numel(), loomType(in), op,
                            comm, nullptr),
          what);
    out.writeBack();
  };
}

c10::intrusive_ptr<c10d::Work> LoomBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  return launch(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, opts.asyncOp,
                reduceScatterRun(output, input, opts.reduceOp, "reduce_scatter_tensor"));
}

c10::intrusive_ptr<c10d::Work> LoomBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  at::Tensor output = single(outputs, "reduce_scatter");
  if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != getSize()) {
    refuse("reduce_scatter takes one list of " + std::to_string(getSize()) + " input tensors");
  }
  std::vector<at::Tensor> flat;
  for (const at::Tensor& i : inputs[0]) {
    requireCpu(i, "reduce_scatter input");
    sameLayout(output, i, "reduce_scatter");
    if (i.numel() != output.numel()) {
      refuse("reduce_scatter: an input tensor has " + std::to_string(i.numel()) +
             " elements but the output has " + std::to_string(output.numel()));
    }
    flat.push_back(i.reshape({-1}));
  }
  return launch(c10d::OpType::REDUCE_SCATTER, outputs, opts.asyncOp,
                reduceScatterRun(output, at::cat(flat), opts.reduceOp, "reduce_scatter"));
}

c10::intrusive_ptr<c10d::Work> LoomBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  if (outputs.size() != inputs.size())
    refuse("reduce_scatter_tensor_coalesced: list lengths differ");
  std::vector<std::function<void()>> runs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    runs.push_back(
        reduceScatterRun(outputs[i], inputs[i], opts.reduceOp, "reduce_scatter_tensor_coalesced"));
  }
  return launch(c10d::OpType::COALESCED, outputs, opts.asyncOp, [runs = std::move(runs)] {
    for (const auto& run : runs) run();
  });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplits,
                                                          std::vector<int64_t>& inputSplits,
                                                          const c10d::AllToAllOptions& opts) {
  requireCpu(input, "all_to_all_single input");
  requireCpu(output, "all_to_all_single output");
  sameLayout(input, output, "all_to_all_single");
  const int n = getSize();
  const at::Tensor in = input.contiguous();
  Dense out(output);
  // Splits count rows of the first dimension; a row is the rest of the tensor.
  const int64_t inRow = in.dim() == 0 || in.size(0) == 0 ? 1 : in.numel() / in.size(0);
  const int64_t outRow =
      out.data.dim() == 0 || out.data.size(0) == 0 ? 1 : out.data.numel() / out.data.size(0);
  for (const auto* splits : {&inputSplits, &outputSplits}) {
    if (!splits->empty() && static_cast<int>(splits->size()) != n) {
      refuse("all_to_all_single: split sizes have " + std::to_string(splits->size()) +
             " entries for " + std::to_string(n) + " ranks");
    }
  }
  loomComm_t comm = live("all_to_all_single");
  if (inputSplits.empty() && outputSplits.empty()) {
    if (in.numel() % n != 0 || in.numel() != out.data.numel()) {
      refuse("all_to_all_single: " + std::to_string(in.numel()) + " input and " +
             std::to_string(out.data.numel()) + " output elements do not split evenly over " +
             std::to_string(n) + " ranks");
    }
    return launch(c10d::OpType::ALLTOALL_BASE, {output}, opts.asyncOp,
                  [this, in, out, n, comm]() mutable {
                    check(loomAllToAll(in.data_ptr(), out.data.data_ptr(), in.numel() / n,
                                       loomType(in), comm, nullptr),
                          "all_to_all_single");
                    out.writeBack();
                  });
  }
  // Uneven splits: a group of sends and receives, one pair per peer.
  std::vector<int64_t> sendCounts;
  std::vector<int64_t> recvCounts;
  for (int p = 0; p < n; ++p) {
    const auto at = static_cast<size_t>(p);
    sendCounts.push_back(
        (inputSplits.empty() ? (in.dim() == 0 ? 1 : in.size(0)) / n : inputSplits[at]) * inRow);
    recvCounts.push_back((outputSplits.empty() ? (out.data.dim() == 0 ? 1 : out.data.size(0)) / n
                                               : outputSplits[at]) *
                         outRow);
  }
  return launch(c10d::OpType::ALLTOALL_BASE, {output}, opts.asyncOp,
                [this, in, out, sendCounts, recvCounts, comm]() mutable {
                  const size_t es = in.element_size();
                  const auto* from = static_cast<const char*>(in.data_ptr());
                  auto* to = static_cast<char*>(out.data.data_ptr());
                  grouped("all_to_all_single", [&] {
                    int64_t inAt = 0;
                    int64_t outAt = 0;
                    for (size_t p = 0; p < sendCounts.size(); ++p) {
                      const loomResult_t r =
                          exchange(from + inAt * es, sendCounts[p], to + outAt * es, recvCounts[p],
                                   loomType(in), static_cast<int>(p), comm);
                      if (r != loomSuccess) return r;
                      inAt += sendCounts[p];
                      outAt += recvCounts[p];
                    }
                    return loomSuccess;
                  });
                  out.writeBack();
                });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions& opts) {
  const int n = getSize();
  if (static_cast<int>(inputs.size()) != n || static_cast<int>(outputs.size()) != n) {
    refuse("all_to_all takes lists of " + std::to_string(n) + " tensors");
  }
  std::vector<at::Tensor> ins;
  std::vector<Dense> outs;
  for (int p = 0; p < n; ++p) {
    requireCpu(inputs[p], "all_to_all input");
    requireCpu(outputs[p], "all_to_all output");
    sameLayout(inputs[0], inputs[p], "all_to_all");
    sameLayout(inputs[0], outputs[p], "all_to_all");
    ins.push_back(inputs[p].contiguous());
    outs.emplace_back(outputs[p]);
  }
  loomComm_t comm = live("all_to_all");
  return launch(c10d::OpType::ALLTOALL, outputs, opts.asyncOp, [this, ins, outs, comm]() mutable {
    grouped("all_to_all", [&] {
      for (size_t p = 0; p < ins.size(); ++p) {
        const loomResult_t r =
            exchange(ins[p].data_ptr(), ins[p].numel(), outs[p].data.data_ptr(),
                     outs[p].data.numel(), loomType(ins[p]), static_cast<int>(p), comm);
        if (r != loomSuccess) return r;
      }
      return loomSuccess;
    });
    for (Dense& d : outs) d.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::GatherOptions& opts) {
  const at::Tensor input = single(inputs, "gather").contiguous();
  const int root = static_cast<int>(opts.rootRank);
  const bool atRoot = getRank() == root;
  if (atRoot && (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != getSize())) {
    refuse("gather: the root takes one list of " + std::to_string(getSize()) + " output tensors");
  }
  at::Tensor flat = atRoot ? at::empty({input.numel() * getSize()}, input.options()) : at::Tensor();
  std::vector<at::Tensor> result = atRoot ? outputs[0] : std::vector<at::Tensor>{};
  loomComm_t comm = live("gather");
  return launch(
      c10d::OpType::GATHER, result, opts.asyncOp, [this, input, flat, result, root, atRoot, comm] {
        check(loomGather(input.data_ptr(), atRoot ? flat.data_ptr() : nullptr, input.numel(),
                         loomType(input), root, comm, nullptr),
              "gather");
        for (size_t r = 0; r < result.size(); ++r) {
          at::Tensor o = result[r];
          o.copy_(
              flat.narrow(0, static_cast<int64_t>(r) * input.numel(), input.numel()).view_as(o));
        }
      });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::scatter(std::vector<at::Tensor>& outputs,
                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                    const c10d::ScatterOptions& opts) {
  Dense out(single(outputs, "scatter"));
  const int root = static_cast<int>(opts.rootRank);
  const bool atRoot = getRank() == root;
  at::Tensor flat;
  if (atRoot) {
    if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != getSize()) {
      refuse("scatter: the root takes one list of " + std::to_string(getSize()) + " input tensors");
    }
    std::vector<at::Tensor> parts;
    for (const at::Tensor& i : inputs[0]) parts.push_back(i.reshape({-1}));
    flat = at::cat(parts);
  }
  loomComm_t comm = live("scatter");
  return launch(c10d::OpType::SCATTER, outputs, opts.asyncOp,
                [this, out, flat, root, atRoot, comm]() mutable {
                  check(loomScatter(atRoot ? flat.data_ptr() : nullptr, out.data.data_ptr(),
                                    out.data.numel(), loomType(out.data), root, comm, nullptr),
                        "scatter");
                  out.writeBack();
                });
}

c10::intrusive_ptr<c10d::Work> LoomBackend::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                 int /*tag*/) {
  const at::Tensor t = single(tensors, "send").contiguous();
  loomComm_t comm = live("send");
  return pointToPoint(
      c10d::OpType::SEND, tensors,
      [t, dstRank, comm] {
        return loomSend(t.data_ptr(), t.numel(), loomType(t), dstRank, comm, nullptr);
      },
      "send");
}

c10::intrusive_ptr<c10d::Work> LoomBackend::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                 int /*tag*/) {
  const at::Tensor& t = single(tensors, "recv");
  if (!t.is_contiguous()) refuse("recv into a non-contiguous tensor");
  loomComm_t comm = live("recv");
  return pointToPoint(
      c10d::OpType::RECV, tensors,
      [t, srcRank, comm] {
        return loomRecv(t.data_ptr(), t.numel(), loomType(t), srcRank, comm, nullptr);
      },
      "recv");
}

c10::intrusive_ptr<c10d::Work> LoomBackend::barrier(const c10d::BarrierOptions& opts) {
  loomComm_t comm = live("barrier");
  return launch(c10d::OpType::BARRIER, {}, opts.asyncOp, [this, comm] {
    uint8_t token = 0;
    check(loomAllReduce(&token, &token, 1, loomUint8, loomMax, comm, nullptr), "barrier");
  });
}

void LoomBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  if (coalescing_) refuse("monitored_barrier inside a coalescing block");
  // After this rank's calls so far, as any call of the group.
  launch(c10d::OpType::BARRIER, {}, false, [] {})->wait();
  monitored_.pass(opts.timeout.count() >= 0 ? opts.timeout : timeout_, waitAllRanks);
}

void LoomBackend::startCoalescing() {
  // batch_isend_irecv: the calls until endCoalescing are collected and run
  // as one Loom group, so a pair that sends to each other cannot block.
  coalescing_ = true;
  coalesced_.clear();
  batch_.clear();
  batchWorks_.clear();
}

c10::intrusive_ptr<c10d::Work> LoomBackend::endCoalescing() {
  coalescing_ = false;
  p2p_->flush();
  auto work = c10::make_intrusive<LoomWork>(std::move(coalesced_), c10d::OpType::COALESCED);
  queue_.push([this, work, runs = std::move(batch_), works = std::move(batchWorks_)] {
    std::exception_ptr error;
    try {
      refuseIfAborted("this batch");
      grouped("coalesced batch", [&] {
        for (const auto& run : runs) run();
        return loomSuccess;
      });
    } catch (...) {
      error = std::current_exception();
    }
    for (const auto& w : works) w->complete(error);
    work->complete(error);
  });
  coalesced_.clear();
  batch_.clear();
  batchWorks_.clear();
  return work;
}

}  // namespace loom::torch_backend
