// connectUcxLinks: endpoints to every peer, then one handshake message each
// way per pair. Every rank creates all its endpoints and sends at once and UCX
// wires them up while both workers progress, so ranks need no connect/accept
// order; the handshake is there to refuse a peer of another communicator (or
// a worker address that is not the peer's).
//
// A rank is done once it has heard every peer and its own handshakes
// completed locally. That a rank returns only then matters: it may block
// elsewhere next (a bootstrap barrier) and stop progressing its worker, and
// UCX needs both workers progressing to wire up an endpoint (a send on a new
// endpoint does not complete while the peer is idle). Once a rank heard a
// peer, that peer's endpoint to it is wired; once its own send completed,
// its message is on the wire; so the peer can finish alone. An endpoint
// flush would not help: with peer-failure handling it waits for the peer's
// worker to answer.
#include <algorithm>
#include <array>
#include <map>

#include "core/error.h"
#include "core/log.h"
#include "transports/peer_list.h"
#include "transports/ucx/ucx_endpoint.h"
#include "transports/ucx/ucx_link.h"
#include "transports/ucx/ucx_transport.h"
#include "transports/ucx/ucx_wire.h"
#include "transports/ucx/ucx_worker.h"

namespace loom {
namespace {

using ucx::Hello;

// Longest sleep between looks at the deadline and the abort flag.
constexpr std::chrono::milliseconds kWaitSlice{10};
// How many refused strays the timeout message lists.
constexpr size_t kStraysReported = 4;

void validate(int myRank, const std::vector<int>& peers, size_t worldSize,
              const UcxConfig& config) {
  if (config.slots < 1 || config.slots > 4096 || config.slotBytes < 1 ||
      config.slotBytes > (size_t{1} << 30) || config.channels < 1 ||
      config.channels > ucx::kMaxChannels) {
    raise(ErrorCode::InvalidArgument,
          "ucx config out of range: slots={} (1..4096), slotBytes={} (1..1 GiB), channels={} "
          "(1..{})",
          config.slots, config.slotBytes, config.channels, ucx::kMaxChannels);
  }
  checkPeerList("ucx", myRank, peers, worldSize);
}

class Handshake {
 public:
  Handshake(std::shared_ptr<ucx::WorkerState> worker, int myRank,
            const LinkCredentials& credentials, const UcxConfig& config,
            const std::vector<std::string>& addresses)
      : worker_(std::move(worker)),
        myRank_(myRank),
        commTag_(credentials.commTag),
        key_(credentials.key),
        slotBytes_(config.slotBytes),
        addresses_(addresses),
        myAddressHash_(wire::fnv1a(addresses[static_cast<size_t>(myRank)])),
        memory_(std::make_shared<Memory>()) {}

  ~Handshake() {
    std::vector<void*> requests;
    for (Receive& r : receives_) {
      if (r.request == nullptr) continue;
      ucp_request_cancel(worker_->worker(), r.request);
      requests.push_back(r.request);
    }
    for (auto& [rank, peer] : peers_) {
      requests.push_back(peer.send);
      peer.endpoint.reset();  // force-closes: completes the send
    }
    worker_->retire(std::move(requests), memory_);
  }

  Handshake(const Handshake&) = delete;
  Handshake& operator=(const Handshake&) = delete;

  void start(const std::vector<int>& ranks) {
    for (int p : ranks) {
      auto address = ucx::fromHex(addresses_[static_cast<size_t>(p)]);
      if (!address) {
        raise(ErrorCode::InvalidArgument,
              "ucx: the address of rank {} is not a hex-encoded UCX worker address ({} chars)", p,
              addresses_[static_cast<size_t>(p)].size());
      }
      peers_[p].endpoint = std::make_unique<ucx::Endpoint>(worker_, p, *address);
    }
    // One receive per expected hello; a refused stray's receive is posted again.
    memory_->inbox.resize(ranks.size());
    receives_.resize(ranks.size());
    for (size_t i = 0; i < receives_.size(); ++i) post(i);
    // Each peer's hello names it and carries a MAC bound to its worker's address.
    memory_->hellos.resize(peers_.size());
    size_t index = 0;
    for (auto& [rank, peer] : peers_) {
      Hello hello{commTag_, static_cast<uint32_t>(myRank_), static_cast<uint32_t>(rank), slotBytes_,
                  myAddressHash_};
      hello.mac = hello.expectedMac(key_, wire::fnv1a(addresses_[static_cast<size_t>(rank)]));
      uint8_t* bytes = memory_->hellos[index++].data();
      hello.encode(bytes);
      ucp_request_param_t params{};
      peer.send = check(
          ucp_tag_send_nbx(peer.endpoint->ep(), bytes, Hello::kBytes, ucx::kHelloTag, &params),
          rank, "send its handshake");
    }
  }

