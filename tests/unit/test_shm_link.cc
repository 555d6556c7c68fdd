// ShmLink and ShmDomain between threads of one process: FIFO order, sizes,
// back-pressure, and the doorbell waking a sleeping receiver.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/error.h"
#include "transports/shm/shm_domain.h"

namespace loom {
namespace {

uint64_t uniqueTag() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
}

struct TwoRanks {
  ShmConfig config;
  uint64_t tag = uniqueTag();
  std::unique_ptr<ShmDomain> a;
  std::unique_ptr<ShmDomain> b;
  std::unique_ptr<Link> ab;  // rank 0's link to 1
  std::unique_ptr<Link> ba;

  explicit TwoRanks(size_t slotBytes = 4096, size_t slots = 4) {
    config.slotBytes = slotBytes;
    config.slots = slots;
    config.arenaBytes = 4096;
    a = std::make_unique<ShmDomain>(tag, 0, 2, config);
    b = std::make_unique<ShmDomain>(tag, 1, 2, config);
    a->attach({1});
    b->attach({0});
    a->unlinkOwn();
    b->unlinkOwn();
    ab = a->makeLink(1);
    ba = b->makeLink(0);
  }
};

TEST(ShmLink, MessagesArriveInOrderWithTheirSizes) {
  TwoRanks t;
  for (int i = 0; i < 3; ++i) {
    void* slot = t.ab->trySendSlot(100 + i);
    ASSERT_NE(slot, nullptr);
    std::memset(slot, 'a' + i, 100 + i);
    t.ab->commitSend(100 + i);
  }
  for (int i = 0; i < 3; ++i) {
    const auto* data = static_cast<const char*>(t.ba->tryRecv(100 + i));
    ASSERT_NE(data, nullptr);
    EXPECT_EQ(data[0], 'a' + i);
    EXPECT_EQ(data[99 + i], 'a' + i);
    t.ba->releaseRecv();
  }
  EXPECT_EQ(t.ba->tryRecv(1), nullptr);
}

TEST(ShmLink, FullFifoRefusesUntilReceiverReleases) {
  TwoRanks t(4096, 2);
  ASSERT_NE(t.ab->trySendSlot(8), nullptr);
  t.ab->commitSend(8);
  ASSERT_NE(t.ab->trySendSlot(8), nullptr);
  t.ab->commitSend(8);
  EXPECT_EQ(t.ab->trySendSlot(8), nullptr);
  ASSERT_NE(t.ba->tryRecv(8), nullptr);
  t.ba->releaseRecv();
  EXPECT_NE(t.ab->trySendSlot(8), nullptr);
}

TEST(ShmLink, SizeMismatchIsARemoteError) {
  TwoRanks t;
  t.ab->trySendSlot(16);
  t.ab->commitSend(16);
  try {
    t.ba->tryRecv(32);
    FAIL() << "expected a size mismatch error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("16"), std::string::npos);
  }
}

// Call stamps: equal ones (or an unstamped side) pass; different ones are a
// LinkStampMismatch naming the sender, before the data is handed out.
TEST(ShmLink, CallStampsTravelWithMessages) {
  TwoRanks t;
  for (const uint32_t sent : {7u, 0u, 7u}) {
    t.ab->stampSends(sent);
    t.ab->trySendSlot(16);
    t.ab->commitSend(16);
  }
  t.ba->expectStamp(7);
  ASSERT_NE(t.ba->tryRecv(16), nullptr);
  t.ba->releaseRecv();
  ASSERT_NE(t.ba->tryRecv(16), nullptr);  // unstamped: not checked
  t.ba->releaseRecv();
  t.ba->expectStamp(8);
  try {
    t.ba->tryRecv(16);
    FAIL() << "expected a stamp mismatch";
  } catch (const LinkStampMismatch& e) {
    EXPECT_EQ(e.peer(), 0);
    EXPECT_EQ(e.code(), ErrorCode::InvalidUsage);
  }
}

TEST(ShmLink, ZeroByteMessagesAndFullSlots) {
  TwoRanks t(4096, 2);
  ASSERT_NE(t.ab->trySendSlot(0), nullptr);
  t.ab->commitSend(0);
  EXPECT_NE(t.ba->tryRecv(0), nullptr);
  t.ba->releaseRecv();
  EXPECT_THROW(t.ab->trySendSlot(t.ab->maxMessageBytes() + 1), Error);
}

TEST(ShmLink, StreamsManyMessagesBetweenThreadsWithSleepingReceiver) {
  TwoRanks t(1024, 3);
  constexpr int kMessages = 5000;
  std::thread sender([&] {
    std::mt19937 rng(7);
    for (int i = 0; i < kMessages; ++i) {
      if (i % 1000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const size_t bytes = 1 + rng() % 1024;
      void* slot = nullptr;
      while ((slot = t.ab->trySendSlot(bytes)) == nullptr) {
        const uint32_t seen = t.a->myDoorbell().arm();
        if ((slot = t.ab->trySendSlot(bytes)) != nullptr) {
          t.a->myDoorbell().disarm();
          break;
        }
        t.a->myDoorbell().sleep(seen, 1000000);
      }
      std::memset(slot, i & 0xff, bytes);
      t.ab->commitSend(bytes);
    }
  });
  std::mt19937 rng(7);
  int bad = 0;
  for (int i = 0; i < kMessages; ++i) {
    const size_t bytes = 1 + rng() % 1024;
    const char* data = nullptr;
    while ((data = static_cast<const char*>(t.ba->tryRecv(bytes))) == nullptr) {
      const uint32_t seen = t.b->myDoorbell().arm();
      if (t.ba->tryRecv(bytes) != nullptr) {
        t.b->myDoorbell().disarm();
        continue;
      }
      t.b->myDoorbell().sleep(seen, 1000000);
    }
    for (size_t k = 0; k < bytes; ++k) bad += static_cast<unsigned char>(data[k]) != (i & 0xff);
    t.ba->releaseRecv();
  }
  sender.join();
  EXPECT_EQ(bad, 0);
}

TEST(ShmDomain, MismatchedSettingsAreRefused) {
  ShmConfig c;
  c.slotBytes = 4096;
  c.arenaBytes = 4096;
  const uint64_t tag = uniqueTag();
  ShmDomain a(tag, 0, 2, c);
  c.slotBytes = 8192;
  ShmDomain b(tag, 1, 2, c);
  EXPECT_THROW(a.attach({1}), Error);
}

TEST(ShmDomain, SegmentsAreUnlinkedAfterSetUp) {
  TwoRanks t;
  const std::string path = "/dev/shm" + shmSegmentName(t.tag, 0);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " should be gone after unlinkOwn";
}

}  // namespace
}  // namespace loom
