#if LOOM_HAVE_IBVERBS
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <functional>
#include <random>
#include <vector>

#include "core/error.h"
#include "transports/ibverbs/ibv_ring.h"

namespace loom {
namespace {

// One side of a simulated connection: the ring under test plus the memory
// and queues a NIC would hold. The "NIC" copies a send slot into the peer's
// receive slot only when it delivers, as hardware reads the slot any time
// between post and completion: reusing a slot early or overwriting an
// unreleased one corrupts the data the test checks.
struct Side {
  Side(int peer, uint32_t slots, size_t slotBytes, size_t maxBytesPerWr)
      : ring(peer, slots, slotBytes, maxBytesPerWr),
        sendMem(slots * slotBytes),
        recvMem(slots * slotBytes) {}

  struct Packet {
    IbvWrKind kind;
    uint32_t slot;
    size_t bytes;
    uint32_t immediate;
    size_t requests;
  };

  IbvRing ring;
  std::vector<uint8_t> sendMem;
  std::vector<uint8_t> recvMem;
  std::deque<Packet> wire;          // posted, not yet delivered to the peer
  std::deque<uint32_t> arrivals;    // delivered immediates the ring has not polled
  std::deque<IbvWrKind> completed;  // local send completions not yet polled
  size_t sendQueueUsed = 0;
  uint64_t sent = 0;
  uint64_t received = 0;

  uint8_t* sendSlot(uint32_t s) { return &sendMem[s * ring.slotBytes()]; }
  uint8_t* recvSlot(uint32_t s) { return &recvMem[s * ring.slotBytes()]; }

  // What IbvLink::postPending does, against the simulated queue.
  void post() {
    while (const auto w = ring.nextWrite()) {
      const size_t requests = ibvWritesPerMessage(w->bytes, ring.maxBytesPerWr());
      wire.push_back({IbvWrKind::Data, w->slot, w->bytes,
                      encodeDataImmediate(w->sequence, w->bytes), requests});
      sendQueueUsed += requests;
      ASSERT_LE(sendQueueUsed, ring.sendQueueDepth());
      ring.writePosted();
    }
    if (const auto released = ring.nextCredit()) {
      wire.push_back({IbvWrKind::Credit, 0, 0, encodeCreditImmediate(*released), 1});
      ++sendQueueUsed;
      ASSERT_LE(sendQueueUsed, ring.sendQueueDepth());
      ring.creditPosted(*released);
    }
  }

