// The rendezvous relays what ranks say they are doing, so a rank that timed out
// can report what peers on other hosts were doing (issue: hang localization).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_parser.h"
#include "core/error.h"
#include "tests/unit/bootstrap_fixture.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

PeerStatus status(bool busy, uint32_t collective, uint64_t sequence, uint64_t count,
                  bool failed = false) {
  return PeerStatus{.busy = busy,
                    .failed = failed,
                    .collective = collective,
                    .sequence = sequence,
                    .count = count};
}

TEST(PeerStatus, ServerRelaysBusyIdleSilentAndGone) {
  const UniqueId id = fixture::loopbackServer();
  auto boots = fixture::joinAll(id, 5);
  ASSERT_TRUE(boots[1]->reportStatus(status(true, 2, 41, 1000003)));
  ASSERT_TRUE(boots[2]->reportStatus(status(true, 0, 7, 5)));
  ASSERT_TRUE(boots[2]->reportStatus(status(false, 0, 8, 5)));  // that call ended
  ASSERT_TRUE(boots[4]->reportStatus(status(false, 1, 9, 6, /*failed=*/true)));
  boots[3]->leave("");
  boots[3].reset();
  // Reports travel on other connections than the query, so the server may
  // read them later: ask until every rank's last report shows (bounded).
  std::vector<PeerReport> reports;
  const Deadline settled = Deadline::after(5s);
  do {
    std::this_thread::sleep_for(20ms);
    reports = boots[0]->queryStatuses(Deadline::after(5s));
    ASSERT_EQ(reports.size(), 5u);
  } while (!settled.expired() && (reports[1].state != PeerReport::State::Busy ||
                                  reports[2].state != PeerReport::State::Idle ||
                                  reports[3].state != PeerReport::State::Gone ||
                                  reports[4].state != PeerReport::State::Failed));
  ASSERT_EQ(reports.size(), 5u);
  EXPECT_EQ(reports[0].state, PeerReport::State::Silent);
  EXPECT_EQ(reports[1].state, PeerReport::State::Busy);
  EXPECT_TRUE(reports[1].status.busy);
  EXPECT_EQ(reports[1].status.collective, 2u);
  EXPECT_EQ(reports[1].status.sequence, 41u);
  EXPECT_EQ(reports[1].status.count, 1000003u);
  EXPECT_GE(reports[1].ageMillis, 20u);
  EXPECT_LT(reports[1].ageMillis, 5000u);
  EXPECT_EQ(reports[2].state, PeerReport::State::Idle);
  EXPECT_EQ(reports[2].status.sequence, 8u);
  EXPECT_EQ(reports[3].state, PeerReport::State::Gone);
  EXPECT_EQ(reports[4].state, PeerReport::State::Failed);
  EXPECT_TRUE(reports[4].status.failed);
  EXPECT_EQ(reports[4].status.collective, 1u);
  EXPECT_EQ(reports[4].status.sequence, 9u);

  // A query does not disturb the stream: rounds still work afterwards.
  std::vector<std::thread> threads;
  for (int r : {0, 1, 2, 4}) {
    threads.emplace_back([&, r] {
      try {
        boots[r]->allGather("x", Deadline::after(5s));
        ADD_FAILURE() << "rank 3 left, the round cannot complete";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("already left"), std::string::npos) << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
}

// A rank that times out asks for everyone's state even when a peer has died
// meanwhile: the dead one shows as Gone, and the death stays the sticky error.
TEST(PeerStatus, QueryAfterADeadRankShowsItGone) {
  const UniqueId id = fixture::loopbackServer();
  auto boots = fixture::joinAll(id, 3);
  ASSERT_TRUE(boots[2]->reportStatus(status(true, 0, 5, 9)));
  boots[1].reset();  // no leave(): as if its process died
  std::vector<PeerReport> reports;
  const Deadline settled = Deadline::after(5s);
  do {
    std::this_thread::sleep_for(5ms);
    reports = boots[0]->queryStatuses(Deadline::after(5s));
    ASSERT_EQ(reports.size(), 3u);
  } while (!settled.expired() && (reports[1].state != PeerReport::State::Gone ||
                                  reports[2].state != PeerReport::State::Busy));
  EXPECT_EQ(reports[1].state, PeerReport::State::Gone);
  EXPECT_EQ(reports[2].state, PeerReport::State::Busy);
  EXPECT_EQ(reports[2].status.sequence, 5u);
  try {
    boots[0]->checkPeers();
    ADD_FAILURE() << "checkPeers forgot that rank 1 died";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("rank 1 (pid "), std::string::npos) << e.what();
  }
}

TEST(PeerStatus, WireRoundTripAndRejects) {
  using namespace rendezvous;
  const PeerStatus s = status(true, 3, 1ull << 40, 12345);
  const PeerStatus back = decodeStatus(encodeStatus(s));
  EXPECT_EQ(back.busy, s.busy);
  EXPECT_EQ(back.collective, s.collective);
  EXPECT_EQ(back.sequence, s.sequence);
  EXPECT_EQ(back.count, s.count);
  EXPECT_THROW(decodeStatus(encodeStatus(s).substr(1)), Error);
  std::string badBusy = encodeStatus(s);
  badBusy[0] = 3;
  EXPECT_THROW(decodeStatus(badBusy), Error);
  const PeerStatus failed = decodeStatus(encodeStatus(status(false, 1, 2, 3, true)));
  EXPECT_TRUE(failed.failed);
  EXPECT_FALSE(failed.busy);

  std::vector<PeerReport> reports(3);
  reports[1].state = PeerReport::State::Busy;
  reports[1].status = s;
  reports[1].ageMillis = 99;
  reports[2].state = PeerReport::State::Gone;
  const std::string payload = encodeReports(reports);
  EXPECT_EQ(payload.size(), 3 * kReportBytes);
  const auto decoded = decodeReports(payload, 3);
  EXPECT_EQ(decoded[1].state, PeerReport::State::Busy);
  EXPECT_EQ(decoded[1].status.sequence, s.sequence);
  EXPECT_EQ(decoded[1].ageMillis, 99u);
  EXPECT_EQ(decoded[2].state, PeerReport::State::Gone);
  EXPECT_THROW(decodeReports(payload, 2), Error);
  std::string badState = payload;
  badState[0] = 5;
  EXPECT_THROW(decodeReports(badState, 3), Error);

  // The server's parser refuses a status of the wrong length before buffering it.
  MessageParser parser;
  uint8_t hello[kHelloBytes];
  Hello h;
  h.host = "node";
  encodeHello(h, hello);
  parser.feed(hello, sizeof(hello));
  ASSERT_TRUE(parser.next().has_value());
  const std::string shortStatus = messageHeader(MessageKind::Status, kStatusBytes - 1);
  parser.feed(shortStatus.data(), shortStatus.size());
  EXPECT_THROW(parser.next(), Error);
  // A frame parser bounds States by the world size.
  FrameParser frames(2);
  const std::string tooMany = frame(FrameKind::States, encodeReports(reports));
  frames.feed(tooMany.data(), tooMany.size());
  EXPECT_THROW(frames.next(), Error);
}

}  // namespace
}  // namespace loom
