#include "collectives/plan.h"

#include <fmt/format.h>

#include <iterator>
#include <utility>

#include "core/names.h"

namespace loom {

namespace {

/// How much of a buffer one rank's call uses.
enum class Extent { None, Count, All, CountAtRoot, AllAtRoot };

/// A collective's name and the extents of its input and output. Only the
/// root's input is read by broadcast and scatter, and only its output written
/// by reduce and gather: other ranks may pass anything there.
struct CollectiveShape {
  Collective collective;
  std::string_view name;
  Extent input;
  Extent output;
};

// Rows in the enum's order, so a collective's row is found by its value.
constexpr CollectiveShape kShapes[] = {
    {Collective::AllReduce, "AllReduce", Extent::Count, Extent::Count},
    {Collective::AllGather, "AllGather", Extent::Count, Extent::All},
    {Collective::ReduceScatter, "ReduceScatter", Extent::All, Extent::Count},
    {Collective::Broadcast, "Broadcast", Extent::CountAtRoot, Extent::Count},
    {Collective::Reduce, "Reduce", Extent::Count, Extent::CountAtRoot},
    {Collective::AllToAll, "AllToAll", Extent::All, Extent::All},
    {Collective::Gather, "Gather", Extent::Count, Extent::AllAtRoot},
    {Collective::Scatter, "Scatter", Extent::AllAtRoot, Extent::Count},
    {Collective::Send, "Send", Extent::Count, Extent::None},
    {Collective::Recv, "Recv", Extent::None, Extent::Count}};
static_assert([] {
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    if (static_cast<size_t>(kShapes[i].collective) != i) return false;
  }
  return true;
}());

/// The row of the shape table for `c` (validated callers: c is a Collective).
const CollectiveShape* shapeOf(Collective c) {
  const auto i = static_cast<size_t>(c);
  return i < std::size(kShapes) ? &kShapes[i] : nullptr;
}

size_t elementsIn(Extent e, size_t count, int nranks, bool isRoot) {
  const bool rootOnly = e == Extent::CountAtRoot || e == Extent::AllAtRoot;
  if (e == Extent::None || (rootOnly && !isRoot)) return 0;
  const bool wholeWorld = e == Extent::All || e == Extent::AllAtRoot;
  return wholeWorld ? count * static_cast<size_t>(nranks) : count;
}

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

std::string_view collectiveName(Collective c) {
  const CollectiveShape* shape = shapeOf(c);
  return shape != nullptr ? shape->name : "?";
}

std::string toString(Collective c) {
  const CollectiveShape* shape = shapeOf(c);
  return shape != nullptr ? std::string(shape->name)
                          : fmt::format("Collective({})", static_cast<int>(c));
}

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

size_t inputElements(Collective c, size_t count, int nranks, int rank, int root) {
  const CollectiveShape* shape = shapeOf(c);
  return shape != nullptr ? elementsIn(shape->input, count, nranks, rank == root) : 0;
}

size_t outputElements(Collective c, size_t count, int nranks, int rank, int root) {
  const CollectiveShape* shape = shapeOf(c);
  return shape != nullptr ? elementsIn(shape->output, count, nranks, rank == root) : 0;
}

bool stepReceives(StepKind k) { return k != StepKind::Send && k != StepKind::Copy; }

bool stepSends(StepKind k) {
  return k == StepKind::Send || k == StepKind::RecvReduceSend ||
         k == StepKind::RecvReduceCopySend || k == StepKind::RecvCopySend;
}

}  // namespace loom