  // What IbvLink::progress does with its completion queue.
  void poll() {
    while (!arrivals.empty()) {
      const IbvImmediate imm = decodeImmediate(arrivals.front());
      arrivals.pop_front();
      if (imm.kind == IbvImmediate::Kind::Data) {
        ring.dataArrived(imm);
      } else {
        ring.creditArrived(imm);
      }
    }
    while (!completed.empty()) {
      ring.sendCompleted(completed.front());
      completed.pop_front();
    }
    post();
  }
};

// Delivers the oldest packet of `from` to `to`, as RC does: in order.
void deliver(Side& from, Side& to) {
  const Side::Packet p = from.wire.front();
  from.wire.pop_front();
  if (p.kind == IbvWrKind::Data) {
    std::memcpy(to.recvSlot(p.slot), from.sendSlot(p.slot), p.bytes);
  }
  // Each immediate consumes one posted receive; the bound says they suffice.
  ASSERT_LT(to.arrivals.size(), to.ring.recvQueueDepth());
  to.arrivals.push_back(p.immediate);
  from.completed.push_back(p.kind);
  from.sendQueueUsed -= p.requests;
}

uint8_t pattern(uint64_t message, size_t i) {
  return static_cast<uint8_t>(message * 37 + i * 11 + (i >> 7));
}
size_t lengthOf(uint64_t message, size_t slotBytes) {
  return (message * 7919) % (slotBytes + 1);  // includes 0 and slotBytes
}

// Both sides send `count` messages to each other while a seeded schedule
// interleaves sending, delivering, polling and consuming.
void exchange(uint32_t slots, size_t slotBytes, size_t maxBytesPerWr, uint64_t count,
              uint32_t seed) {
  Side a(1, slots, slotBytes, maxBytesPerWr);
  Side b(0, slots, slotBytes, maxBytesPerWr);
  std::mt19937 random(seed);
  auto trySend = [&](Side& s) {
    if (s.sent == count) return;
    const auto slot = s.ring.sendSlot();
    if (!slot) return;
    const size_t bytes = lengthOf(s.sent, slotBytes);
    for (size_t i = 0; i < bytes; ++i) s.sendSlot(*slot)[i] = pattern(s.sent, i);
    s.ring.commit(bytes);
    ++s.sent;
    s.post();
  };
  auto tryConsume = [&](Side& s) {
    if (s.received == count) return;
    const size_t bytes = lengthOf(s.received, slotBytes);
    const auto slot = s.ring.recvSlot(bytes);
    if (!slot) return;
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(s.recvSlot(*slot)[i], pattern(s.received, i))
          << "message " << s.received << " byte " << i;
    }
    s.ring.release();
    ++s.received;
    s.post();
  };
  for (uint64_t step = 0; step < 2000000; ++step) {
    if (a.received == count && b.received == count && a.ring.drained() && b.ring.drained()) {
      break;
    }
    switch (random() % 8) {
      case 0:
        trySend(a);
        break;
      case 1:
        trySend(b);
        break;
      case 2:
        if (!a.wire.empty()) deliver(a, b);
        break;
      case 3:
        if (!b.wire.empty()) deliver(b, a);
        break;
      case 4:
        a.poll();
        break;
      case 5:
        b.poll();
        break;
      case 6:
        tryConsume(a);
        break;
      case 7:
        tryConsume(b);
        break;
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(a.received, count);
  EXPECT_EQ(b.received, count);
  EXPECT_TRUE(a.ring.drained());
  EXPECT_TRUE(b.ring.drained());
}

TEST(IbvRing, MessagesFlowBothWaysUnderAnyInterleaving) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    exchange(4, 64, 64, 300, seed);
  }
}

TEST(IbvRing, OneSlotAndChunkedMessages) {
  exchange(1, 100, 100, 200, 7);
  exchange(3, 1000, 128, 200, 8);  // up to 8 writes per message
  exchange(2, 10, 1, 300, 9);      // one byte per write
}

TEST(IbvRing, SequenceWrapsPastTheImmediateBits) {
  exchange(2, 16, 16, 1000, 3);  // > 128 messages: the 7-bit sequence wraps many times
}

TEST(IbvRing, QueueDepths) {
  const IbvRing ring(0, 4, 1000, 300);
  EXPECT_EQ(ring.sendQueueDepth(), 4u * 4 + 1);
  EXPECT_EQ(ring.recvQueueDepth(), 8u);
  EXPECT_EQ(IbvRing(0, 8, 4096, 1 << 20).sendQueueDepth(), 9u);
}

TEST(IbvRing, SendSlotsWaitForCompletionAndWritesForCredit) {
  IbvRing ring(1, 2, 64, 64);
  EXPECT_EQ(ring.sendSlot(), 0u);
  EXPECT_EQ(ring.sendSlot(), 0u);  // the same slot until committed
  ring.commit(10);
  EXPECT_EQ(ring.sendSlot(), 1u);
  ring.commit(20);
  EXPECT_FALSE(ring.sendSlot().has_value());
  EXPECT_THROW(ring.commit(1), Error);
  ASSERT_TRUE(ring.nextWrite().has_value());
  EXPECT_EQ(ring.nextWrite()->bytes, 10u);
  ring.writePosted();
  ring.writePosted();
  EXPECT_FALSE(ring.drained());
  ring.sendCompleted(IbvWrKind::Data);
  EXPECT_EQ(ring.sendSlot(), 0u);  // slot 0 is free again locally...
  ring.commit(30);
  EXPECT_FALSE(ring.nextWrite().has_value());  // ...but the peer has not released message 0
  IbvImmediate credit{IbvImmediate::Kind::Credit, 0, 0, 1};
  ring.creditArrived(credit);
  ASSERT_TRUE(ring.nextWrite().has_value());
  EXPECT_EQ(ring.nextWrite()->sequence, 2u);
  EXPECT_EQ(ring.nextWrite()->slot, 0u);
  EXPECT_EQ(ring.nextWrite()->bytes, 30u);
}

TEST(IbvRing, CreditsCoalesceWhileOneIsInFlight) {
  IbvRing ring(1, 4, 8, 8);
  for (uint32_t s = 0; s < 3; ++s) ring.dataArrived({IbvImmediate::Kind::Data, s, 8, 0});
  EXPECT_FALSE(ring.nextCredit().has_value());
  ASSERT_EQ(ring.recvSlot(8), 0u);
  ring.release();
  ASSERT_EQ(ring.nextCredit(), 1u);
  ring.creditPosted(1);
  ring.release();
  ring.release();
  EXPECT_FALSE(ring.nextCredit().has_value());  // one in flight
  ring.sendCompleted(IbvWrKind::Credit);
  EXPECT_EQ(ring.nextCredit(), 3u);  // both releases in one credit
}

ErrorCode failure(const std::function<void()>& f, const std::string& expected) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    return e.code();
  }
  ADD_FAILURE() << "no error; expected " << expected;
  return ErrorCode::InternalError;
}

