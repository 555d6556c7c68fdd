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
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <vector>

#include "model/param_store.h"
#include "parallel/group_comm.h"

namespace loom::train {

class GradientSync {
 public:
  GradientSync(ParamStore& store, GroupComm& dp, size_t bucketElements, bool zero,
               const loomCompression& compression);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  /// Sums gradients over the DP group (into the owned ranges under ZeRO-1).
  void reduceGradients();
  /// ZeRO-1: every rank receives the parameters the others updated. No-op otherwise.
  void gatherParameters();

  /// Where this rank's optimizer updates: the whole buffer, or its ZeRO shards.
  const std::vector<Range>& ownedRanges() const { return owned_; }
  /// Where this rank counts the gradient norm, so that each element is counted
  /// by exactly one DP rank: its shards under ZeRO-1, else all on DP rank 0.
  const std::vector<Range>& normRanges() const { return norm_; }
  const std::vector<Range>& buckets() const { return buckets_; }
  /// Gradient bytes one reduceGradients() call covers (before any encoding).
  uint64_t payloadBytes() const;

 private:
  ParamStore& store_;
  GroupComm& dp_;
  bool zero_;
  loomCompression compression_;
  std::vector<Range> buckets_;
  std::vector<Range> owned_;
  std::vector<Range> norm_;
  std::vector<loomErrorFeedback_t> feedback_;  ///< one per bucket when compressing
};

}  // namespace loom::train
