#include "loom_backend.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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

LoomBackend::LoomBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::chrono::milliseconds timeout)
    : Backend(rank, size) {
  // Loom's deadline for every wait comes from init_process_group(timeout=...)
  // unless the user set LOOM_TIMEOUT (seconds) themselves.
  if (std::getenv("LOOM_TIMEOUT") == nullptr) {
    const auto seconds = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(static_cast<double>(timeout.count()) / 1000.0)));
    setenv("LOOM_TIMEOUT", std::to_string(seconds).c_str(), 0);
  }
  // Each process group hands its own (prefixed) store: one id per group.
  const std::string key = "loom/unique_id";
  loomUniqueId id{};
  if (rank == 0) {
    check(loomGetUniqueId(&id), "loomGetUniqueId");
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
  const loomResult_t result = loomCommInitRank(&made, size, id, rank);
  if (result != loomSuccess) {
    C10_THROW_ERROR(DistBackendError, std::string("loom backend: rank ") + std::to_string(rank) +
                                          " of " + std::to_string(size) +
                                          " could not join: " + loomGetLastError(nullptr));
  }
  comm_ = made;
}

LoomBackend::~LoomBackend() { shutdown(); }

void LoomBackend::shutdown() {
  for (auto& [key, entry] : feedback_) loomErrorFeedbackDestroy(entry.first);
  feedback_.clear();
  if (comm_ != nullptr) loomCommDestroy(comm_);
  comm_ = nullptr;
}

void LoomBackend::compressedAverage(at::Tensor& tensor, const loomCompression& codec, bool feedback,
                                    int64_t key) {
  requireCpu(tensor, "compressed all_reduce");
  if (!tensor.is_contiguous()) refuse("compressed all_reduce of a non-contiguous tensor");
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
                        loomAvg, &call, live("compressed all_reduce"), nullptr),
        "compressed all_reduce");
}

