#include "collectives/plan.h"

#include <fmt/format.h>

#include <utility>

#include "core/names.h"

namespace loom {

namespace {

constexpr Named<Collective> kCollectiveNames[] = {{Collective::AllReduce, "AllReduce"},
                                                  {Collective::AllGather, "AllGather"},
                                                  {Collective::ReduceScatter, "ReduceScatter"},
                                                  {Collective::Broadcast, "Broadcast"},
                                                  {Collective::Reduce, "Reduce"},
                                                  {Collective::AllToAll, "AllToAll"},
                                                  {Collective::Gather, "Gather"},
                                                  {Collective::Scatter, "Scatter"},
                                                  {Collective::Send, "Send"},
                                                  {Collective::Recv, "Recv"}};

constexpr Named<Algorithm> kAlgorithmNames[] = {
    {Algorithm::Ring, "Ring"},        {Algorithm::Tree, "Tree"},
    {Algorithm::Direct, "Direct"},    {Algorithm::Pairwise, "Pairwise"},
    {Algorithm::Star, "Star"},        {Algorithm::Hierarchical, "Hierarchical"},
    {Algorithm::HostTree, "HostTree"}};

constexpr Named<StepKind> kStepKindNames[] = {{StepKind::Send, "Send"},
                                              {StepKind::Recv, "Recv"},
                                              {StepKind::RecvReduce, "RecvReduce"},
                                              {StepKind::RecvReduceSend, "RecvReduceSend"},
                                              {StepKind::RecvReduceCopySend, "RecvReduceCopySend"},
                                              {StepKind::RecvCopySend, "RecvCopySend"},
                                              {StepKind::Copy, "Copy"}};

/// The table's word for `value`, or "Type(number)" for a value it lacks.
template <typename E, size_t N>
std::string nameOrNumber(const Named<E> (&table)[N], E value, std::string_view type) {
  const std::string_view name = nameIn(table, value, "");
  return name.empty() ? fmt::format("{}({})", type, static_cast<int>(value)) : std::string(name);
}

}  // namespace

std::string toString(Collective c) { return nameOrNumber(kCollectiveNames, c, "Collective"); }

std::string toString(Algorithm a) { return nameOrNumber(kAlgorithmNames, a, "Algorithm"); }

std::string toString(StepKind k) { return nameOrNumber(kStepKindNames, k, "StepKind"); }

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

namespace {

/// How much of a buffer one rank's call uses.
enum class Extent { None, Count, All, CountAtRoot, AllAtRoot };

/// The extents of a collective's input and output. Only the root's input is
/// read by broadcast and scatter, and only its output written by reduce and
/// gather: other ranks may pass anything there.
std::pair<Extent, Extent> extentsOf(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return {Extent::Count, Extent::Count};
    case Collective::AllGather:
      return {Extent::Count, Extent::All};
    case Collective::ReduceScatter:
      return {Extent::All, Extent::Count};
    case Collective::Broadcast:
      return {Extent::CountAtRoot, Extent::Count};
    case Collective::Reduce:
      return {Extent::Count, Extent::CountAtRoot};
    case Collective::AllToAll:
      return {Extent::All, Extent::All};
    case Collective::Gather:
      return {Extent::Count, Extent::AllAtRoot};
    case Collective::Scatter:
      return {Extent::AllAtRoot, Extent::Count};
    case Collective::Send:
      return {Extent::Count, Extent::None};
    case Collective::Recv:
      return {Extent::None, Extent::Count};
  }
  return {Extent::None, Extent::None};
}

size_t elementsIn(Extent e, size_t count, int nranks, bool isRoot) {
  const size_t all = count * static_cast<size_t>(nranks);
  switch (e) {
    case Extent::None:
      return 0;
    case Extent::Count:
      return count;
    case Extent::All:
      return all;
    case Extent::CountAtRoot:
      return isRoot ? count : 0;
    case Extent::AllAtRoot:
      return isRoot ? all : 0;
  }
  return 0;
}

}  // namespace

size_t inputElements(Collective c, size_t count, int nranks, int rank, int root) {
  return elementsIn(extentsOf(c).first, count, nranks, rank == root);
}

size_t outputElements(Collective c, size_t count, int nranks, int rank, int root) {
  return elementsIn(extentsOf(c).second, count, nranks, rank == root);
}

bool stepReceives(StepKind k) { return k != StepKind::Send && k != StepKind::Copy; }

bool stepSends(StepKind k) {
  return k == StepKind::Send || k == StepKind::RecvReduceSend ||
         k == StepKind::RecvReduceCopySend || k == StepKind::RecvCopySend;
}

}  // namespace loom
