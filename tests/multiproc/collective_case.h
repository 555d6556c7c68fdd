// One collective call as a test case: which collective, type, op, count,
// layout and root; how every rank runs it and checks what it got.
#ifndef LOOM_TESTS_MULTIPROC_COLLECTIVE_CASE_H_
#define LOOM_TESTS_MULTIPROC_COLLECTIVE_CASE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "reference.h"

namespace loomtest {

enum class Coll {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter,
  SendRecv,  ///< every rank sends to both ring neighbours and receives from both, in one group
};

const char* collName(Coll coll);
bool isReducing(Coll coll);
bool hasRoot(Coll coll);
/// Collectives with a C API in-place layout (gather and scatter: the root's
/// recvbuff/sendbuff holds the other buffer as block `rank`).
bool hasInPlace(Coll coll);

struct Case {
  Coll coll = Coll::AllReduce;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;  ///< ignored by collectives that do not reduce
  size_t count = 0;          ///< the count argument of the call
  bool inPlace = false;
  int root = 0;
  Pattern pattern = Pattern::SmallInts;
  uint64_t seed = 0;
};

std::string caseName(const Case& c);

/// How much of the type x op x count matrix a configuration runs.
enum class Scope {
  Full,     ///< every type and op on small counts, plus large counts for a few
  Reduced,  ///< fewer types and ops: slow launches (processes over tcp), extra algorithms
};

/// The cases every rank runs, in the same order on all ranks.
std::vector<Case> makeCases(Coll coll, int nranks, Scope scope);

struct CaseResult {
  std::string error;   ///< mismatch description, "" if the rank's results were right
  bool fatal = false;  ///< the call itself failed: later calls would not match up across ranks
  std::string report;  ///< for all-reduce: a hash of the result, compared across ranks
};

/// Runs one case on this rank and checks its output against the reference,
/// the guards around every buffer, and every byte the call must not touch.
CaseResult runCase(const Case& c, int rank, int nranks, loomComm_t comm);

}  // namespace loomtest

#endif  // LOOM_TESTS_MULTIPROC_COLLECTIVE_CASE_H_
