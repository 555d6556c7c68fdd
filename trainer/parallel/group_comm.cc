#include "parallel/group_comm.h"

namespace loom::train {

/// Adds the lifetime of the scope to the group's clock.
class GroupComm::Timed {
 public:
  explicit Timed(CommClock* clock) : clock_(clock), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    if (clock_ != nullptr) {
      clock_->add(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
  }

 private:
  CommClock* clock_;
  std::chrono::steady_clock::time_point start_;
};

GroupComm::GroupComm(loom::Comm comm, CommClock* clock) : comm_(std::move(comm)), clock_(clock) {
  rank_ = comm_.rank();
  size_ = comm_.size();
}

void GroupComm::allReduceSum(float* data, size_t count) { allReduceSum(data, count, nullptr); }

void GroupComm::allReduce(double* data, size_t count, loomRedOp_t op) {
  if (size_ == 1) return;
  Timed timed(clock_);
  loom::check(loomAllReduce(data, data, count, loomFloat64, op, raw(), nullptr));
}

void GroupComm::allReduceSum(float* data, size_t count, const loomCompression* compression) {
  if (size_ == 1) return;
  Timed timed(clock_);
  if (compression == nullptr || compression->kind == loomCompressNone) {
    loom::check(loomAllReduce(data, data, count, loomFloat32, loomSum, raw(), nullptr));
  } else {
    loom::check(
        loomAllReduceEx(data, data, count, loomFloat32, loomSum, compression, raw(), nullptr));
  }
}

void GroupComm::reduceScatterSum(float* data, size_t blockCount,
                                 const loomCompression* compression) {
  if (size_ == 1) return;
  Timed timed(clock_);
  float* mine = data + static_cast<size_t>(rank_) * blockCount;  // NCCL's in-place layout
  if (compression == nullptr || compression->kind == loomCompressNone) {
    loom::check(loomReduceScatter(data, mine, blockCount, loomFloat32, loomSum, raw(), nullptr));
  } else {
    loom::check(loomReduceScatterEx(data, mine, blockCount, loomFloat32, loomSum, compression,
                                    raw(), nullptr));
  }
}

void GroupComm::allGather(float* data, size_t blockCount) {
  if (size_ == 1) return;
  Timed timed(clock_);
  const float* mine = data + static_cast<size_t>(rank_) * blockCount;
  loom::check(loomAllGather(mine, data, blockCount, loomFloat32, raw(), nullptr));
}

void GroupComm::exchange(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) {
  if (sends.empty() && recvs.empty()) return;
  Timed timed(clock_);
  // Not loom::Group: its destructor would throw while a failed call unwinds.
  loom::check(loomGroupStart());
  loomResult_t first = loomSuccess;
  for (const Transfer& t : sends) {
    const loomResult_t r = loomSend(t.data, t.count, loomFloat32, t.peer, raw(), nullptr);
    if (first == loomSuccess) first = r;
  }
  for (const Transfer& t : recvs) {
    const loomResult_t r = loomRecv(t.data, t.count, loomFloat32, t.peer, raw(), nullptr);
    if (first == loomSuccess) first = r;
  }
  const loomResult_t ended = loomGroupEnd();
  loom::check(first);
  loom::check(ended);
}

uint64_t GroupComm::bytesSent() const {
  if (!comm_) return 0;
  loomCommStats stats{};
  loom::check(loomCommGetStats(raw(), &stats));
  return stats.bytesSent;
}

}  // namespace loom::train
