// Data-parallel gradient synchronisation over the DP group.
//
// The gradient buffer is cut into buckets (slices of at most `bucketElements`,
// never straddling a ParamStore segment, each a multiple of the DP size).
//   plain DP: each bucket is all-reduced; every rank updates every parameter.
//   ZeRO-1:   each bucket is reduce-scattered; rank r owns block r of every
//             bucket, keeps optimizer state only for it, and after the update
//             all-gathers the parameters.
// With --compress, each bucket's reduction is compressed in flight and has its
// own loomErrorFeedback: the residual belongs to that slice across steps.
//
// Overlap (the default with dp > 1): a worker thread owns the DP communicator
// during backward and reduces each bucket as soon as the last micro-batch's
// backward has finished it, while the rank's thread goes on computing. Buckets
// are reduced last to first in both modes, so overlap changes when, never
// what: results are bit-identical with and without it.
#pragma once

#include <loom/loom.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "model/param_store.h"
#include "parallel/compression_spec.h"
#include "parallel/group_comm.h"

namespace loom::train {

class GradientSync {
 public:
  GradientSync(ParamStore& store, GroupComm& dp, size_t bucketElements, bool zero,
               const loomCompression& compression, bool overlap = false);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  /// Overlap: before the backward pass of a step.
  void beginStep();
  /// Overlap: every gradient from element `offset` to the end of the last
  /// segment is final (earlier segments, such as the tied embedding, wait for
  /// reduceGradients). Buckets it completes start reducing at once.
  void gradientsFinalFrom(size_t offset);
  /// Sums gradients over the DP group (into the owned ranges under ZeRO-1):
  /// with overlap, reduces what is left and waits for the worker.
  void reduceGradients();
  /// ZeRO-1: every rank receives the parameters the others updated. No-op otherwise.
  void gatherParameters();
  /// Top-k: the kept fraction of the next step's reductions (the sparsity
  /// warm-up); from kDenseFromFraction on they are exact. Call between steps.
  void setKeptFraction(double ratio);

  /// Where this rank's optimizer updates: the whole buffer, or its ZeRO shards.
  const std::vector<Range>& ownedRanges() const { return owned_; }
  /// Where this rank counts the gradient norm, so that each element is counted
  /// by exactly one DP rank: its shards under ZeRO-1, else all on DP rank 0.
  const std::vector<Range>& normRanges() const { return norm_; }
  const std::vector<Range>& buckets() const { return buckets_; }
  /// Gradient bytes one reduceGradients() call covers (before any encoding).
  uint64_t payloadBytes() const;
  /// Buckets whose reduction the overlap worker began while backward still ran, so far.
  uint64_t bucketsStartedEarly() const { return startedEarly_.load(std::memory_order_relaxed); }

 private:
  ParamStore& store_;
  GroupComm& dp_;
  bool zero_;
  loomCompression compression_;
  bool exactThisStep_ = false;  ///< a dense warm-up step: no codec, residuals untouched
  std::vector<Range> buckets_;
  std::vector<Range> owned_;
  std::vector<Range> norm_;
  std::vector<loomErrorFeedback_t> feedback_;  ///< one per bucket when compressing

  void reduceBucket(size_t index);
  void workerLoop();
  bool bucketReady(size_t index) const;  ///< with mutex_ held

  // Overlap worker: reduces buckets_[next_], next_ counting down, once ready.
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t readyFrom_ = SIZE_MAX;  ///< gradients final from here (last segment only)
  bool allReady_ = false;
  size_t pending_ = 0;  ///< buckets not yet reduced this step
  bool stop_ = false;
  std::exception_ptr failure_;
  std::atomic<uint64_t> startedEarly_{0};
};

}  // namespace loom::train
