#include "collective_case.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "guarded_buffer.h"

namespace loomtest {

const char* collName(Coll coll) {
  switch (coll) {
    case Coll::AllReduce:
      return "AllReduce";
    case Coll::AllGather:
      return "AllGather";
    case Coll::ReduceScatter:
      return "ReduceScatter";
    case Coll::Broadcast:
      return "Broadcast";
    case Coll::Reduce:
      return "Reduce";
    case Coll::AllToAll:
      return "AllToAll";
    case Coll::Gather:
      return "Gather";
    case Coll::Scatter:
      return "Scatter";
    case Coll::SendRecv:
      return "SendRecv";
  }
  return "?";
}

bool isReducing(Coll coll) {
  return coll == Coll::AllReduce || coll == Coll::ReduceScatter || coll == Coll::Reduce;
}

bool hasRoot(Coll coll) {
  return coll == Coll::Broadcast || coll == Coll::Reduce || coll == Coll::Gather ||
         coll == Coll::Scatter;
}

bool hasInPlace(Coll coll) {
  return coll == Coll::AllReduce || coll == Coll::AllGather || coll == Coll::ReduceScatter ||
         coll == Coll::Broadcast || coll == Coll::Reduce || coll == Coll::Gather ||
         coll == Coll::Scatter;
}

std::string caseName(const Case& c) {
  std::ostringstream out;
  out << collName(c.coll) << "(" << typeName(c.type);
  if (isReducing(c.coll)) out << " " << opName(c.op);
  out << " count=" << c.count << (c.inPlace ? " in-place" : "");
  if (hasRoot(c.coll)) out << " root=" << c.root;
  static const char* const kPatterns[] = {"small-ints", "prod-safe", "random-real", "random-bytes"};
  out << " " << kPatterns[static_cast<int>(c.pattern)] << " seed=" << c.seed << ")";
  return out.str();
}

namespace {

constexpr loomDataType_t kAllTypes[] = {loomInt8,    loomUint8,   loomInt32,   loomUint32,
                                        loomInt64,   loomUint64,  loomFloat16, loomFloat32,
                                        loomFloat64, loomBfloat16};
// The reduced scope: element sizes 1, 4 and 8, fp32 among them. Half
// precision's conversions are the reducers' (every Full suite runs them);
// the transports and algorithms under test see only bytes.
constexpr loomDataType_t kFewTypes[] = {loomInt8, loomFloat32, loomUint64};
constexpr loomRedOp_t kAllOps[] = {loomSum, loomProd, loomMax, loomMin, loomAvg};

/// More than 4 MiB of fp32 per rank. Collectives whose buffers are nranks
/// times the count shrink it past 4 ranks so that 8 thread ranks (each with
/// its buffers and expectations) stay within a few hundred MiB.
size_t bigCount(Coll coll, int nranks) {
  const bool scales = coll != Coll::AllReduce && coll != Coll::Broadcast && coll != Coll::Reduce;
  return scales && nranks > 4 ? (size_t{1} << 18) + 5 : (size_t{1} << 20) + 5;
}

}  // namespace

std::vector<Case> makeCases(Coll coll, int nranks, Scope scope) {
  // LOOM_TEST_SCOPE=reduced (make test-tsan): races do not depend on the data
  // type, and ThreadSanitizer makes every full matrix cost minutes.
  const char* forced = std::getenv("LOOM_TEST_SCOPE");
  if (forced != nullptr && std::string(forced) == "reduced") scope = Scope::Reduced;
  std::vector<loomDataType_t> types;
  if (scope == Scope::Full) {
    types.assign(std::begin(kAllTypes), std::end(kAllTypes));
  } else {
    types.assign(std::begin(kFewTypes), std::end(kFewTypes));
  }
  std::vector<loomRedOp_t> ops = {loomSum};
  if (isReducing(coll)) ops.assign(std::begin(kAllOps), std::end(kAllOps));
  std::vector<int> roots = {0};
  if (hasRoot(coll) && nranks > 1) roots.push_back(nranks - 1);
  std::vector<bool> layouts = {false};
  if (hasInPlace(coll)) layouts.push_back(true);
  const Pattern moved = Pattern::RandomBytes;

  std::vector<Case> cases;
  // A fresh seed per case: a rank that returned the previous call's bytes
  // (stale slot, stale arena round) cannot pass by accident.
  auto add = [&](Case c) {
    c.seed = cases.size() + 1;
    cases.push_back(c);
  };
  for (bool inPlace : layouts) {
    for (int root : roots) {
      add({coll, loomFloat32, loomSum, 0, inPlace, root, Pattern::SmallInts});
    }
  }
  for (loomDataType_t type : types) {
    for (loomRedOp_t op : ops) {
      const Pattern pattern =
          !isReducing(coll) ? moved : (op == loomProd ? Pattern::ProdSafe : Pattern::SmallInts);
      for (size_t count : {size_t{1}, size_t{7}, size_t{1023}}) {
        for (bool inPlace : layouts) {
          for (int root : roots) add({coll, type, op, count, inPlace, root, pattern});
        }
      }
    }
  }
  if (isReducing(coll)) {
    for (loomDataType_t type : types) {
      if (!isFloatType(type)) continue;
      for (loomRedOp_t op : ops) {
        add({coll, type, op, 1023, false, nranks - 1, Pattern::RandomReal});
      }
    }
  }
  const size_t big = bigCount(coll, nranks);
  const Pattern bigPattern = isReducing(coll) ? Pattern::SmallInts : moved;
  for (int root : roots) add({coll, loomFloat32, loomSum, big, false, root, bigPattern});
  if (scope == Scope::Full) {
    if (hasInPlace(coll)) add({coll, loomFloat32, loomSum, big, true, nranks - 1, bigPattern});
    if (isReducing(coll)) {
      add({coll, loomFloat32, loomSum, big, false, 0, Pattern::RandomReal});
      add({coll, loomInt64, loomMin, big, false, 0, Pattern::SmallInts});
    }
  }
  return cases;
}

namespace {

/// Elements [offset, offset + count) of a buffer must equal `bytes` (within
/// `tolerance` per element, if given); everything else must be as before.
struct Region {
  size_t offset = 0;
  size_t count = 0;
  std::vector<unsigned char> bytes;
  std::vector<double> tolerance;
};

std::vector<unsigned char> inputOf(const Case& c, int rank, size_t first, size_t count) {
  std::vector<unsigned char> v(count * typeSize(c.type));
  fillInput(v.data(), c.type, c.pattern, c.seed, rank, first, count, c.op);
  return v;
}

Region inputRegion(const Case& c, int rank, size_t first, size_t count, size_t offset) {
  Region r;
  r.offset = offset;
  r.count = count;
  r.bytes = inputOf(c, rank, first, count);
  return r;
}

Region reducedRegion(const Case& c, int nranks, size_t first, size_t count, size_t offset) {
  Region r;
  r.offset = offset;
  r.count = count;
  r.bytes.resize(count * typeSize(c.type));
  reduceReference(r.bytes.data(), c.type, c.op, c.pattern, c.seed, nranks, first, count,
                  &r.tolerance);
  return r;
}

void put(GuardedBuffer& buf, size_t offsetElems, const std::vector<unsigned char>& bytes,
         size_t es) {
  if (!bytes.empty()) std::memcpy(buf.data() + offsetElems * es, bytes.data(), bytes.size());
}

std::string checkBuffer(const char* name, const GuardedBuffer& buf,
                        const std::vector<unsigned char>& before, std::vector<Region> regions,
                        loomDataType_t type) {
  const size_t es = typeSize(type);
  if (!buf.guardsIntact()) return std::string(name) + ": bytes written outside the buffer";
  std::sort(regions.begin(), regions.end(),
            [](const Region& a, const Region& b) { return a.offset < b.offset; });
  size_t pos = 0;  // bytes before `pos` are accounted for
  auto untouched = [&](size_t from, size_t to) -> std::string {
    for (size_t i = from; i < to; ++i) {
      if (buf.data()[i] != before[i]) {
        return std::string(name) + ": byte " + std::to_string(i) +
               " outside the output region was modified";
      }
    }
    return "";
  };
  for (const Region& r : regions) {
    if (auto e = untouched(pos, r.offset * es); !e.empty()) return e;
    const std::string diff =
        compareElements(buf.data() + r.offset * es, r.bytes.data(), type, r.count, r.tolerance);
    if (!diff.empty()) {
      return std::string(name) + " elements from " + std::to_string(r.offset) + ": " + diff;
    }
    pos = (r.offset + r.count) * es;
  }
  return untouched(pos, buf.bytes());
}

loomResult_t sendRecvRing(const Case& c, const void* send, void* recv, int rank, int nranks,
                          loomComm_t comm) {
  const int next = (rank + 1) % nranks;
  const int prev = (rank + nranks - 1) % nranks;
  auto* second = static_cast<unsigned char*>(recv) + c.count * typeSize(c.type);
  loomResult_t rc[5];
  rc[0] = loomGroupStart();
  rc[1] = loomSend(send, c.count, c.type, next, comm, nullptr);
  rc[2] = loomSend(send, c.count, c.type, prev, comm, nullptr);
  rc[3] = loomRecv(recv, c.count, c.type, prev, comm, nullptr);
  rc[4] = loomRecv(second, c.count, c.type, next, comm, nullptr);
  // GroupEnd is called even after a failed enqueue so the group is closed.
  const loomResult_t end = loomGroupEnd();
  for (loomResult_t r : rc) {
    if (r != loomSuccess) return r;
  }
  return end;
}

loomResult_t callCollective(const Case& c, const void* send, void* recv, int rank, int nranks,
                            loomComm_t comm) {
  switch (c.coll) {
    case Coll::AllReduce:
      return loomAllReduce(send, recv, c.count, c.type, c.op, comm, nullptr);
    case Coll::AllGather:
      return loomAllGather(send, recv, c.count, c.type, comm, nullptr);
    case Coll::ReduceScatter:
      return loomReduceScatter(send, recv, c.count, c.type, c.op, comm, nullptr);
    case Coll::Broadcast:
      return loomBroadcast(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Coll::Reduce:
      return loomReduce(send, recv, c.count, c.type, c.op, c.root, comm, nullptr);
    case Coll::AllToAll:
      return loomAllToAll(send, recv, c.count, c.type, comm, nullptr);
    case Coll::Gather:
      return loomGather(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Coll::Scatter:
      return loomScatter(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Coll::SendRecv:
      return sendRecvRing(c, send, recv, rank, nranks, comm);
  }
  return loomInternalError;
}

/// Element counts of the two user buffers: for out-of-place, sendbuff and
/// recvbuff; for in-place, the one shared buffer and nothing.
std::pair<size_t, size_t> bufferElems(const Case& c, int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  const size_t k = c.count;
  switch (c.coll) {
    case Coll::AllReduce:
    case Coll::Broadcast:
    case Coll::Reduce:
      return {k, c.inPlace ? 0 : k};
    case Coll::AllGather:
      return c.inPlace ? std::pair<size_t, size_t>{n * k, 0} : std::pair<size_t, size_t>{k, n * k};
    case Coll::ReduceScatter:
      return {n * k, c.inPlace ? 0 : k};
    case Coll::AllToAll:
      return {n * k, n * k};
    case Coll::Gather:
      return c.inPlace ? std::pair<size_t, size_t>{n * k, 0} : std::pair<size_t, size_t>{k, n * k};
    case Coll::Scatter:
      return {n * k, c.inPlace ? 0 : k};
    case Coll::SendRecv:
      return {k, 2 * k};
  }
  return {0, 0};
}

/// LOOMTEST_SHARED_BUFFERS: "all" ranks' buffers come from loomMemAlloc,
/// registered with the communicator; only "rank0"'s (the others' private
/// buffers then send every rank through the arena); or every rank's in two
/// cases of three ("alternate": single-copy learnt, used, then given up);
/// unset: none.
bool sharesBuffers(int rank, size_t bytesPerRank) {
  // Counts the cases the variant runs single-copy (from 4000 B), so that the
  // pattern falls on them whatever the small cases between.
  thread_local int cases = 0;  // this rank's, when ranks are threads
  const int index = bytesPerRank >= 4000 ? cases++ : 0;
  const char* which = std::getenv("LOOMTEST_SHARED_BUFFERS");
  if (which == nullptr) return false;
  const std::string mode = which;
  return mode == "all" || (mode == "rank0" && rank == 0) || (mode == "alternate" && index % 3 != 2);
}

}  // namespace

CaseResult runCase(const Case& c, int rank, int nranks, loomComm_t comm) {
  const size_t es = typeSize(c.type);
  const size_t k = c.count;
  const size_t n = static_cast<size_t>(nranks);
  const auto [aElems, bElems] = bufferElems(c, nranks);
  // `a` is sendbuff (or the one in-place buffer), `b` is recvbuff.
  const loomComm_t sharedWith = sharesBuffers(rank, k * es) ? comm : nullptr;
  GuardedBuffer a(aElems * es, sharedWith);
  GuardedBuffer b(bElems * es, sharedWith);
  std::vector<Region> aRegions;
  std::vector<Region> bRegions;
  const void* send = a.data();
  void* recv = b.data();
  const bool isRoot = rank == c.root;
  auto& out = c.inPlace ? aRegions : bRegions;

  switch (c.coll) {
    case Coll::AllReduce:
      put(a, 0, inputOf(c, rank, 0, k), es);
      out.push_back(reducedRegion(c, nranks, 0, k, 0));
      break;
    case Coll::AllGather:
      if (c.inPlace) {
        put(a, rank * k, inputOf(c, rank, 0, k), es);
        send = a.data() + rank * k * es;
      } else {
        put(a, 0, inputOf(c, rank, 0, k), es);
      }
      for (int j = 0; j < nranks; ++j) out.push_back(inputRegion(c, j, 0, k, j * k));
      break;
    case Coll::ReduceScatter:
      put(a, 0, inputOf(c, rank, 0, n * k), es);
      out.push_back(reducedRegion(c, nranks, rank * k, k, c.inPlace ? rank * k : 0));
      break;
    case Coll::Broadcast:
      // Non-roots start from their own (different) input, so an in-place
      // broadcast that skipped them would be caught.
      put(a, 0, inputOf(c, rank, 0, k), es);
      out.push_back(inputRegion(c, c.root, 0, k, 0));
      break;
    case Coll::Reduce:
      put(a, 0, inputOf(c, rank, 0, k), es);
      if (isRoot) out.push_back(reducedRegion(c, nranks, 0, k, 0));
      break;
    case Coll::AllToAll:
      put(a, 0, inputOf(c, rank, 0, n * k), es);
      for (int j = 0; j < nranks; ++j) out.push_back(inputRegion(c, j, rank * k, k, j * k));
      break;
    case Coll::Gather:
      // In place (every rank passes the layout; only the root's recvbuff is
      // used): sendbuff is block `rank` of recvbuff.
      if (c.inPlace) {
        put(a, rank * k, inputOf(c, rank, 0, k), es);
        send = a.data() + rank * k * es;
      } else {
        put(a, 0, inputOf(c, rank, 0, k), es);
      }
      if (isRoot) {
        for (int j = 0; j < nranks; ++j) out.push_back(inputRegion(c, j, 0, k, j * k));
      }
      break;
    case Coll::Scatter:
      // Non-roots pass a valid sendbuff too; it must be ignored, not read or written.
      // In place, recvbuff is block `rank` of this rank's sendbuff.
      put(a, 0, inputOf(c, rank, 0, n * k), es);
      out.push_back(inputRegion(c, c.root, rank * k, k, c.inPlace ? rank * k : 0));
      break;
    case Coll::SendRecv:
      put(a, 0, inputOf(c, rank, 0, k), es);
      out.push_back(inputRegion(c, (rank + nranks - 1) % nranks, 0, k, 0));
      out.push_back(inputRegion(c, (rank + 1) % nranks, 0, k, k));
      break;
  }
  // The C API's in-place layouts: reduce-scatter and scatter write into the
  // rank's own block of sendbuff; every other in-place call passes the whole
  // buffer as recvbuff.
  if (c.inPlace) {
    const bool intoBlock = c.coll == Coll::ReduceScatter || c.coll == Coll::Scatter;
    recv = intoBlock ? a.data() + rank * k * es : a.data();
  }

  const std::vector<unsigned char> aBefore(a.data(), a.data() + a.bytes());
  const std::vector<unsigned char> bBefore(b.data(), b.data() + b.bytes());
  CaseResult result;
  const loomResult_t rc = callCollective(c, send, recv, rank, nranks, comm);
  if (rc != loomSuccess) {
    result.fatal = true;
    result.error = caseName(c) + ": returned " + std::to_string(rc) + " (" +
                   loomGetErrorString(rc) + "): " + loomGetLastError(comm);
    return result;
  }
  std::string e = checkBuffer(c.inPlace ? "in-place buffer" : "sendbuff", a, aBefore,
                              std::move(aRegions), c.type);
  if (e.empty()) e = checkBuffer("recvbuff", b, bBefore, std::move(bRegions), c.type);
  if (!e.empty()) result.error = caseName(c) + ": " + e;
  if (c.coll == Coll::AllReduce) {
    const unsigned char* res = c.inPlace ? a.data() : b.data();
    std::ostringstream line;
    line << caseName(c) << " " << std::hex << hashBytes(res, k * es) << "\n";
    result.report = line.str();
  }
  return result;
}

}  // namespace loomtest
