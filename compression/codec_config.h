// Which codec to use and its parameters, and the text form LOOM_COMPRESS and
// loom_perf --compress accept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

enum class CodecKind : uint8_t { None = 0, Int8 = 1, Topk = 2 };

/// How a compressed reduction carries the codec (docs/compression.md). Codecs
/// ignore it; it travels with their config so one text form (LOOM_COMPRESS,
/// loom_perf --compress) names both.
enum class CompressedAlgorithm : uint8_t {
  Auto = 0,             ///< chosen per call: see chooseCompressedAlgorithm
  TwoShot = 1,          ///< encode once, all-to-all to owners, owner sums, all-gather
  Ring = 2,             ///< each hop decodes, adds its chunk, re-encodes
  SparseAllGather = 3,  ///< topk all-reduce: gather every rank's top-k, sum exactly
};

/// Default int8 block, chosen by bench_codec and test_codec_accuracy: 3.94x on
/// fp32 (scale overhead 1.6%), encode 17% faster than block 128, at 8% more
/// error on normal data; heavy-tailed tensors may prefer int8:block=64. See
/// docs/compression.md, "Choosing the block".
inline constexpr uint32_t kDefaultInt8Block = 256;
inline constexpr uint32_t kMinInt8Block = 8;
inline constexpr uint32_t kMaxInt8Block = 1u << 16;
inline constexpr double kDefaultTopkRatio = 0.01;

/// All fields are plain values; a config means the same on every rank, which is
/// what lets each rank encode and decode the others' bytes.
struct CodecConfig {
  CodecKind kind = CodecKind::None;
  uint32_t block = kDefaultInt8Block;  ///< int8: elements per scale, power of two
  double ratio = kDefaultTopkRatio;    ///< topk: kept fraction, in (0, 1]
  uint64_t seed = 0;                   ///< int8 stochastic rounding: shared by all ranks
  bool stochastic = false;             ///< int8: stochastic instead of nearest rounding
  CompressedAlgorithm algorithm = CompressedAlgorithm::Auto;

  bool operator==(const CodecConfig&) const = default;
};

/// An int8 configuration from its three fields (the kernel plugin's C ABI
/// passes them one by one).
inline CodecConfig int8CodecConfig(uint32_t block, bool stochastic, uint64_t seed) {
  return {.kind = CodecKind::Int8, .block = block, .seed = seed, .stochastic = stochastic};
}

/// Parses "none", "int8", "int8:block=128", "int8:block=64,stochastic,seed=7",
/// "topk:0.01", "topk:ratio=0.05", and for int8/topk an "algo=auto|twoshot|ring"
/// option ("allgather" too for topk): "int8:algo=ring", "topk:0.01,algo=allgather".
/// Leading and trailing blanks are ignored.
/// Throws Error(InvalidArgument) quoting the offending text.
CodecConfig parseCodecConfig(std::string_view text);

/// Throws Error(InvalidArgument) when a field is out of range.
void validateCodecConfig(const CodecConfig& config);

/// Canonical text; parseCodecConfig(toString(c)) == c for a valid c whose fields
/// that its kind ignores hold their defaults.
std::string toString(const CodecConfig& config);

std::string_view codecKindName(CodecKind kind);
std::string_view compressedAlgorithmName(CompressedAlgorithm algorithm);

}  // namespace loom
