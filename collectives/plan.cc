#include "collectives/plan.h"

#include <fmt/format.h>

namespace loom {

std::string toString(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "AllReduce";
    case Collective::AllGather:
      return "AllGather";
    case Collective::ReduceScatter:
      return "ReduceScatter";
    case Collective::Broadcast:
      return "Broadcast";
    case Collective::Reduce:
      return "Reduce";
    case Collective::AllToAll:
      return "AllToAll";
    case Collective::Gather:
      return "Gather";
    case Collective::Scatter:
      return "Scatter";
    case Collective::Send:
      return "Send";
    case Collective::Recv:
      return "Recv";
  }
  return fmt::format("Collective({})", static_cast<int>(c));
}

std::string toString(Algorithm a) {
  switch (a) {
    case Algorithm::Ring:
      return "Ring";
    case Algorithm::Tree:
      return "Tree";
    case Algorithm::Direct:
      return "Direct";
    case Algorithm::Pairwise:
      return "Pairwise";
    case Algorithm::Star:
      return "Star";
    case Algorithm::Hierarchical:
      return "Hierarchical";
    case Algorithm::HostTree:
      return "HostTree";
  }
  return fmt::format("Algorithm({})", static_cast<int>(a));
}

std::string toString(StepKind k) {
  switch (k) {
    case StepKind::Send:
      return "Send";
    case StepKind::Recv:
      return "Recv";
    case StepKind::RecvReduce:
      return "RecvReduce";
    case StepKind::RecvReduceSend:
      return "RecvReduceSend";
    case StepKind::RecvReduceCopySend:
      return "RecvReduceCopySend";
    case StepKind::RecvCopySend:
      return "RecvCopySend";
    case StepKind::Copy:
      return "Copy";
  }
  return fmt::format("StepKind({})", static_cast<int>(k));
}

namespace {

std::string toString(BufferRef ref) {
  const char* name = ref.buffer == BufferId::Input    ? "in"
                     : ref.buffer == BufferId::Output ? "out"
                                                      : "scratch";
  return fmt::format("{}[{}]", name, ref.offset);
}

// Which operands a kind uses, so the printed form shows only meaningful fields.
bool readsSrc(StepKind k) { return k != StepKind::Recv && k != StepKind::RecvCopySend; }
bool writesDst(StepKind k) { return k != StepKind::Send && k != StepKind::RecvReduceSend; }

}  // namespace

std::string toString(const Step& s) {
  std::string out = toString(s.kind) + "(";
  if (stepReceives(s.kind)) out += fmt::format("from {}, ", s.recvPeer);
  if (stepSends(s.kind)) out += fmt::format("to {}, ", s.sendPeer);
  if (readsSrc(s.kind)) out += fmt::format("src {}, ", toString(s.src));
  if (writesDst(s.kind)) out += fmt::format("dst {}, ", toString(s.dst));
  out += fmt::format("count {}", s.count);
  if (s.finalize) out += ", finalize";
  if (s.channel != 0) out += fmt::format(", channel {}", s.channel);
  return out + ")";
}

std::string toString(const RankPlan& p) {
  std::string out;
  if (p.scratchElements > 0) out += fmt::format("scratch {} elements\n", p.scratchElements);
  for (size_t i = 0; i < p.streams.size(); ++i) {
    out += fmt::format("stream {}:\n", i);
    for (size_t j = 0; j < p.streams[i].size(); ++j) {
      out += fmt::format("  {}: {}\n", j, toString(p.streams[i][j]));
    }
  }
  return out;
}

size_t inputElements(Collective c, size_t count, int nranks, int rank, int root) {
  const size_t all = count * static_cast<size_t>(nranks);
  switch (c) {
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::Reduce:
    case Collective::Gather:
    case Collective::Send:
      return count;
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return all;
    // Only the root's send buffer is read; other ranks may pass anything.
    case Collective::Broadcast:
      return rank == root ? count : 0;
    case Collective::Scatter:
      return rank == root ? all : 0;
    case Collective::Recv:
      return 0;
  }
  return 0;
}

size_t outputElements(Collective c, size_t count, int nranks, int rank, int root) {
  const size_t all = count * static_cast<size_t>(nranks);
  switch (c) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
    case Collective::Broadcast:
    case Collective::Scatter:
    case Collective::Recv:
      return count;
    case Collective::AllGather:
    case Collective::AllToAll:
      return all;
    // Only the root's receive buffer is written.
    case Collective::Reduce:
      return rank == root ? count : 0;
    case Collective::Gather:
      return rank == root ? all : 0;
    case Collective::Send:
      return 0;
  }
  return 0;
}

bool stepReceives(StepKind k) { return k != StepKind::Send && k != StepKind::Copy; }

bool stepSends(StepKind k) {
  return k == StepKind::Send || k == StepKind::RecvReduceSend ||
         k == StepKind::RecvReduceCopySend || k == StepKind::RecvCopySend;
}

}  // namespace loom
