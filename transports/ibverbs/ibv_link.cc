#include "transports/ibverbs/ibv_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "core/error.h"
#include "core/log.h"
#include "core/names.h"
#include "core/page_buffer.h"

namespace loom {
namespace {

constexpr Named<IbvWrKind> kWrKindNames[] = {{IbvWrKind::Data, "RDMA write of a message"},
                                             {IbvWrKind::Credit, "credit write"},
                                             {IbvWrKind::Recv, "receive"}};

// The NIC pins whole pages; page-aligned rings share none with other data.
uint8_t* allocateRing(size_t bytes, int peer) {
  void* p = allocatePages(bytes);
  if (p == nullptr) {
    raise(ErrorCode::SystemError, "ibverbs link to rank {}: cannot allocate a {} byte ring", peer,
          bytes);
  }
  return static_cast<uint8_t*>(p);
}

size_t maxBytesPerWr(const IbvConfig& config, const IbvContext& context) {
  size_t limit = context.maxMessageBytes() > 0 ? context.maxMessageBytes() : config.slotBytes;
  if (config.maxBytesPerWr > 0) limit = std::min(limit, config.maxBytesPerWr);
  return limit;
}

}  // namespace

void IbvLink::FreeDeleter::operator()(void* p) const { std::free(p); }
void IbvLink::ChannelDeleter::operator()(ibv_comp_channel* c) const {
  if (ibv_destroy_comp_channel(c) != 0) LOOM_WARN("ibverbs: ibv_destroy_comp_channel failed");
}
void IbvLink::CqDeleter::operator()(ibv_cq* cq) const {
  if (ibv_destroy_cq(cq) != 0) LOOM_WARN("ibverbs: ibv_destroy_cq failed");
}
void IbvLink::QpDeleter::operator()(ibv_qp* qp) const {
  if (ibv_destroy_qp(qp) != 0) LOOM_WARN("ibverbs: ibv_destroy_qp failed");
}

IbvLink::IbvLink(int peer, std::shared_ptr<IbvContext> context, const IbvConfig& config)
    : context_(std::move(context)),
      peer_(peer),
      slotBytes_(config.slotBytes),
      options_(config.qp),
      ring_(peer, static_cast<uint32_t>(config.slots), config.slotBytes,
            maxBytesPerWr(config, *context_)) {
  const size_t ringBytes = size_t{ring_.slots()} * slotBytes_;
  sendRing_.reset(allocateRing(ringBytes, peer_));
  recvRing_.reset(allocateRing(ringBytes, peer_));
  sendLease_ = IbvMemoryLease(context_->memory(), sendRing_.get(), ringBytes);
  recvLease_ = IbvMemoryLease(context_->memory(), recvRing_.get(), ringBytes);

  const size_t sendDepth = ring_.sendQueueDepth();
  const size_t recvDepth = ring_.recvQueueDepth();
  if (sendDepth > static_cast<size_t>(context_->maxQueueDepth()) ||
      sendDepth + recvDepth > static_cast<size_t>(context_->maxCqEntries())) {
    raise(ErrorCode::InvalidArgument,
          "ibverbs link to rank {}: {} send and {} receive requests exceed what {} supports ({} "
          "per queue, {} completions); use fewer slots or a larger maxBytesPerWr",
          peer_, sendDepth, recvDepth, context_->where(), context_->maxQueueDepth(),
          context_->maxCqEntries());
  }

  channel_.reset(ibv_create_comp_channel(context_->verbs()));
  if (!channel_) fail("ibv_create_comp_channel", errno);
  const int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    fail("fcntl(O_NONBLOCK) on the completion channel", errno);
  }
  cq_.reset(ibv_create_cq(context_->verbs(), static_cast<int>(sendDepth + recvDepth), nullptr,
                          channel_.get(), 0));
  if (!cq_) fail("ibv_create_cq", errno);

