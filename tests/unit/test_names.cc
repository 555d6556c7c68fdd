// The shared name tables (core/names.h), the environment choices read through
// them, and the DataType visitor (core/types.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "comm/config.h"
#include "compression/codec_config.h"
#include "core/env.h"
#include "core/error.h"
#include "core/names.h"
#include "core/types.h"

namespace loom {
namespace {

enum class Fruit { Apple, Pear, Plum, Quince };
constexpr Named<Fruit> kFruitNames[] = {
    {Fruit::Apple, "apple"}, {Fruit::Pear, "pear"}, {Fruit::Plum, "plum"}};

TEST(Names, NameOfEveryValueAndTheFallbackForOneMissing) {
  EXPECT_EQ(nameIn(kFruitNames, Fruit::Apple), "apple");
  EXPECT_EQ(nameIn(kFruitNames, Fruit::Plum), "plum");
  EXPECT_EQ(nameIn(kFruitNames, Fruit::Quince), "?");
  EXPECT_EQ(nameIn(kFruitNames, Fruit::Quince, ""), "");
  static_assert(nameIn(kFruitNames, Fruit::Pear) == "pear");
}

TEST(Names, ValueOfEveryWordAndNoneForAnythingElse) {
  for (const Named<Fruit>& entry : kFruitNames) {
    EXPECT_EQ(valueIn(kFruitNames, entry.name), entry.value) << entry.name;
  }
  EXPECT_EQ(valueIn(kFruitNames, ""), std::nullopt);
  EXPECT_EQ(valueIn(kFruitNames, "Apple"), std::nullopt);  // words are exact
  EXPECT_EQ(valueIn(kFruitNames, "apple "), std::nullopt);
  EXPECT_EQ(valueIn(kFruitNames, "quince"), std::nullopt);
}

TEST(Names, EveryWordInOrderForMessages) {
  EXPECT_EQ(namesIn(kFruitNames), "apple, pear, plum");
  constexpr Named<Fruit> kOne[] = {{Fruit::Plum, "plum"}};
  EXPECT_EQ(namesIn(kOne), "plum");
}

/// Sets one variable for a test and restores what was there.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~EnvVar() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(EnvChoice, UnsetOrEmptyIsNoChoiceAndAWordIsItsValue) {
  for (const char* none : {static_cast<const char*>(nullptr), ""}) {
    const EnvVar unset("LOOM_TEST_FRUIT", none);
    EXPECT_EQ(envChoice("LOOM_TEST_FRUIT", kFruitNames), std::nullopt);
  }
  const EnvVar pear("LOOM_TEST_FRUIT", "pear");
  EXPECT_EQ(envChoice("LOOM_TEST_FRUIT", kFruitNames), Fruit::Pear);
}

TEST(EnvChoice, ABadWordNamesTheVariableAndEveryWord) {
  for (const char* bad : {" ", "Pear", "quince", "pear,plum"}) {
    const EnvVar var("LOOM_TEST_FRUIT", bad);
    try {
      envChoice("LOOM_TEST_FRUIT", kFruitNames);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_EQ(std::string(e.what()),
                "LOOM_TEST_FRUIT='" + std::string(bad) + "' is not one of apple, pear, plum");
    }
  }
}

TEST(EnvChoice, TheCommunicatorSettingsReadTheirTables) {
  const EnvVar algo("LOOM_ALGO", "tree");
  const EnvVar net("LOOM_NET", "ucx");
  const EnvVar path("LOOM_CUDA_PATH", "staged");
  const EnvVar transport("LOOM_TRANSPORT", "tcp");
  const EnvVar scope("LOOM_CUDA_SCOPE", "system");
  const CommConfig config = CommConfig::fromEnvironment();
  EXPECT_EQ(config.algorithm, Algorithm::Tree);
  EXPECT_EQ(config.net, NetChoice::Ucx);
  EXPECT_EQ(netName(config.net), "ucx");
  EXPECT_EQ(config.cudaPath, CudaPath::Staged);
  EXPECT_EQ(config.transport, TransportChoice::Tcp);
  EXPECT_TRUE(config.cudaSystemScope);
}

TEST(EnvChoice, TheCommunicatorDefaultsWhenUnset) {
  const EnvVar algo("LOOM_ALGO", nullptr);
  const EnvVar net("LOOM_NET", nullptr);
  const EnvVar path("LOOM_CUDA_PATH", nullptr);
  const EnvVar transport("LOOM_TRANSPORT", nullptr);
  const EnvVar scope("LOOM_CUDA_SCOPE", nullptr);
  const CommConfig config = CommConfig::fromEnvironment();
  EXPECT_EQ(config.algorithm, std::nullopt);
  EXPECT_EQ(config.net, NetChoice::Auto);
  EXPECT_EQ(config.cudaPath, CudaPath::Kernel);
  EXPECT_EQ(config.transport, TransportChoice::Auto);
  EXPECT_FALSE(config.cudaSystemScope);
}

TEST(EnvChoice, ABadCommunicatorSettingIsRejected) {
  const EnvVar algo("LOOM_ALGO", "pairwise");  // a plan family, not a choice
  try {
    CommConfig::fromEnvironment();
    ADD_FAILURE() << "LOOM_ALGO=pairwise accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(std::string(e.what()),
              "LOOM_ALGO='pairwise' is not one of ring, tree, direct, hierarchical, hosttree");
  }
}

