#include "compression/codec_config.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <system_error>

#include "core/error.h"
#include "core/names.h"

namespace loom {
namespace {

constexpr Named<CodecKind> kCodecKindNames[] = {
    {CodecKind::None, "none"}, {CodecKind::Int8, "int8"}, {CodecKind::Topk, "topk"}};

constexpr Named<CompressedAlgorithm> kAlgorithmNames[] = {
    {CompressedAlgorithm::Auto, "auto"},
    {CompressedAlgorithm::TwoShot, "twoshot"},
    {CompressedAlgorithm::Ring, "ring"},
    {CompressedAlgorithm::SparseAllGather, "allgather"}};

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

template <typename T>
bool parseNumber(std::string_view s, T* out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

[[noreturn]] void fail(std::string_view text, std::string_view why) {
  raise(ErrorCode::InvalidArgument, "invalid codec '{}': {}", text, why);
}

// One "key=value" or bare "key" item after the colon.
void applyInt8Option(std::string_view text, std::string_view item, CodecConfig* c) {
  const size_t eq = item.find('=');
  const std::string_view key = item.substr(0, eq);
  const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
  if (key == "block") {
    uint32_t block = 0;
    if (!parseNumber(value, &block) || !isPowerOfTwo(block) || block < kMinInt8Block ||
        block > kMaxInt8Block) {
      fail(text, fmt::format("block '{}' is not a power of two in [{}, {}]", value, kMinInt8Block,
                             kMaxInt8Block));
    }
    c->block = block;
  } else if (key == "stochastic") {
    if (eq == std::string_view::npos || value == "1" || value == "true") {
      c->stochastic = true;
    } else if (value == "0" || value == "false") {
      c->stochastic = false;
    } else {
      fail(text, fmt::format("stochastic '{}' is not 0, 1, true or false", value));
    }
  } else if (key == "seed") {
    if (!parseNumber(value, &c->seed)) {
      fail(text, fmt::format("seed '{}' is not an unsigned 64-bit integer", value));
    }
  } else {
    fail(text, fmt::format("unknown int8 option '{}' (block=N, stochastic, seed=N)", item));
  }
}

void applyTopkOption(std::string_view text, std::string_view item, CodecConfig* c) {
  std::string_view value = item;
  if (item.starts_with("ratio=")) value = item.substr(6);
  if (value.find('=') != std::string_view::npos) {
    fail(text, fmt::format("unknown topk option '{}' (a ratio such as 0.01)", item));
  }
  double ratio = 0;
  if (!parseNumber(value, &ratio) || !(ratio > 0.0 && ratio <= 1.0)) {
    fail(text, fmt::format("ratio '{}' is not a number in (0, 1]", value));
  }
  c->ratio = ratio;
}

bool applyAlgorithmOption(std::string_view text, std::string_view item, CodecConfig* c) {
  if (!item.starts_with("algo=")) return false;
  const std::string_view value = item.substr(5);
  const std::optional<CompressedAlgorithm> algorithm = valueIn(kAlgorithmNames, value);
  // Only top-k has a sparse all-gather.
  if (!algorithm ||
      (*algorithm == CompressedAlgorithm::SparseAllGather && c->kind != CodecKind::Topk)) {
    fail(text, fmt::format("unknown algo '{}' (auto, twoshot, ring{})", value,
                           c->kind == CodecKind::Topk ? ", allgather" : ""));
  }
  c->algorithm = *algorithm;
  return true;
}

}  // namespace

std::string_view compressedAlgorithmName(CompressedAlgorithm algorithm) {
  return nameIn(kAlgorithmNames, algorithm);
}

std::string_view codecKindName(CodecKind kind) { return nameIn(kCodecKindNames, kind); }

CodecConfig parseCodecConfig(std::string_view text) {
  const std::string_view s = trim(text);
  const size_t colon = s.find(':');
  const std::string_view kind = s.substr(0, colon);
  std::string_view options = colon == std::string_view::npos ? "" : s.substr(colon + 1);
  if (colon != std::string_view::npos && options.empty()) fail(text, "nothing after ':'");

  CodecConfig c;
  const std::optional<CodecKind> known = valueIn(kCodecKindNames, kind);
  if (!known) fail(text, fmt::format("unknown kind '{}' ({})", kind, namesIn(kCodecKindNames)));
  c.kind = *known;
  if (c.kind == CodecKind::None) {
    if (!options.empty()) fail(text, "none takes no options");
    return c;
  }
  while (!options.empty()) {
    const size_t comma = options.find(',');
    const std::string_view item = options.substr(0, comma);
    if (item.empty()) fail(text, "empty option");
    if (applyAlgorithmOption(text, item, &c)) {
      // handled
    } else if (c.kind == CodecKind::Int8) {
      applyInt8Option(text, item, &c);
    } else {
      applyTopkOption(text, item, &c);
    }
    options = comma == std::string_view::npos ? "" : options.substr(comma + 1);
    if (comma != std::string_view::npos && options.empty()) fail(text, "empty option");
  }
  return c;
}

void validateCodecConfig(const CodecConfig& c) {
  if (nameIn(kCodecKindNames, c.kind, "").empty()) {
    raise(ErrorCode::InvalidArgument, "codec: unknown kind {}", static_cast<int>(c.kind));
  }
  if (c.kind == CodecKind::Int8 &&
      (!isPowerOfTwo(c.block) || c.block < kMinInt8Block || c.block > kMaxInt8Block)) {
    raise(ErrorCode::InvalidArgument, "codec int8: block {} is not a power of two in [{}, {}]",
          c.block, kMinInt8Block, kMaxInt8Block);
  }
  if (c.kind == CodecKind::Topk && !(c.ratio > 0.0 && c.ratio <= 1.0)) {
    raise(ErrorCode::InvalidArgument, "codec topk: ratio {} is not in (0, 1]", c.ratio);
  }
  if (nameIn(kAlgorithmNames, c.algorithm, "").empty()) {
    raise(ErrorCode::InvalidArgument, "compression: unknown algorithm {}",
          static_cast<int>(c.algorithm));
  }
  if (c.algorithm == CompressedAlgorithm::SparseAllGather && c.kind != CodecKind::Topk) {
    raise(ErrorCode::InvalidArgument,
          "compression: the sparse all-gather algorithm needs topk, not {}", codecKindName(c.kind));
  }
}

std::string toString(const CodecConfig& c) {
  const std::string algo = c.algorithm == CompressedAlgorithm::Auto
                               ? ""
                               : fmt::format(",algo={}", compressedAlgorithmName(c.algorithm));
  switch (c.kind) {
    case CodecKind::None:
      return "none";
    case CodecKind::Int8:
      return fmt::format("int8:block={}{}{}{}", c.block, c.stochastic ? ",stochastic" : "",
                         c.seed != 0 ? fmt::format(",seed={}", c.seed) : "", algo);
    case CodecKind::Topk:
      return fmt::format("topk:{}{}", c.ratio, algo);  // {} prints the shortest exact form
  }
  return "?";
}

}  // namespace loom