TEST(IbvRing, RefusesPeersThatBreakTheProtocol) {
  IbvRing ring(5, 2, 100, 100);
  EXPECT_EQ(failure(
                [&] {
                  ring.dataArrived({IbvImmediate::Kind::Data, 1, 10, 0});
                },
                "out of step"),
            ErrorCode::RemoteError);
  EXPECT_EQ(failure(
                [&] {
                  ring.dataArrived({IbvImmediate::Kind::Data, 0, 101, 0});
                },
                "more than the 100 byte slot"),
            ErrorCode::RemoteError);
  ring.dataArrived({IbvImmediate::Kind::Data, 0, 10, 0});
  ring.dataArrived({IbvImmediate::Kind::Data, 1, 20, 0});
  EXPECT_EQ(failure(
                [&] {
                  ring.dataArrived({IbvImmediate::Kind::Data, 2, 1, 0});
                },
                "without credit"),
            ErrorCode::RemoteError);
  EXPECT_EQ(failure([&] { ring.recvSlot(11); }, "disagree on the plan"), ErrorCode::RemoteError);
  EXPECT_EQ(ring.recvSlot(10), 0u);
  EXPECT_EQ(failure(
                [&] {
                  ring.creditArrived({IbvImmediate::Kind::Credit, 0, 0, 1});
                },
                "only 0 were written"),
            ErrorCode::RemoteError);
}

TEST(IbvRing, RefusesMisuse) {
  IbvRing ring(5, 2, 100, 100);
  EXPECT_EQ(failure([&] { ring.release(); }, "without a message"), ErrorCode::InternalError);
  EXPECT_EQ(failure([&] { ring.sendCompleted(IbvWrKind::Data); }, "out of order"),
            ErrorCode::InternalError);
  EXPECT_EQ(failure([&] { ring.commit(101); }, "without a free slot"), ErrorCode::InternalError);
  EXPECT_EQ(failure([] { IbvRing(0, 0, 100, 100); }, "out of range"), ErrorCode::InvalidArgument);
  EXPECT_EQ(failure([] { IbvRing(0, 2, 0, 100); }, "out of range"), ErrorCode::InvalidArgument);
  EXPECT_EQ(failure([] { IbvRing(0, 2, IbvConnection::kMaxSlotBytes + 1, 100); }, "out of range"),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(failure([] { IbvRing(0, 2, 100, 0); }, "out of range"), ErrorCode::InvalidArgument);
}

}  // namespace
}  // namespace loom
#endif  // LOOM_HAVE_IBVERBS