TEST(CodecNames, EveryKindAndAlgorithmRoundTrips) {
  for (const char* text : {"none", "int8", "topk", "int8:algo=twoshot", "int8:algo=ring",
                           "topk:0.5,algo=allgather", "topk:algo=auto"}) {
    const CodecConfig c = parseCodecConfig(text);
    EXPECT_EQ(parseCodecConfig(toString(c)), c) << text;
  }
  EXPECT_EQ(codecKindName(CodecKind::Topk), "topk");
  EXPECT_EQ(compressedAlgorithmName(CompressedAlgorithm::SparseAllGather), "allgather");
  EXPECT_EQ(codecKindName(static_cast<CodecKind>(9)), "?");
  // The sparse all-gather is top-k's only.
  EXPECT_THROW(parseCodecConfig("int8:algo=allgather"), Error);
  EXPECT_THROW(parseCodecConfig("fp8"), Error);
}

TEST(DataTypeVisitor, EveryTypeHasItsSizeAndNothingElseHasOne) {
  const std::pair<DataType, size_t> sizes[] = {{DataType::Int8, 1},    {DataType::Uint8, 1},
                                               {DataType::Int32, 4},   {DataType::Uint32, 4},
                                               {DataType::Int64, 8},   {DataType::Uint64, 8},
                                               {DataType::Float16, 2}, {DataType::Float32, 4},
                                               {DataType::Float64, 8}, {DataType::Bfloat16, 2}};
  for (const auto& [type, size] : sizes) EXPECT_EQ(dataTypeSize(type), size) << dataTypeName(type);
  EXPECT_EQ(dataTypeSize(static_cast<DataType>(kNumDataTypes)), 0u);
  EXPECT_EQ(dataTypeSize(static_cast<DataType>(255)), 0u);
  static_assert(dataTypeSize(DataType::Bfloat16) == 2);
}

TEST(DataTypeVisitor, TheSixteenBitFloatsHaveTagsOfTheirOwn) {
  const auto kind = [](DataType t) {
    return visitDataType(
        t,
        [](auto e) -> std::string {
          using E = decltype(e);
          if constexpr (std::is_same_v<E, element::Half>) return "half";
          if constexpr (std::is_same_v<E, element::Bf16>) return "bf16";
          if constexpr (std::is_same_v<E, element::Native<float>>) return "float";
          return "other";
        },
        std::string("none"));
  };
  EXPECT_EQ(kind(DataType::Float16), "half");
  EXPECT_EQ(kind(DataType::Bfloat16), "bf16");
  EXPECT_EQ(kind(DataType::Float32), "float");
  EXPECT_EQ(kind(DataType::Int64), "other");
  EXPECT_EQ(kind(static_cast<DataType>(10)), "none");
}

}  // namespace
}  // namespace loom