  /// Progresses; true once every peer is heard and our handshakes sent.
  /// Throws RemoteError if a peer is unreachable or belongs elsewhere.
  bool poll() {
    worker_->progress();
    for (size_t i = 0; i < receives_.size(); ++i) {
      Receive& r = receives_[i];
      if (r.request != nullptr) {
        ucp_tag_recv_info_t info{};
        const ucs_status_t status = ucp_tag_recv_request_test(r.request, &info);
        if (status == UCS_INPROGRESS) continue;
        ucp_request_free(r.request);
        r = Receive{nullptr, true, status, info.length};
      }
      if (r.ready) {
        r.ready = false;
        if (!accept(r, memory_->inbox[i].data())) post(i);
      }
    }
    bool done = true;
    for (auto& [rank, peer] : peers_) {
      done &= complete(peer.send, rank, "send its handshake") && peer.heard;
      if (peer.endpoint->failure() != UCS_OK) {
        raise(ErrorCode::RemoteError,
              "ucx: rank {} cannot reach rank {}: {} (is it running, in this communicator?)",
              myRank_, rank, ucx::statusText(peer.endpoint->failure()));
      }
    }
    return done;
  }

  std::string pending() const {
    std::vector<int> unheard;
    std::vector<int> undelivered;
    for (const auto& [rank, peer] : peers_) {
      if (!peer.heard) {
        unheard.push_back(rank);
      } else if (peer.send != nullptr) {
        undelivered.push_back(rank);
      }
    }
    std::string out;
    if (!unheard.empty()) {
      out = fmt::format(
          "the handshake of ranks {} (not started, unreachable, or in another communicator)",
          fmt::join(unheard, ", "));
    }
    if (!undelivered.empty()) {
      out += fmt::format("{}its handshake to ranks {} to be sent", out.empty() ? "" : "; ",
                         fmt::join(undelivered, ", "));
    }
    if (!strays_.empty()) out += fmt::format("; refused: {}", fmt::join(strays_, "; "));
    return out;
  }

  std::unique_ptr<ucx::Endpoint> take(int rank) { return std::move(peers_.at(rank).endpoint); }

 private:
  struct Peer {
    std::unique_ptr<ucx::Endpoint> endpoint;
    void* send = nullptr;  // in flight while set
    bool heard = false;
  };
  struct Receive {
    void* request = nullptr;  // in flight while set
    bool ready = false;       // completed, not yet looked at
    ucs_status_t status = UCS_OK;
    size_t length = 0;
  };
  // What UCX reads and writes, kept alive past us if a request outlives us.
  struct Memory {
    std::vector<std::array<uint8_t, Hello::kBytes>> hellos;  // one per peer
    std::vector<std::array<uint8_t, Hello::kBytes>> inbox;
  };

  void* check(ucs_status_ptr_t request, int rank, const char* what) const {
    if (UCS_PTR_IS_ERR(request)) {
      raise(ErrorCode::RemoteError, "ucx: rank {} could not {} to rank {}: {}", myRank_, what, rank,
            ucx::statusText(UCS_PTR_STATUS(request)));
    }
    return request;
  }

  /// True once `request` completed (and frees it); throws if it failed.
  bool complete(void*& request, int rank, const char* what) const {
    if (request == nullptr) return true;
    const ucs_status_t status = ucp_request_check_status(request);
    if (status == UCS_INPROGRESS) return false;
    ucp_request_free(request);
    request = nullptr;
    if (status != UCS_OK) {
      raise(ErrorCode::RemoteError, "ucx: rank {} could not {} to rank {}: {}", myRank_, what, rank,
            ucx::statusText(status));
    }
    return true;
  }

  void post(size_t i) {
    receives_[i] =
        Receive{ucx::postTagReceive(worker_->worker(), memory_->inbox[i].data(), Hello::kBytes,
                                    ucx::kHelloTag, ucx::kHelloTagMask, -1)};
  }

