// The shrink agreement: its wire forms, the server's bookkeeping, and a real
// server whose survivors agree and then meet at the rendezvous it started.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_parser.h"
#include "bootstrap/secret.h"
#include "bootstrap/shrink_agreement.h"
#include "core/error.h"
#include "tests/unit/bootstrap_fixture.h"

namespace loom {
namespace {

using namespace std::chrono_literals;
using rendezvous::decodeShrinkRequest;
using rendezvous::decodeShrinkVerdict;
using rendezvous::encodeShrinkRequest;
using rendezvous::encodeShrinkVerdict;
using Clock = ShrinkAgreement::Clock;

TEST(ShrinkWire, RequestsAndVerdictsRoundTrip) {
  const ShrinkRequest request{1500ms, {3, 1}};
  const ShrinkRequest back = decodeShrinkRequest(encodeShrinkRequest(request), 4);
  EXPECT_EQ(back.window, 1500ms);
  EXPECT_EQ(back.excluded, request.excluded);

  ShrinkVerdict verdict;
  verdict.port = 40123;
  verdict.salt[0] = 7;
  verdict.salt[15] = 9;
  verdict.out = {0, 2};
  const ShrinkVerdict again = decodeShrinkVerdict(encodeShrinkVerdict(verdict), 3);
  EXPECT_EQ(again.port, 40123);
  EXPECT_EQ(again.salt, verdict.salt);
  EXPECT_EQ(again.out, verdict.out);
  EXPECT_TRUE(decodeShrinkVerdict(encodeShrinkVerdict(ShrinkVerdict{}), 1).out.empty());
}

TEST(ShrinkWire, MalformedPayloadsAreRefused) {
  const auto refused = [](auto decode) {
    try {
      decode();
    } catch (const Error& e) {
      return e.code() == ErrorCode::RemoteError;
    }
    return false;
  };
  const std::string request = encodeShrinkRequest({1s, {1, 2}});
  EXPECT_TRUE(refused([&] { decodeShrinkRequest(request, 2); }));  // rank 2 of 2
  EXPECT_TRUE(refused([&] { decodeShrinkRequest(request.substr(0, 12), 4); }));
  EXPECT_TRUE(refused([&] { decodeShrinkRequest(request + "x", 4); }));
  EXPECT_TRUE(refused([&] { decodeShrinkRequest("", 4); }));
  EXPECT_TRUE(refused([&] { decodeShrinkRequest(encodeShrinkRequest({1s, {0, 1, 2}}), 2); }));

  ShrinkVerdict verdict;
  verdict.out = {2, 1};
  EXPECT_TRUE(refused([&] { decodeShrinkVerdict(encodeShrinkVerdict(verdict), 4); }));
  verdict.out = {1, 1};
  EXPECT_TRUE(refused([&] { decodeShrinkVerdict(encodeShrinkVerdict(verdict), 4); }));
  verdict.out = {4};
  EXPECT_TRUE(refused([&] { decodeShrinkVerdict(encodeShrinkVerdict(verdict), 4); }));
  verdict.out = {};
  std::string bigPort = encodeShrinkVerdict(verdict);
  bigPort[2] = 1;  // port 65536 and up
  EXPECT_TRUE(refused([&] { decodeShrinkVerdict(bigPort, 4); }));
  EXPECT_TRUE(refused([&] { decodeShrinkVerdict(bigPort.substr(0, 10), 4); }));
}

TEST(ShrinkAgreementRounds, WaitsForEveryLiveRankThenOutsTheDeadAndTheNamed) {
  ShrinkAgreement agreement(5);
  const auto now = Clock::now();
  EXPECT_FALSE(agreement.decided(now));
  agreement.markGone(1);                 // died before anyone asked
  agreement.ask(0, {10s, {4}}, now);     // names 4
  EXPECT_FALSE(agreement.decided(now));  // 2 and 3 may still ask
  agreement.ask(3, {10s, {}}, now);
  EXPECT_FALSE(agreement.decided(now));
  agreement.markGone(2);  // dies during the agreement
  ASSERT_TRUE(agreement.decided(now));
  std::vector<uint32_t> out;
  EXPECT_EQ(agreement.close(&out), (std::vector<int>{0, 3}));
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 2, 4}));
  EXPECT_EQ(agreement.survivors(), 2);
  EXPECT_TRUE(agreement.isOut(4));
  EXPECT_FALSE(agreement.open());
}

