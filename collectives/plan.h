// Plans: what one rank does in one collective, as plain data.
//
// A plan is, per rank, one or more streams of steps. Steps of one stream run
// in order; streams progress independently (the two trees of a double binary
// tree, the members of a group). A step names peers, buffers and element
// ranges; it says nothing of sockets or shared memory. The executor cuts every
// step into slices of at most one link slot and runs slice i of every step of
// a stream before slice i+1 ("slice-outer"), which pipelines rings and trees
// and keeps every FIFO bounded. Both ends of a transfer derive the same slice
// sizes because a Send and its matching Recv always have the same count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

enum class Collective : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter,
  Send,
  Recv,
};

enum class Algorithm : uint8_t {
  Ring,
  Tree,      // double binary tree
  Direct,    // one-host shared arena (not a step plan; see collectives/executor/direct_*)
  Pairwise,  // all-to-all, send/recv
  Star,      // gather/scatter through the root
  // All-reduce across hosts in three phases: ring reduce-scatter inside each
  // host, ring all-reduce of each shard across hosts, ring all-gather inside
  // each host (hierarchicalAllReduce; not one plan).
  Hierarchical,
  // All-reduce across hosts for small messages: chain reduce inside each host
  // to its first rank, double binary tree among those, chain broadcast inside
  // each host (hostTreeAllReduce; not one plan).
  HostTree,
};

enum class BufferId : uint8_t { Input, Output, Scratch };

enum class StepKind : uint8_t {
  Send,                // send src -> sendPeer
  Recv,                // recvPeer -> dst
  RecvReduce,          // dst = src (+) recv
  RecvReduceSend,      // send (src (+) recv) -> sendPeer
  RecvReduceCopySend,  // dst = src (+) recv; send dst -> sendPeer
  RecvCopySend,        // dst = recv; send recv -> sendPeer
  Copy,                // dst = src (local)
};

struct BufferRef {
  BufferId buffer = BufferId::Input;
  size_t offset = 0;  // in elements
};

struct Step {
  StepKind kind = StepKind::Copy;
  int sendPeer = -1;
  int recvPeer = -1;
  BufferRef src{};   // local operand: what Send/Copy read, what reductions combine with
  BufferRef dst{};   // where Recv*/Copy/RecvReduce*/RecvCopySend write
  size_t count = 0;  // elements
  // Apply the op's final transform (avg: divide by nranks) to the reduced
  // value before it is stored or sent. Set on the step that completes a reduction.
  bool finalize = false;
  // Which of the rank's link sets the step's messages use. Every step of a
  // stream names the same channel; streams of different channels run as
  // independent cursors, so they must not share a link set.
  uint8_t channel = 0;
};

struct RankPlan {
  std::vector<std::vector<Step>> streams;
  size_t scratchElements = 0;
};

/// What an algorithm needs to know to emit one rank's plan. Counts follow the
/// C API: AllReduce/Broadcast/Reduce/Send/Recv `count` elements; AllGather and
/// Gather `count` per rank (output nranks*count); ReduceScatter and Scatter
/// `count` per rank (input nranks*count); AllToAll `count` per peer.
struct PlanRequest {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  int rank = 0;
  int nranks = 1;
  int root = 0;  // root, or the peer for Send/Recv
  size_t count = 0;
  bool inPlace = false;  // input and output are the same memory
  /// Independent link sets to spread the data over (ring all-reduce,
  /// all-gather, reduce-scatter): piece k of the count runs as its own ring on
  /// channel k.
  int channels = 1;
};

/// Whether a step of kind `k` takes a message from recvPeer / gives one to sendPeer.
bool stepReceives(StepKind k);
bool stepSends(StepKind k);

/// "AllReduce", ...: the name toString prints, without building a string.
std::string_view collectiveName(Collective c);
std::string toString(Collective c);
std::string toString(Algorithm a);
std::string toString(StepKind k);
std::string toString(const Step& s);
std::string toString(const RankPlan& p);

/// Elements of the input and output buffers a collective touches on this rank.
size_t inputElements(Collective c, size_t count, int nranks, int rank, int root);
size_t outputElements(Collective c, size_t count, int nranks, int rank, int root);

}  // namespace loom
