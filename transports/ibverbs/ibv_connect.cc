// connectIbvLinks: (1) open the port and create every link's queue pair and
// rings, (2) all-gather the connection records and move each queue pair to
// RTS aimed at its peer's, (3) all-gather again as a barrier. Without (3) a
// fast rank could write to a peer whose queue pair is not yet in RTR; RC
// would retry, but a slow peer (ranks outnumber cores) can outlast the
// retries and the queue pair would fail for nothing.
#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "transports/ibverbs/ibv_connection.h"
#include "transports/ibverbs/ibv_context.h"
#include "transports/ibverbs/ibv_link.h"
#include "transports/ibverbs/ibv_transport.h"

namespace loom {
namespace {

void validate(int myRank, const std::vector<int>& peers, const IbvConfig& config) {
  if (config.slots < 1 || static_cast<uint64_t>(config.slots) > IbvConnection::kMaxSlots ||
      config.slotBytes < 1 || config.slotBytes > IbvConnection::kMaxSlotBytes) {
    raise(ErrorCode::InvalidArgument,
          "ibverbs config out of range: slots={} (1..{}), slotBytes={} (1..{})", config.slots,
          IbvConnection::kMaxSlots, config.slotBytes, IbvConnection::kMaxSlotBytes);
  }
  if (config.port < 0 || config.port > 255 || config.gidIndex > 255) {
    raise(ErrorCode::InvalidArgument,
          "ibverbs config out of range: port={} (0..255), gidIndex={} "
          "(-1..255)",
          config.port, config.gidIndex);
  }
  if (myRank < 0) raise(ErrorCode::InvalidArgument, "ibverbs: rank {} is negative", myRank);
  std::vector<int> sorted = peers;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] == myRank || (i > 0 && sorted[i] == sorted[i - 1])) {
      raise(ErrorCode::InvalidArgument,
            "ibverbs: peer {} of rank {} is invalid (negative, itself, or repeated)", sorted[i],
            myRank);
    }
  }
}

void checkStillWanted(int myRank, Deadline deadline, const std::atomic<bool>* abortFlag,
                      const char* phase) {
  if (abortFlag != nullptr && abortFlag->load()) {
    raise(ErrorCode::Aborted, "ibverbs: rank {} aborted {}", myRank, phase);
  }
  if (deadline.expired()) {
    raise(ErrorCode::RemoteError, "ibverbs: rank {} timed out {}", myRank, phase);
  }
}

/// The one record `peer` addressed to `myRank`, checked against what we expect.
IbvConnection recordFor(int myRank, int peer, const std::string& blob, uint64_t commTag,
                        const IbvConfig& config) {
  std::vector<IbvConnection> records;
  try {
    records = decodeIbvConnections(blob);
  } catch (const Error& e) {
    raise(ErrorCode::RemoteError, "ibverbs: rank {} published malformed connection data: {}", peer,
          e.what());
  }
  const IbvConnection* found = nullptr;
  for (const IbvConnection& r : records) {
    if (r.toRank != static_cast<uint32_t>(myRank)) continue;
    if (found != nullptr) {
      raise(ErrorCode::RemoteError, "ibverbs: rank {} published two connection records for rank {}",
            peer, myRank);
    }
    found = &r;
  }
  if (found == nullptr) {
    raise(ErrorCode::RemoteError,
          "ibverbs: rank {} published no connection record for rank {} (does it use ibverbs "
          "for this pair?)",
          peer, myRank);
  }
  if (found->rank != static_cast<uint32_t>(peer) || found->commTag != commTag) {
    raise(
        ErrorCode::RemoteError,
        "ibverbs: rank {}'s record claims rank {} and communicator tag {:016x} (expected {:016x})",
        peer, found->rank, found->commTag, commTag);
  }
  if (found->slots != static_cast<uint32_t>(config.slots) || found->slotBytes != config.slotBytes) {
    raise(ErrorCode::RemoteError,
          "ibverbs: rank {} uses {} slots of {} bytes, rank {} uses {} of {} (configs differ)",
          peer, found->slots, found->slotBytes, myRank, config.slots, config.slotBytes);
  }
  return *found;
}

}  // namespace

std::vector<std::unique_ptr<Link>> connectIbvLinks(int myRank, const std::vector<int>& peers,
                                                   uint64_t commTag, const IbvConfig& config,
                                                   const IbvExchange& exchange, Deadline deadline,
                                                   const std::atomic<bool>* abortFlag) {
  validate(myRank, peers, config);
  std::vector<std::unique_ptr<IbvLink>> links;
  std::vector<IbvConnection> mine;
  std::shared_ptr<IbvContext> context;
  if (!peers.empty()) {
    context = IbvContext::open(config);
    for (int p : peers) {
      links.push_back(std::make_unique<IbvLink>(p, context, config));
      mine.push_back(links.back()->localConnection(myRank, commTag));
    }
  }

  checkStillWanted(myRank, deadline, abortFlag, "before exchanging ibverbs connection records");
  const std::vector<std::string> published = exchange(encodeIbvConnections(mine));
  checkStillWanted(myRank, deadline, abortFlag, "while exchanging ibverbs connection records");
  for (size_t i = 0; i < peers.size(); ++i) {
    const auto peer = static_cast<size_t>(peers[i]);
    if (peer >= published.size()) {
      raise(ErrorCode::InvalidArgument,
            "ibverbs: peer {} of rank {} is outside the {} ranks of the exchange", peer, myRank,
            published.size());
    }
    links[i]->connect(recordFor(myRank, peers[i], published[peer], commTag, config));
  }
  checkStillWanted(myRank, deadline, abortFlag, "before the ibverbs ready barrier");
  exchange("");
  checkStillWanted(myRank, deadline, abortFlag, "in the ibverbs ready barrier");

  std::vector<std::unique_ptr<Link>> out;
  out.reserve(links.size());
  for (auto& link : links) out.push_back(std::move(link));
  if (context) {
    LOOM_INFO("ibverbs: rank {} connected {} links on {}", myRank, out.size(), context->where());
  }
  return out;
}

}  // namespace loom
