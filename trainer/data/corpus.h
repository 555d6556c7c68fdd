// The training text as tokens, and the deterministic batches cut from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_stage.h"

namespace loom::train {

class Corpus {
 public:
  /// Reads a text file; throws std::runtime_error naming the file if it cannot.
  static Corpus fromFile(const std::string& path);
  static Corpus synthetic(uint64_t seed, size_t bytes);
  explicit Corpus(std::vector<int32_t> tokens) : tokens_(std::move(tokens)) {}

  const std::vector<int32_t>& tokens() const { return tokens_; }
  size_t size() const { return tokens_.size(); }

  /// `count` sequences of `seq` tokens starting at global sample `firstSample`
  /// of `step`. Sample g of a step always starts at the same place, whichever
  /// rank or micro-batch draws it, so every parallel layout sees the same
  /// global batch. Needs size() > seq.
  MicroBatch sample(uint64_t seed, int step, int firstSample, int count, int seq) const;

 private:
  std::vector<int32_t> tokens_;
};

}  // namespace loom::train