void LoomBackend::abort() {
  if (comm_ != nullptr) loomCommAbort(comm_);
  comm_ = nullptr;
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
  const char* detail = loomGetLastError(comm_);
  const std::string message =
      std::string("loom backend: ") + what + " failed on rank " + std::to_string(getRank()) + ": " +
      (detail != nullptr && *detail != '\0' ? detail : loomGetErrorString(result));
  if (result == loomInvalidArgument) C10_THROW_ERROR(ValueError, message);
  C10_THROW_ERROR(DistBackendError, message);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  Dense t(single(tensors, "broadcast"));
  check(loomBroadcast(t.data.data_ptr(), t.data.data_ptr(), t.data.numel(), loomType(t.data),
                      static_cast<int>(opts.rootRank), live("broadcast"), nullptr),
        "broadcast");
  t.writeBack();
  return done(tensors, c10d::OpType::BROADCAST);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  Dense t(single(tensors, "all_reduce"));
  const loomRedOp_t op = loomOp(opts.reduceOp, t.data);
  premultiply(opts.reduceOp, t.data);
  check(loomAllReduce(t.data.data_ptr(), t.data.data_ptr(), t.data.numel(), loomType(t.data), op,
                      live("all_reduce"), nullptr),
        "all_reduce");
  t.writeBack();
  return done(tensors, c10d::OpType::ALLREDUCE);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  // One Loom group: every rank enqueues the same list, which runs as a batch.
  std::vector<Dense> dense;
  dense.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    requireCpu(t, "all_reduce_coalesced");
    dense.emplace_back(t);
    premultiply(opts.reduceOp, dense.back().data);
  }
  loomComm_t comm = live("all_reduce_coalesced");
  grouped("all_reduce_coalesced", [&] {
    for (Dense& d : dense) {
      const loomResult_t r =
          loomAllReduce(d.data.data_ptr(), d.data.data_ptr(), d.data.numel(), loomType(d.data),
                        loomOp(opts.reduceOp, d.data), comm, nullptr);
      if (r != loomSuccess) return r;
    }
    return loomSuccess;
  });
  for (Dense& d : dense) d.writeBack();
  return done(tensors, c10d::OpType::ALLREDUCE_COALESCED);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::reduce(std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOptions& opts) {
  Dense t(single(tensors, "reduce"));
  const loomRedOp_t op = loomOp(opts.reduceOp, t.data);
  premultiply(opts.reduceOp, t.data);
  check(loomReduce(t.data.data_ptr(), t.data.data_ptr(), t.data.numel(), loomType(t.data), op,
                   static_cast<int>(opts.rootRank), live("reduce"), nullptr),
        "reduce");
  t.writeBack();
  return done(tensors, c10d::OpType::REDUCE);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions&) {
  requireCpu(input, "all_gather_into_tensor input");
  requireCpu(output, "all_gather_into_tensor output");
  sameLayout(input, output, "all_gather_into_tensor");
  if (output.numel() != input.numel() * getSize()) {
    refuse("all_gather_into_tensor: output has " + std::to_string(output.numel()) +
           " elements, expected " + std::to_string(input.numel()) + " x " +
           std::to_string(getSize()));
  }
  const at::Tensor in = input.contiguous();
  Dense out(output);
  check(loomAllGather(in.data_ptr(), out.data.data_ptr(), in.numel(), loomType(in),
                      live("all_gather_into_tensor"), nullptr),
        "all_gather_into_tensor");
  out.writeBack();
  return done({output}, c10d::OpType::_ALLGATHER_BASE);
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
  at::Tensor in = inputs[0];
  _allgather_base(flat, in, opts);
  for (int r = 0; r < getSize(); ++r) {
    outputs[0][r].copy_(flat.narrow(0, r * input.numel(), input.numel()).view_as(outputs[0][r]));
  }
  return done(outputs[0], c10d::OpType::ALLGATHER);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  if (outputs.size() != inputs.size())
    refuse("all_gather_into_tensor_coalesced: list lengths differ");
  for (size_t i = 0; i < inputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
  return done(outputs, c10d::OpType::COALESCED);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  requireCpu(input, "reduce_scatter_tensor input");
  requireCpu(output, "reduce_scatter_tensor output");
  sameLayout(input, output, "reduce_scatter_tensor");
  if (input.numel() != output.numel() * getSize()) {
    refuse("reduce_scatter_tensor: input has " + std::to_string(input.numel()) +
           " elements, expected " + std::to_string(output.numel()) + " x " +
           std::to_string(getSize()));
  }
  at::Tensor in = input.contiguous();
  if (opts.reduceOp.op_ == c10d::ReduceOp::PREMUL_SUM) {
    in = in.clone();  // the caller's input stays untouched
    premultiply(opts.reduceOp, in);
  }
  Dense out(output);
  check(loomReduceScatter(in.data_ptr(), out.data.data_ptr(), out.data.numel(), loomType(in),
                          loomOp(opts.reduceOp, in), live("reduce_scatter_tensor"), nullptr),
        "reduce_scatter_tensor");
  out.writeBack();
  return done({output}, c10d::OpType::_REDUCE_SCATTER_BASE);
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
  at::Tensor joined = at::cat(flat);
  _reduce_scatter_base(output, joined, opts);
  return done(outputs, c10d::OpType::REDUCE_SCATTER);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  if (outputs.size() != inputs.size())
    refuse("reduce_scatter_tensor_coalesced: list lengths differ");
  for (size_t i = 0; i < inputs.size(); ++i) _reduce_scatter_base(outputs[i], inputs[i], opts);
  return done(outputs, c10d::OpType::COALESCED);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplits,
                                                          std::vector<int64_t>& inputSplits,
                                                          const c10d::AllToAllOptions&) {
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
  const auto rowsOf = [&](const std::vector<int64_t>& splits, const at::Tensor& t, int peer) {
    if (splits.empty()) return (t.dim() == 0 ? 1 : t.size(0)) / n;
    return splits[static_cast<size_t>(peer)];
  };
  for (const auto* splits : {&inputSplits, &outputSplits}) {
    if (!splits->empty() && static_cast<int>(splits->size()) != n) {
      refuse("all_to_all_single: split sizes have " + std::to_string(splits->size()) +
             " entries for " + std::to_string(n) + " ranks");
    }
  }
  if (inputSplits.empty() && outputSplits.empty()) {
    if (in.numel() % n != 0 || in.numel() != out.data.numel()) {
      refuse("all_to_all_single: " + std::to_string(in.numel()) + " input and " +
             std::to_string(out.data.numel()) + " output elements do not split evenly over " +
             std::to_string(n) + " ranks");
    }
    check(loomAllToAll(in.data_ptr(), out.data.data_ptr(), in.numel() / n, loomType(in),
                       live("all_to_all_single"), nullptr),
          "all_to_all_single");
  } else {
    // Uneven splits: a group of sends and receives, one pair per peer.
    const size_t es = in.element_size();
    const auto* from = static_cast<const char*>(in.data_ptr());
    auto* to = static_cast<char*>(out.data.data_ptr());
    loomComm_t comm = live("all_to_all_single");
    grouped("all_to_all_single", [&] {
      int64_t inAt = 0;
      int64_t outAt = 0;
      for (int p = 0; p < n; ++p) {
        const int64_t sendCount = rowsOf(inputSplits, in, p) * inRow;
        const int64_t recvCount = rowsOf(outputSplits, out.data, p) * outRow;
        const loomResult_t r = exchange(from + inAt * es, sendCount, to + outAt * es, recvCount,
                                        loomType(in), p, comm);
        if (r != loomSuccess) return r;
        inAt += sendCount;
        outAt += recvCount;
      }
      return loomSuccess;
    });
  }
  out.writeBack();
  return done({output}, c10d::OpType::ALLTOALL_BASE);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions&) {
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
  grouped("all_to_all", [&] {
    for (int p = 0; p < n; ++p) {
      const loomResult_t r = exchange(ins[p].data_ptr(), ins[p].numel(), outs[p].data.data_ptr(),
                                      outs[p].data.numel(), loomType(ins[p]), p, comm);
      if (r != loomSuccess) return r;
    }
    return loomSuccess;
  });
  for (Dense& d : outs) d.writeBack();
  return done(outputs, c10d::OpType::ALLTOALL);
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
  check(loomGather(input.data_ptr(), atRoot ? flat.data_ptr() : nullptr, input.numel(),
                   loomType(input), root, live("gather"), nullptr),
        "gather");
  if (atRoot) {
    for (int r = 0; r < getSize(); ++r) {
      outputs[0][r].copy_(flat.narrow(0, r * input.numel(), input.numel()).view_as(outputs[0][r]));
    }
  }
  return done(atRoot ? outputs[0] : std::vector<at::Tensor>{}, c10d::OpType::GATHER);
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
  check(loomScatter(atRoot ? flat.data_ptr() : nullptr, out.data.data_ptr(), out.data.numel(),
                    loomType(out.data), root, live("scatter"), nullptr),
        "scatter");
  out.writeBack();
  return done(outputs, c10d::OpType::SCATTER);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                 int /*tag*/) {
  const at::Tensor t = single(tensors, "send").contiguous();
  const loomResult_t result =
      loomSend(t.data_ptr(), t.numel(), loomType(t), dstRank, live("send"), nullptr);
  // In a batch the send runs at endCoalescing: keep what it reads alive till then.
  if (coalescing_) coalesced_.push_back(t);
  check(result, "send");
  return done(tensors, c10d::OpType::SEND);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                 int /*tag*/) {
  const at::Tensor& t = single(tensors, "recv");
  if (!t.is_contiguous()) refuse("recv into a non-contiguous tensor");
  const loomResult_t result =
      loomRecv(t.data_ptr(), t.numel(), loomType(t), srcRank, live("recv"), nullptr);
  if (coalescing_) coalesced_.push_back(t);
  check(result, "recv");
  return done(tensors, c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> LoomBackend::barrier(const c10d::BarrierOptions&) {
  uint8_t token = 0;
  check(loomAllReduce(&token, &token, 1, loomUint8, loomMax, live("barrier"), nullptr), "barrier");
  return done({}, c10d::OpType::BARRIER);
}

void LoomBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool /*waitAllRanks*/) {
  barrier(opts);
}

void LoomBackend::startCoalescing() {
  // batch_isend_irecv: the sends and receives between start and end run as one
  // Loom group, so a pair that sends to each other cannot block.
  check(loomGroupStart(), "start of a coalesced batch");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> LoomBackend::endCoalescing() {
  coalescing_ = false;
  check(loomGroupEnd(), "coalesced batch");
  return done(std::move(coalesced_), c10d::OpType::COALESCED);
}

}  // namespace loom::torch_backend
