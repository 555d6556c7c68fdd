#include "parallel/gradient_sync.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace loom::train {

GradientSync::GradientSync(ParamStore& store, GroupComm& dp, size_t bucketElements, bool zero,
                           const loomCompression& compression, bool overlap)
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
  if (overlap && dp.size() > 1) worker_ = std::thread([this] { workerLoop(); });
}

GradientSync::~GradientSync() {
  if (worker_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  for (loomErrorFeedback_t fb : feedback_) loomErrorFeedbackDestroy(fb);
}

void GradientSync::reduceBucket(size_t index) {
  float* grads = store_.grads().data();
  const Range& b = buckets_[index];
  loomCompression c = exactThisStep_ ? loomCompression{} : compression_;
  if (!feedback_.empty() && !exactThisStep_) c.feedback = feedback_[index];
  // Top-k under ZeRO-1 all-reduces too: a compressed reduce-scatter would
  // select again from the owner's sum and drop the rest with no residual to
  // keep it, and the sparse all-gather all-reduce moves the exact sum of what
  // was selected. The rank then uses its own block, as after a reduce-scatter.
  if (zero_ && c.kind != loomCompressTopK) {
    dp_.reduceScatterSum(grads + b.begin, b.size() / dp_.size(), &c);
  } else {
    dp_.allReduceSum(grads + b.begin, b.size(), &c);
  }
}

void GradientSync::setKeptFraction(double ratio) {
  exactThisStep_ = ratio >= kDenseFromFraction;
  compression_.ratio = ratio;
}

void GradientSync::beginStep() {
  if (!worker_.joinable()) return;
  std::lock_guard lock(mutex_);
  readyFrom_ = SIZE_MAX;
  allReady_ = false;
  pending_ = buckets_.size();
  changed_.notify_all();
}

void GradientSync::gradientsFinalFrom(size_t offset) {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    readyFrom_ = std::min(readyFrom_, offset);
  }
  changed_.notify_all();
}

bool GradientSync::bucketReady(size_t index) const {
  const Range& b = buckets_[index];
  return allReady_ || (b.begin >= store_.segments().back().begin && b.begin >= readyFrom_);
}

// Every DP rank reduces the buckets in the same order (last to first), so the
// collectives match across ranks whatever each rank's backward timing.
void GradientSync::workerLoop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || (pending_ > 0 && bucketReady(pending_ - 1)); });
    if (stop_) return;
    const size_t index = pending_ - 1;
    if (!allReady_) startedEarly_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    std::exception_ptr failed;
    try {
      reduceBucket(index);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    if (failed) {
      failure_ = failed;
      pending_ = 0;  // the step is lost; reduceGradients reports why
    } else {
      --pending_;
    }
    changed_.notify_all();
  }
}

void GradientSync::reduceGradients() {
  if (!worker_.joinable()) {
    for (size_t i = buckets_.size(); i-- > 0;) reduceBucket(i);
    return;
  }
  // The rank's thread waits here for the buckets backward did not hide: that
  // wait is the data-parallel communication the step still pays for.
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  allReady_ = true;
  changed_.notify_all();
  changed_.wait(lock, [&] { return pending_ == 0; });
  dp_.addWaitTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
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
