#include "mpi_backend.h"

#include <climits>
#include <stdexcept>
#include <string>

namespace perf {
namespace {

MPI_Datatype mpiType(PerfType t) {
  switch (t) {
    case PerfType::Int8:
      return MPI_INT8_T;
    case PerfType::Uint8:
      return MPI_UINT8_T;
    case PerfType::Int32:
      return MPI_INT32_T;
    case PerfType::Uint32:
      return MPI_UINT32_T;
    case PerfType::Int64:
      return MPI_INT64_T;
    case PerfType::Uint64:
      return MPI_UINT64_T;
    case PerfType::Float:
      return MPI_FLOAT;
    case PerfType::Double:
      return MPI_DOUBLE;
    default:
      throw std::logic_error("no MPI type for " + std::string(typeName(t)));
  }
}

MPI_Op mpiOp(PerfOp op) {
  switch (op) {
    case PerfOp::Sum:
      return MPI_SUM;
    case PerfOp::Prod:
      return MPI_PROD;
    case PerfOp::Max:
      return MPI_MAX;
    case PerfOp::Min:
      return MPI_MIN;
    default:
      throw std::logic_error("no MPI op for " + std::string(opName(op)));
  }
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, len));
}

}  // namespace

MpiBackend::MpiBackend() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
  // Errors come back as codes so run() can name the call instead of aborting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

std::string MpiBackend::describe() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string text(version, len);
  if (const size_t eol = text.find_first_of(",\n"); eol != std::string::npos) text.resize(eol);
  return text + ", " + std::to_string(nranks_) + " processes";
}

std::string MpiBackend::unsupported(Coll c, PerfType t, PerfOp op) const {
  switch (c) {
    case Coll::SendRecv:
    case Coll::Gather:
    case Coll::Scatter:
      return std::string(collName(c)) + " is not measured by mpi_perf";
    default:
      break;
  }
  if (t == PerfType::Half || t == PerfType::Bf16) {
    return "MPI has no standard " + std::string(typeName(t)) + " type";
  }
  if (collReduces(c) && op == PerfOp::Avg) return "MPI has no avg reduction";
  return {};
}

// MPI's in-place forms differ from loom's in two places: reduce_scatter_block leaves
// this rank's block at the start of the (full-size) receive buffer, and broadcast
// only ever has one buffer.
Layout MpiBackend::layout(Coll c, bool inPlace, char* send, char* recv, size_t count,
                          size_t typeBytes, int root) const {
  if (c == Coll::Broadcast) return {recv, recv};
  if (!inPlace) return {send, recv};
  switch (c) {
    case Coll::AllGather:
      return {recv + rank_ * count * typeBytes, recv};
    default:
      return {recv, recv};  // allreduce, reduce, reduce_scatter_block, alltoall
  }
}

void MpiBackend::run(const Call& call) {
  if (call.count > static_cast<size_t>(INT_MAX)) {
    throw std::runtime_error("count " + std::to_string(call.count) + " exceeds MPI's int");
  }
  const int count = static_cast<int>(call.count);
  const MPI_Datatype type = mpiType(call.type);
  const void* in = call.inPlace ? MPI_IN_PLACE : call.input;
  switch (call.coll) {
    case Coll::AllReduce:
      check(MPI_Allreduce(in, call.output, count, type, mpiOp(call.op), MPI_COMM_WORLD),
            "MPI_Allreduce");
      break;
    case Coll::AllGather:
      check(MPI_Allgather(in, count, type, call.output, count, type, MPI_COMM_WORLD),
            "MPI_Allgather");
      break;
    case Coll::ReduceScatter:
      check(MPI_Reduce_scatter_block(in, call.output, count, type, mpiOp(call.op), MPI_COMM_WORLD),
            "MPI_Reduce_scatter_block");
      break;
    case Coll::Broadcast:
      check(MPI_Bcast(call.output, count, type, call.root, MPI_COMM_WORLD), "MPI_Bcast");
      break;
    case Coll::Reduce:
      // MPI_IN_PLACE is only legal at the root; the others just send.
      check(MPI_Reduce(call.inPlace && rank_ == call.root ? MPI_IN_PLACE : call.input, call.output,
                       count, type, mpiOp(call.op), call.root, MPI_COMM_WORLD),
            "MPI_Reduce");
      break;
    case Coll::AllToAll:
      check(MPI_Alltoall(in, count, type, call.output, count, type, MPI_COMM_WORLD),
            "MPI_Alltoall");
      break;
    default:
      throw std::logic_error("unsupported collective in mpi_perf");
  }
}

void MpiBackend::barrier() {
  float one = 1.0f;
  check(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce(barrier)");
}

double MpiBackend::combineTime(double seconds, AvgMode mode) {
  if (mode == AvgMode::RankZero) return seconds;
  const MPI_Op op = mode == AvgMode::Min ? MPI_MIN : mode == AvgMode::Max ? MPI_MAX : MPI_SUM;
  double result = 0;
  check(MPI_Allreduce(&seconds, &result, 1, MPI_DOUBLE, op, MPI_COMM_WORLD), "MPI_Allreduce(time)");
  return mode == AvgMode::Mean ? result / nranks_ : result;
}

int64_t MpiBackend::sumOverRanks(int64_t value) {
  int64_t result = 0;
  check(MPI_Allreduce(&value, &result, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce(count)");
  return result;
}

}  // namespace perf