  ibv_qp_init_attr init{};
  init.send_cq = cq_.get();
  init.recv_cq = cq_.get();
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = static_cast<uint32_t>(sendDepth);
  init.cap.max_recv_wr = static_cast<uint32_t>(recvDepth);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  qp_.reset(ibv_create_qp(context_->pd(), &init));
  if (!qp_) fail("ibv_create_qp", errno);
  modify(ibvQpToInit(context_->localPort().port), "INIT");
  // Receives can be posted in INIT; they must be there before the peer writes.
  for (size_t i = 0; i < recvDepth; ++i) postRecv();
  std::random_device random;
  psn_ = random() & 0xffffff;
}

IbvLink::~IbvLink() = default;

IbvConnection IbvLink::localConnection(int myRank, uint64_t commTag) const {
  const IbvLocalPort& local = context_->localPort();
  IbvConnection c;
  c.commTag = commTag;
  c.rank = static_cast<uint32_t>(myRank);
  c.toRank = static_cast<uint32_t>(peer_);
  c.qpNum = qp_->qp_num;
  c.psn = psn_;
  c.lid = context_->lid();
  c.gid = context_->gid();
  c.gidIndex = local.gidIndex;
  c.port = local.port;
  c.mtu = local.activeMtu;
  c.linkLayer = local.linkLayer;
  c.ringAddress = reinterpret_cast<uintptr_t>(recvRing_.get());
  c.rkey = recvLease_.region().rkey;
  c.slots = ring_.slots();
  c.slotBytes = slotBytes_;
  return c;
}

void IbvLink::connect(const IbvConnection& remote) {
  if (remote.linkLayer != context_->localPort().linkLayer) {
    raise(ErrorCode::RemoteError,
          "ibverbs link to rank {}: its port is {} but {} is {}; RDMA needs one fabric", peer_,
          remote.linkLayer == IbvLinkLayer::Ethernet ? "Ethernet" : "InfiniBand", context_->where(),
          context_->localPort().linkLayer == IbvLinkLayer::Ethernet ? "Ethernet" : "InfiniBand");
  }
  if (remote.slots != ring_.slots() || remote.slotBytes != slotBytes_) {
    raise(ErrorCode::RemoteError,
          "ibverbs link to rank {}: its ring has {} slots of {} bytes, ours {} of {} (configs "
          "differ)",
          peer_, remote.slots, remote.slotBytes, ring_.slots(), slotBytes_);
  }
  remote_ = remote;
  modify(ibvQpToRtr(context_->localPort(), remote_, options_), "RTR");
  modify(ibvQpToRts(psn_, options_), "RTS");
  connected_ = true;
  drainEvents();  // arms the completion notification
}

void IbvLink::modify(const IbvQpTransition& t, const char* step) {
  auto attr = t.attr;  // ibv_modify_qp takes a non-const pointer
  if (const int rc = ibv_modify_qp(qp_.get(), &attr, t.mask); rc != 0) {
    raise(ErrorCode::SystemError, "ibverbs link to rank {} on {}: moving the QP to {} failed: {}",
          peer_, context_->where(), step, std::strerror(rc));
  }
}

void IbvLink::fail(const char* what, int err) const {
  raise(ErrorCode::SystemError, "ibverbs link to rank {} on {}: {} failed: {}", peer_,
        context_->where(), what, std::strerror(err));
}

void* IbvLink::trySendSlot(size_t bytes) {
  if (bytes > slotBytes_) {
    raise(ErrorCode::InvalidArgument,
          "ibverbs link to rank {}: message of {} bytes exceeds the {} byte slot", peer_, bytes,
          slotBytes_);
  }
  const auto slot = ring_.sendSlot();
  return slot ? sendSlot(*slot) : nullptr;
}

void IbvLink::commitSend(size_t bytes) {
  ring_.commit(bytes);
  postPending();
}

const void* IbvLink::tryRecv(size_t bytes) {
  const auto slot = ring_.recvSlot(bytes);
  return slot ? recvSlot(*slot) : nullptr;
}

void IbvLink::releaseRecv() {
  ring_.release();
  postPending();
}

int IbvLink::pollFd() const { return channel_ ? channel_->fd : -1; }

