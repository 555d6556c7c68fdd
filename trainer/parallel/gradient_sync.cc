#include "parallel/gradient_sync.h"

#include <algorithm>

namespace loom::train {

GradientSync::GradientSync(ParamStore& store, GroupComm& dp, size_t bucketElements, bool zero,
                           const loomCompression& compression)
    : store_(store), dp_(dp), zero_(zero), compression_(compression) {
  const size_t n = static_cast<size_t>(dp.size());
  const size_t bucket = std::max<size_t>(1, (bucketElements + n - 1) / n) * n;
  for (const Range& segment : store.segments()) {  // padded to a multiple of n
    for (size_t begin = segment.begin; begin < segment.end; begin += bucket) {
      buckets_.push_back({begin, std::min(segment.end, begin + bucket)});
    }
  }
  for (const Range& b : buckets_) {
    if (zero_) {
      const size_t block = b.size() / n;
      const size_t mine = b.begin + static_cast<size_t>(dp.rank()) * block;
      owned_.push_back({mine, mine + block});
    } else {
      owned_.push_back(b);
    }
  }
  norm_ = zero_ || dp.rank() == 0 ? owned_ : std::vector<Range>{};
  if (dp.size() > 1 && compression_.kind != loomCompressNone) {
    for (const Range& b : buckets_) {
      loomErrorFeedback_t fb = nullptr;
      loom::check(loomErrorFeedbackCreate(&fb, b.size()));
      feedback_.push_back(fb);
    }
  }
}

GradientSync::~GradientSync() {
  for (loomErrorFeedback_t fb : feedback_) loomErrorFeedbackDestroy(fb);
}

void GradientSync::reduceGradients() {
  float* grads = store_.grads().data();
  for (size_t i = 0; i < buckets_.size(); ++i) {
    const Range& b = buckets_[i];
    loomCompression c = compression_;
    if (!feedback_.empty()) c.feedback = feedback_[i];
    if (zero_) {
      dp_.reduceScatterSum(grads + b.begin, b.size() / dp_.size(), &c);
    } else {
      dp_.allReduceSum(grads + b.begin, b.size(), &c);
    }
  }
}

void GradientSync::gatherParameters() {
  if (!zero_) return;
  float* values = store_.values().data();
  for (const Range& b : buckets_) dp_.allGather(values + b.begin, b.size() / dp_.size());
}

uint64_t GradientSync::payloadBytes() const {
  if (dp_.size() == 1) return 0;
  uint64_t elements = 0;
  for (const Range& b : buckets_) elements += b.size();
  return elements * sizeof(float);
}

}  // namespace loom::train
