// FunctionRef (core/function_ref.h): calls what it refers to, without a copy,
// and is two words whatever the callable captures.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "collectives/executor/waiter.h"
#include "core/function_ref.h"

namespace loom {
namespace {

std::string describeTwice(FunctionRef<std::string()> describe) { return describe() + describe(); }

int apply(FunctionRef<int(int, int)> f, int a, int b) { return f(a, b); }

TEST(FunctionRef, CallsTheCallableWithItsArgumentsAndReturnsItsResult) {
  EXPECT_EQ(apply([](int a, int b) { return a * 10 + b; }, 4, 2), 42);
  EXPECT_EQ(apply([](int a, int b) { return a - b; }, 1, 3), -2);
  const auto twice = [](int x) { return 2 * x; };
  const FunctionRef<int(int)> doubled = twice;
  EXPECT_EQ(doubled(21), 42);
}

TEST(FunctionRef, RefersToTheCallableInsteadOfCopyingIt) {
  int calls = 0;
  std::array<int, 16> big{};  // far more than std::function keeps without a heap block
  big[15] = 7;
  auto counting = [&calls, big, suffix = std::string("!")] {
    ++calls;
    return std::to_string(big[15]) + suffix;
  };
  EXPECT_EQ(describeTwice(counting), "7!7!");
  EXPECT_EQ(calls, 2);
  // A reference to a reference calls the same callable.
  const FunctionRef<std::string()> ref = counting;
  const FunctionRef<std::string()> copy = ref;
  EXPECT_EQ(copy(), "7!");
  EXPECT_EQ(calls, 3);
  static_assert(sizeof(FunctionRef<std::string()>) == 2 * sizeof(void*));
}

TEST(FunctionRef, AWaitersDescriptionIsBuiltOnlyWhenAnErrorNeedsIt) {
  std::atomic<bool> aborted{false};
  WaitPolicy policy;
  policy.abortFlag = &aborted;
  OperationLabel label;
  Waiter waiter(policy, label);
  int built = 0;
  const std::string peer = "rank 1";
  auto describe = [&built, &peer, &label] {
    ++built;
    return peer + " to publish " + label.toString();
  };
  waiter.idle(waiter.snapshot(), describe);
  EXPECT_EQ(built, 0);
  aborted = true;
  try {
    waiter.idle(waiter.snapshot(), describe);
    ADD_FAILURE() << "an aborted wait went on";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Aborted);
    EXPECT_NE(std::string(e.what()).find("waiting for rank 1 to publish"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(built, 1);
}

}  // namespace
}  // namespace loom
