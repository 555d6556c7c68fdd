#if LOOM_HAVE_IBVERBS
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "transports/ibverbs/ibv_devices.h"
#include "transports/ibverbs/ibv_transport.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

bool hasActivePort() {
  for (const IbvDeviceInfo& d : listIbvDevices()) {
    for (const IbvPortInfo& p : d.ports) {
      if (p.active) return true;
    }
  }
  return false;
}

// An in-process all-gather for ranks that are threads; gives up after a few
// seconds so a broken test fails instead of hanging.
class AllGather {
 public:
  explicit AllGather(int nranks) : nranks_(nranks) {}
  std::vector<std::string> operator()(int rank, const std::string& mine) {
    std::unique_lock lock(mutex_);
    const uint64_t round = round_;
    if (blobs_.empty()) blobs_.resize(nranks_);
    blobs_[rank] = mine;
    if (++arrived_ == nranks_) {
      result_ = std::move(blobs_);
      blobs_.clear();
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
    } else if (!changed_.wait_for(lock, 10s, [&] { return round_ != round; })) {
      throw Error(ErrorCode::RemoteError, "test all-gather timed out");
    }
    return result_;
  }

 private:
  int nranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> blobs_;
  std::vector<std::string> result_;
  int arrived_ = 0;
  uint64_t round_ = 0;
};

TEST(IbvTransport, NoDeviceIsAClearError) {
  if (!listIbvDevices().empty()) GTEST_SKIP() << "this host has RDMA devices";
  int exchanges = 0;
  const IbvExchange exchange = [&](const std::string&) {
    ++exchanges;
    return std::vector<std::string>(2);
  };
  try {
    connectIbvLinks(0, {1}, 1, IbvConfig{}, exchange, Deadline::after(5s), nullptr);
    FAIL() << "connected without an RDMA device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidUsage) << e.what();
    EXPECT_NE(std::string(e.what()).find("no RDMA device"), std::string::npos) << e.what();
  }
  EXPECT_EQ(exchanges, 0);  // failed before involving anyone else
}

TEST(IbvTransport, RankWithoutPeersOnlyTakesPartInTheExchanges) {
  std::vector<std::string> seen;
  const IbvExchange exchange = [&](const std::string& mine) {
    seen.push_back(mine);
    return std::vector<std::string>(3);
  };
  const auto links = connectIbvLinks(2, {}, 1, IbvConfig{}, exchange, Deadline::after(5s), nullptr);
  EXPECT_TRUE(links.empty());
  EXPECT_EQ(seen, (std::vector<std::string>{"", ""}));
}

TEST(IbvTransport, RefusesBadArguments) {
  const IbvExchange exchange = [](const std::string&) { return std::vector<std::string>(4); };
  auto code = [&](int rank, std::vector<int> peers, IbvConfig config) {
    try {
      connectIbvLinks(rank, peers, 1, config, exchange, Deadline::after(5s), nullptr);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::InternalError;
  };
  IbvConfig zeroSlots;
  zeroSlots.slots = 0;
  IbvConfig hugeSlots;
  hugeSlots.slotBytes = IbvConnection::kMaxSlotBytes + 1;
  IbvConfig badPort;
  badPort.port = 300;
  EXPECT_EQ(code(0, {1}, zeroSlots), ErrorCode::InvalidArgument);
  EXPECT_EQ(code(0, {1}, hugeSlots), ErrorCode::InvalidArgument);
  EXPECT_EQ(code(0, {1}, badPort), ErrorCode::InvalidArgument);
  EXPECT_EQ(code(0, {0}, IbvConfig{}), ErrorCode::InvalidArgument);     // itself
  EXPECT_EQ(code(0, {1, 1}, IbvConfig{}), ErrorCode::InvalidArgument);  // repeated
  EXPECT_EQ(code(-1, {1}, IbvConfig{}), ErrorCode::InvalidArgument);
}

TEST(IbvTransport, AbortIsHonouredBeforeTheExchange) {
  std::atomic<bool> aborted{true};
  const IbvExchange exchange = [](const std::string&) { return std::vector<std::string>(1); };
  try {
    connectIbvLinks(0, {}, 1, IbvConfig{}, exchange, Deadline::after(5s), &aborted);
    FAIL() << "ignored the abort flag";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Aborted) << e.what();
  }
}

// Needs an RDMA NIC with an ACTIVE port: two ranks in this process connect
// through it (loopback) and exchange messages both ways, including empty,
// odd-sized, multi-write and full-slot ones. Skipped elsewhere.
TEST(IbvTransport, LoopbackExchangesMessages) {
  if (!hasActivePort()) GTEST_SKIP() << describeIbvDevices(listIbvDevices());
  IbvConfig config;
  config.slotBytes = 64 * 1024;
  config.slots = 3;
  config.maxBytesPerWr = 4096;  // exercises chained writes
  AllGather gather(2);
  std::vector<std::unique_ptr<Link>> links[2];
  std::string failures[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        links[r] = connectIbvLinks(
            r, {1 - r}, 0x5eed, config,
            [&gather, r](const std::string& mine) { return gather(r, mine); }, Deadline::after(10s),
            nullptr);
      } catch (const Error& e) {
        failures[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures[0], "");
  ASSERT_EQ(failures[1], "");
  ASSERT_EQ(links[0].size(), 1u);
  ASSERT_EQ(links[1].size(), 1u);

  const size_t sizes[] = {0, 1, 4095, 4097, 65536, 12345, 3};
  constexpr int kMessages = 200;
  auto sizeOf = [&](int i) { return sizes[i % std::size(sizes)]; };
  auto byteOf = [](int from, int i, size_t k) {
    return static_cast<uint8_t>(from * 101 + i * 7 + k * 13);
  };
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([&, r] {
      Link& link = *links[r][0];
      int sent = 0;
      int received = 0;
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      try {
        while (sent < kMessages || received < kMessages || !link.sendsDrained()) {
          if (std::chrono::steady_clock::now() > deadline) {
            failures[r] = fmt::format("timed out: sent {}, received {}", sent, received);
            return;
          }
          link.progress();
          if (sent < kMessages) {
            if (void* slot = link.trySendSlot(sizeOf(sent))) {
              auto* p = static_cast<uint8_t*>(slot);
              for (size_t k = 0; k < sizeOf(sent); ++k) p[k] = byteOf(r, sent, k);
              link.commitSend(sizeOf(sent));
              ++sent;
            }
          }
          if (received < kMessages) {
            if (const void* data = link.tryRecv(sizeOf(received))) {
              const auto* p = static_cast<const uint8_t*>(data);
              for (size_t k = 0; k < sizeOf(received); ++k) {
                if (p[k] != byteOf(1 - r, received, k)) {
                  failures[r] = fmt::format("message {} byte {} is wrong", received, k);
                  return;
                }
              }
              link.releaseRecv();
              ++received;
            }
          }
        }
      } catch (const Error& e) {
        failures[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

}  // namespace
}  // namespace loom
#endif  // LOOM_HAVE_IBVERBS