TEST(ShrinkAgreementRounds, TheWindowOutsSilentRanksAndLaterRoundsKeepThemOut) {
  ShrinkAgreement agreement(3);
  const auto now = Clock::now();
  agreement.ask(1, {2s, {}}, now);
  agreement.ask(0, {60s, {}}, now + 1s);  // the first asker's window holds
  EXPECT_FALSE(agreement.decided(now + 1999ms));
  ASSERT_TRUE(agreement.decided(now + 2s));
  std::vector<uint32_t> out;
  EXPECT_EQ(agreement.close(&out), (std::vector<int>{0, 1}));
  EXPECT_EQ(out, std::vector<uint32_t>{2});

  // A second shrink of the same communicator: rank 2 stays out; rank 0 names 1.
  agreement.ask(0, {1s, {1}}, now + 5s);
  ASSERT_TRUE(agreement.decided(now + 5s));
  EXPECT_EQ(agreement.close(&out), std::vector<int>{0});
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(agreement.survivors(), 1);
}

// A rank's bootstrap disappears (its process died); the others agree without
// waiting for it, all get the same verdict, and meet at the new rendezvous.
TEST(ShrinkAgreementServer, SurvivorsAgreeAndMeetAtTheNewRendezvous) {
  const UniqueId id = fixture::loopbackServer();
  auto boots = fixture::joinAll(id, 4);
  boots[2].reset();  // no leave(): a death to the server
  std::vector<ShrinkVerdict> verdicts(4);
  std::vector<std::thread> threads;
  for (const int r : {0, 1, 3}) {
    threads.emplace_back([&, r] {
      ShrinkRequest request{30s, {}};
      if (r == 3) request.excluded = {1};
      verdicts[r] = boots[r]->agreeToShrink(request, Deadline::after(10s));
    });
  }
  for (auto& t : threads) t.join();
  for (const int r : {0, 1, 3}) {
    EXPECT_EQ(verdicts[r].out, (std::vector<uint32_t>{1, 2})) << "rank " << r;
  }
  // Rank 1, named by rank 3, may have asked after the round closed: it only
  // learns it is out. The survivors share one new rendezvous.
  EXPECT_EQ(verdicts[3].salt, verdicts[0].salt);
  EXPECT_EQ(verdicts[3].port, verdicts[0].port);
  ASSERT_NE(verdicts[0].port, 0);

  // Ranks 0 and 3 become ranks 0 and 1 of the new rendezvous.
  UniqueId next = id;
  next.port = verdicts[0].port;
  next.secret = childSecret(id.secret, kShrinkSecretLabel, verdicts[0].salt);
  next.job = childJob(id.secret, kShrinkJobLabel, verdicts[0].salt);
  // Without the parent's secret the new rendezvous is closed.
  UniqueId guessed = next;
  guessed.secret = id.secret;
  EXPECT_THROW(Bootstrap::join(guessed, 0, 2, Deadline::after(2s)), Error);

  auto survivors = fixture::joinAll(next, 2);
  std::vector<std::string> gathered[2];
  std::thread other([&] { gathered[1] = survivors[1]->allGather("three", Deadline::after(5s)); });
  gathered[0] = survivors[0]->allGather("zero", Deadline::after(5s));
  other.join();
  EXPECT_EQ(gathered[0], (std::vector<std::string>{"zero", "three"}));
  EXPECT_EQ(gathered[1], gathered[0]);
  for (auto& boot : survivors) boot->leave("");
  for (const int r : {0, 1, 3}) boots[r]->leave("");
}

}  // namespace
}  // namespace loom