bool IbvLink::drainEvents() {
  ibv_cq* cq = nullptr;
  void* unused = nullptr;
  unsigned events = 0;
  // The channel is non-blocking: this stops with EAGAIN once it is empty.
  while (ibv_get_cq_event(channel_.get(), &cq, &unused) == 0) ++events;
  if (events > 0) {
    // Unacknowledged events would make ibv_destroy_cq wait forever.
    ibv_ack_cq_events(cq_.get(), events);
    armed_ = false;
  }
  if (!armed_) {
    // Armed before the poll that follows, so a completion after that poll
    // still makes the channel readable.
    if (const int rc = ibv_req_notify_cq(cq_.get(), 0); rc != 0) fail("ibv_req_notify_cq", rc);
    armed_ = true;
  }
  return events > 0;
}

bool IbvLink::progress() {
  if (!connected_) return false;
  drainEvents();
  bool moved = false;
  ibv_wc completions[32];
  for (;;) {
    const int n = ibv_poll_cq(cq_.get(), 32, completions);
    if (n < 0) {
      raise(ErrorCode::SystemError, "ibverbs link to rank {} on {}: ibv_poll_cq failed ({})", peer_,
            context_->where(), n);
    }
    for (int i = 0; i < n; ++i) handle(completions[i]);
    moved |= n > 0;
    if (n < 32) break;
  }
  postPending();
  return moved;
}

void IbvLink::handle(const ibv_wc& wc) {
  const IbvWrKind kind = wrKind(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    raise(ErrorCode::RemoteError,
          "ibverbs link to rank {} on {}: {} failed: {} (status {}, vendor error {:#x}); the peer "
          "is gone or unreachable",
          peer_, context_->where(), nameIn(kWrKindNames, kind, "work request"),
          ibv_wc_status_str(wc.status), static_cast<int>(wc.status), wc.vendor_err);
  }
  switch (kind) {
    case IbvWrKind::Recv: {
      if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || (wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
        raise(ErrorCode::RemoteError,
              "ibverbs link from rank {}: unexpected receive completion (opcode {})", peer_,
              static_cast<int>(wc.opcode));
      }
      postRecv();  // replaces the receive this immediate consumed
      const IbvImmediate imm = decodeImmediate(ntohl(wc.imm_data));
      if (imm.kind == IbvImmediate::Kind::Data) {
        ring_.dataArrived(imm);
      } else {
        ring_.creditArrived(imm);
      }
      return;
    }
    case IbvWrKind::Data:
    case IbvWrKind::Credit:
      ring_.sendCompleted(kind);
      return;
  }
  raise(ErrorCode::InternalError, "ibverbs link to rank {}: completion with unknown wr_id {:#x}",
        peer_, wc.wr_id);
}

void IbvLink::postPending() {
  if (!connected_) {
    raise(ErrorCode::InternalError, "ibverbs link to rank {} used before connect", peer_);
  }
  while (const auto write = ring_.nextWrite()) {
    IbvMessageWrite m;
    m.localAddr = reinterpret_cast<uintptr_t>(sendSlot(write->slot));
    m.lkey = sendLease_.region().lkey;
    m.bytes = write->bytes;
    m.remoteAddr = remote_.ringAddress + uint64_t{write->slot} * slotBytes_;
    m.rkey = remote_.rkey;
    m.maxBytesPerWr = ring_.maxBytesPerWr();
    m.sequence = write->sequence;
    buildMessageWrites(m, chain_);
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(qp_.get(), chain_.head(), &bad); rc != 0) {
      fail("ibv_post_send of a message", rc);
    }
    ring_.writePosted();
  }
  if (const auto released = ring_.nextCredit()) {
    ibv_send_wr wr = buildCreditWrite(remote_.ringAddress, remote_.rkey, *released);
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(qp_.get(), &wr, &bad); rc != 0) {
      fail("ibv_post_send of a credit", rc);
    }
    ring_.creditPosted(*released);
  }
}

void IbvLink::postRecv() {
  ibv_recv_wr wr = buildImmediateRecv();
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp_.get(), &wr, &bad); rc != 0) fail("ibv_post_recv", rc);
}

}  // namespace loom
