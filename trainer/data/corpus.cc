#include "data/corpus.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/rng.h"
#include "data/synthetic_text.h"
#include "data/tokenizer.h"

namespace loom::train {
namespace {

constexpr uint64_t kSamplingStream = 0x5a4d504c45ull;  // keeps sampling apart from init streams

}  // namespace

Corpus Corpus::fromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read data file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return Corpus(encodeBytes(text.str()));
}

Corpus Corpus::synthetic(uint64_t seed, size_t bytes) {
  return Corpus(encodeBytes(syntheticText(seed, bytes)));
}

MicroBatch Corpus::sample(uint64_t seed, int step, int firstSample, int count, int seq) const {
  MicroBatch mb;
  mb.batch = count;
  mb.tokens.resize(static_cast<size_t>(count) * seq);
  mb.targets.resize(mb.tokens.size());
  const uint64_t starts = tokens_.size() - seq;  // a start needs seq + 1 tokens
  for (int i = 0; i < count; ++i) {
    const uint64_t sample = static_cast<uint64_t>(firstSample) + static_cast<uint64_t>(i);
    const size_t start =
        uniformBelow(seed ^ kSamplingStream, static_cast<uint64_t>(step), sample, starts);
    for (int t = 0; t < seq; ++t) {
      mb.tokens[static_cast<size_t>(i) * seq + t] = tokens_[start + t];
      mb.targets[static_cast<size_t>(i) * seq + t] = tokens_[start + t + 1];
    }
  }
  return mb;
}

}  // namespace loom::train
