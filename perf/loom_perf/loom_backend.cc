#include "loom_backend.h"

#include <stdexcept>
#include <string>

namespace perf {
namespace {

loomDataType_t loomType(PerfType t) {
  switch (t) {
    case PerfType::Int8:
      return loomInt8;
    case PerfType::Uint8:
      return loomUint8;
    case PerfType::Int32:
      return loomInt32;
    case PerfType::Uint32:
      return loomUint32;
    case PerfType::Int64:
      return loomInt64;
    case PerfType::Uint64:
      return loomUint64;
    case PerfType::Half:
      return loomFloat16;
    case PerfType::Float:
      return loomFloat32;
    case PerfType::Double:
      return loomFloat64;
    case PerfType::Bf16:
      return loomBfloat16;
  }
  throw std::logic_error("bad PerfType");
}

loomRedOp_t loomOp(PerfOp op) {
  switch (op) {
    case PerfOp::Sum:
      return loomSum;
    case PerfOp::Prod:
      return loomProd;
    case PerfOp::Max:
      return loomMax;
    case PerfOp::Min:
      return loomMin;
    case PerfOp::Avg:
      return loomAvg;
  }
  throw std::logic_error("bad PerfOp");
}

}  // namespace

LoomBackend::LoomBackend(loomComm_t comm, std::string launch)
    : comm_(comm), launch_(std::move(launch)) {
  check(loomCommUserRank(comm_, &rank_), "loomCommUserRank");
  check(loomCommCount(comm_, &nranks_), "loomCommCount");
}

std::string LoomBackend::describe() const {
  int version = 0;
  loomGetVersion(&version);
  return "Loom " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
         "." + std::to_string(version % 100) + ", " + launch_;
}

void LoomBackend::check(loomResult_t result, const char* what) const {
  if (result == loomSuccess) return;
  throw std::runtime_error("rank " + std::to_string(rank_) + ": " + what + " failed: " +
                           loomGetErrorString(result) + ": " + loomGetLastError(comm_));
}

char* LoomBackend::allocRegistered(size_t bytes) {
  void* buffer = nullptr;
  check(loomMemAlloc(&buffer, bytes), "loomMemAlloc");
  void* handle = nullptr;
  const loomResult_t registered = loomCommRegister(comm_, buffer, bytes, &handle);
  if (registered != loomSuccess) loomMemFree(buffer);
  check(registered, "loomCommRegister");
  registrations_[static_cast<char*>(buffer)] = handle;
  return static_cast<char*>(buffer);
}

void LoomBackend::freeRegistered(char* buffer) {
  const auto it = registrations_.find(buffer);
  if (it == registrations_.end()) return;
  loomCommDeregister(comm_, it->second);
  registrations_.erase(it);
  loomMemFree(buffer);
}

void LoomBackend::run(const Call& call) {
  loomStream_t stream = stream_;
  const loomDataType_t type = loomType(call.type);
  const size_t n = call.count;
  switch (call.coll) {
    case Coll::AllReduce:
      check(loomAllReduce(call.input, call.output, n, type, loomOp(call.op), comm_, stream),
            "loomAllReduce");
      break;
    case Coll::AllGather:
      check(loomAllGather(call.input, call.output, n, type, comm_, stream), "loomAllGather");
      break;
    case Coll::ReduceScatter:
      check(loomReduceScatter(call.input, call.output, n, type, loomOp(call.op), comm_, stream),
            "loomReduceScatter");
      break;
    case Coll::Broadcast:
      check(loomBroadcast(call.input, call.output, n, type, call.root, comm_, stream),
            "loomBroadcast");
      break;
    case Coll::Reduce:
      check(loomReduce(call.input, call.output, n, type, loomOp(call.op), call.root, comm_, stream),
            "loomReduce");
      break;
    case Coll::AllToAll:
      check(loomAllToAll(call.input, call.output, n, type, comm_, stream), "loomAllToAll");
      break;
    case Coll::Gather:
      check(loomGather(call.input, call.output, n, type, call.root, comm_, stream), "loomGather");
      break;
    case Coll::Scatter:
      check(loomScatter(call.input, call.output, n, type, call.root, comm_, stream), "loomScatter");
      break;
    case Coll::SendRecv: {
      // A ring shift, as nccl-tests measures it: send to the next rank, receive from
      // the previous one, both in one group so neither waits for the other.
      const int next = (rank_ + 1) % nranks_;
      const int prev = (rank_ + nranks_ - 1) % nranks_;
      check(loomGroupStart(), "loomGroupStart");
      const loomResult_t sent = loomSend(call.input, n, type, next, comm_, stream);
      const loomResult_t received = loomRecv(call.output, n, type, prev, comm_, stream);
      const loomResult_t ended = loomGroupEnd();
      check(sent, "loomSend");
      check(received, "loomRecv");
      check(ended, "loomGroupEnd");
      break;
    }
  }
}

void LoomBackend::barrier() {
  float one = 1.0f;
  check(loomAllReduce(&one, &one, 1, loomFloat32, loomSum, comm_, nullptr),
        "loomAllReduce(barrier)");
}

double LoomBackend::combineTime(double seconds, AvgMode mode) {
  if (mode == AvgMode::RankZero) return seconds;
  const loomRedOp_t op = mode == AvgMode::Min ? loomMin : mode == AvgMode::Max ? loomMax : loomSum;
  double value = seconds;
  check(loomAllReduce(&value, &value, 1, loomFloat64, op, comm_, nullptr), "loomAllReduce(time)");
  return mode == AvgMode::Mean ? value / nranks_ : value;
}

int64_t LoomBackend::sumOverRanks(int64_t value) {
  check(loomAllReduce(&value, &value, 1, loomInt64, loomSum, comm_, nullptr),
        "loomAllReduce(count)");
  return value;
}

int64_t LoomBackend::bytesSentSoFar() {
  loomCommStats stats{};
  check(loomCommGetStats(comm_, &stats), "loomCommGetStats");
  return static_cast<int64_t>(stats.bytesSent);
}

}  // namespace perf
