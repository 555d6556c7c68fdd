#include "parallel/compression_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace loom::train {
namespace {

// Gradient tensors are heavy-tailed (embedding rows, attention outputs): one
// outlier sets the int8 step of its whole block. Blocks of 64 instead of Loom's
// default 256 cost 3.76x instead of 3.94x compression and, measured on the
// demo model (docs/trainer.md), close the loss gap to uncompressed training.
constexpr int kGradientInt8Block = 64;

bool parseNumber(const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

bool parseInt8(const std::string& arg, loomCompression* c) {
  c->kind = loomCompressInt8;
  c->block = kGradientInt8Block;
  if (arg.empty()) return true;
  double value = 0;
  const bool ok = arg.rfind("block=", 0) == 0 && parseNumber(arg.substr(6), &value) && value >= 8 &&
                  value <= 65536 && (static_cast<int>(value) & (static_cast<int>(value) - 1)) == 0;
  if (ok) c->block = static_cast<int>(value);
  return ok;
}

bool parseTopk(const std::string& arg, CompressionSpec* spec) {
  spec->codec.kind = loomCompressTopK;
  const size_t colon = arg.find(':');
  double value = 0;
  if (!parseNumber(arg.substr(0, colon), &value) || value <= 0 || value > 1) return false;
  spec->codec.ratio = value;
  if (colon == std::string::npos) return true;
  const std::string option = arg.substr(colon + 1);
  if (option.rfind("warmup=", 0) != 0 || !parseNumber(option.substr(7), &value) || value < 0 ||
      value > 1e9 || value != std::floor(value)) {
    return false;
  }
  spec->sparsityWarmup = static_cast<int>(value);
  return true;
}

}  // namespace

bool parseCompression(const std::string& text, CompressionSpec* out, std::string* error) {
  CompressionSpec spec;
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  const std::string bad = "invalid --compress '" + text + "': ";
  if (kind == "none" && arg.empty()) {
    spec.codec.kind = loomCompressNone;
  } else if (kind == "int8") {
    if (!parseInt8(arg, &spec.codec)) {
      *error = bad + "expected int8:block=N with N a power of two in [8, 65536]";
      return false;
    }
  } else if (kind == "topk") {
    if (!parseTopk(arg, &spec)) {
      *error = bad +
               "expected topk:R or topk:R:warmup=N with R the kept fraction in (0, 1] and N >= 0 "
               "steps";
      return false;
    }
  } else {
    *error = bad + "expected none, int8, int8:block=N, topk:R or topk:R:warmup=N";
    return false;
  }
  *out = spec;
  return true;
}

int sparsityWarmupSteps(const CompressionSpec& spec, int totalSteps) {
  if (spec.codec.kind != loomCompressTopK) return 0;
  return spec.sparsityWarmup >= 0 ? spec.sparsityWarmup : totalSteps / 4;
}

// Deep Gradient Compression's warm-up. A model first sits on a loss plateau
// where it only knows byte frequencies; leaving it takes many small,
// coordinated changes (attention) that top-k from the first step holds back
// in the residuals for hundreds of steps (docs/trainer.md). Dense-to-sparse
// over the run's first quarter costs about 8 % of exact training's bytes.
double keptFractionAt(const CompressionSpec& spec, int step, int totalSteps) {
  const double target = spec.codec.ratio;
  const int warmup = sparsityWarmupSteps(spec, totalSteps);
  if (step >= warmup) return target;
  return std::pow(target, static_cast<double>(std::max(step, 0)) / warmup);
}

std::string compressionName(const CompressionSpec& spec, int totalSteps) {
  std::ostringstream s;
  switch (spec.codec.kind) {
    case loomCompressInt8:
      s << "int8:block=" << spec.codec.block;
      break;
    case loomCompressTopK:
      s << "topk:" << spec.codec.ratio << ":warmup=" << sparsityWarmupSteps(spec, totalSteps);
      break;
    default:
      s << "none";
  }
  return s.str();
}

}  // namespace loom::train