  /// Checks one arrived hello. False if it is a stray (logged, remembered for
  /// the timeout message); throws if a peer disagrees with us.
  bool accept(const Receive& r, const uint8_t* bytes) {
    Hello hello;
    if (r.status != UCS_OK || r.length != Hello::kBytes || !hello.decode(bytes)) {
      return stray(
          fmt::format("a malformed handshake ({} bytes, {})", r.length, ucx::statusText(r.status)));
    }
    const auto it = peers_.find(static_cast<int>(hello.rank));
    if (it == peers_.end()) {
      return stray(fmt::format("a handshake from rank {} (communicator tag {:016x}), not a peer",
                               hello.rank, hello.commTag));
    }
    const int rank = it->first;
    if (hello.addressHash != wire::fnv1a(addresses_[static_cast<size_t>(rank)])) {
      return stray(fmt::format(
          "a handshake claiming rank {} from a worker that is not rank {}'s address", rank, rank));
    }
    // Only a holder of the communicator's key can make a hello for this worker.
    if (hello.to != static_cast<uint32_t>(myRank_) ||
        !sameBytes(hello.mac, hello.expectedMac(key_, myAddressHash_))) {
      return stray(fmt::format(
          "a handshake claiming rank {} that does not prove the communicator's key (a different "
          "unique id or LOOM_SECRET, or a forged or replayed hello)",
          rank));
    }
    // The message comes from the worker we know as `rank`: a disagreement is real.
    if (hello.commTag != commTag_) {
      raise(ErrorCode::RemoteError,
            "ucx: rank {} refused the handshake of rank {}: communicator tag {:016x}, expected "
            "{:016x} (the ranks are in different communicators)",
            myRank_, rank, hello.commTag, commTag_);
    }
    if (hello.slotBytes != slotBytes_) {
      raise(ErrorCode::RemoteError,
            "ucx: rank {} refused the handshake of rank {}: {} byte slots, expected {} (ranks "
            "disagree on the configuration)",
            myRank_, rank, hello.slotBytes, slotBytes_);
    }
    if (it->second.heard) return stray(fmt::format("a second handshake from rank {}", rank));
    it->second.heard = true;
    return true;
  }

  bool stray(std::string what) {
    LOOM_WARN("ucx: rank {} ignoring {}", myRank_, what);
    if (strays_.size() < kStraysReported) strays_.push_back(std::move(what));
    return false;
  }

  std::shared_ptr<ucx::WorkerState> worker_;
  int myRank_;
  uint64_t commTag_;
  Digest key_;
  uint64_t slotBytes_;
  const std::vector<std::string>& addresses_;
  uint64_t myAddressHash_;
  std::shared_ptr<Memory> memory_;
  std::map<int, Peer> peers_;
  std::vector<Receive> receives_;
  std::vector<std::string> strays_;
};

}  // namespace

std::vector<std::unique_ptr<Link>> connectUcxLinks(UcxWorker& worker, const ConnectRequest& request,
                                                   const UcxConfig& config) {
  validate(request.myRank, request.peers, request.peerAddresses.size(), config);
  if (request.peerAddresses[static_cast<size_t>(request.myRank)] != worker.address()) {
    raise(ErrorCode::InvalidArgument,
          "ucx: peerAddresses[{}] is not this worker's address (rank {} would not be recognised)",
          request.myRank, request.myRank);
  }
  Handshake handshake(worker.state_, request.myRank, request.credentials, config,
                      request.peerAddresses);
  handshake.start(request.peers);
  while (!handshake.poll()) {
    if (request.abortFlag != nullptr && request.abortFlag->load()) {
      raise(ErrorCode::Aborted, "ucx: rank {} aborted while waiting for {}", request.myRank,
            handshake.pending());
    }
    if (request.deadline.expired()) {
      raise(ErrorCode::RemoteError, "ucx: rank {} timed out waiting for {}", request.myRank,
            handshake.pending());
    }
    worker.state_->wait(request.deadline.remaining(kWaitSlice));
  }
  std::vector<std::shared_ptr<ucx::Endpoint>> endpoints;
  endpoints.reserve(request.peers.size());
  for (int p : request.peers) endpoints.push_back(handshake.take(p));
  std::vector<std::unique_ptr<Link>> links;
  links.reserve(request.peers.size() * static_cast<size_t>(config.channels));
  for (int channel = 0; channel < config.channels; ++channel) {
    for (const auto& endpoint : endpoints) {
      links.push_back(std::make_unique<UcxLink>(
          worker.state_, endpoint, request.credentials.commTag, request.myRank, channel, config));
    }
  }
  LOOM_INFO("ucx: rank {} connected {} links ({} channel(s))", request.myRank, links.size(),
            config.channels);
  return links;
}

}  // namespace loom
