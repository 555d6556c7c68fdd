// All parameters of one rank's part of the model in one contiguous buffer, and
// their gradients in another with the same layout. Data-parallel buckets and
// ZeRO-1 shards are then plain slices, and the optimizer is one loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::train {

/// How a parameter is cut across the tensor-parallel group.
enum class Sharding {
  kReplicated,  ///< every TP rank holds the whole tensor
  kColumns,     ///< each of `parts` column groups is split evenly (QKV: 3 parts, by whole heads)
  kRows,        ///< rows split evenly (the input dimension of a row-parallel linear)
};

enum class Init { kNormal, kOnes, kZeros };

/// A parameter as the single-rank model sees it.
struct ParamSpec {
  std::string name;
  uint64_t id = 0;  ///< the same on every rank and stage; keys the init RNG
  int rows = 1;     ///< global shape
  int cols = 1;
  Sharding sharding = Sharding::kReplicated;
  int parts = 1;
  Init init = Init::kZeros;
  float stddev = 0.0f;
  bool decay = false;     ///< AdamW weight decay applies (matrices, not biases or norms)
  bool normOwner = true;  ///< false for a copy whose original is counted elsewhere (tied head)
};

/// A parameter as stored on this rank.
struct Param {
  ParamSpec spec;
  size_t offset = 0;
  int rows = 0;  ///< local shape
  int cols = 0;
  /// Counted in the global gradient norm on this rank: each element of the
  /// model exactly once across the whole grid.
  bool countInNorm = true;
  size_t size() const { return static_cast<size_t>(rows) * cols; }
};

/// [begin, end) of the flat buffer.
struct Range {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};

class ParamStore {
 public:
  /// Lays out `segments` one after another. Each segment is padded to a
  /// multiple of `padMultiple` (the DP size), so it can be reduce-scattered
  /// evenly; gradient buckets never straddle two segments.
  ParamStore(const std::vector<std::vector<ParamSpec>>& segments, int tpRank, int tpSize,
             size_t padMultiple);

  /// Fills every parameter from the counter RNG keyed by (seed, id, global index).
  void initialize(uint64_t seed);
  void zeroGrads();

  int index(const std::string& name) const;  ///< throws if absent
  const Param& param(int index) const { return params_[index]; }
  const std::vector<Param>& params() const { return params_; }
  const std::vector<Range>& segments() const { return segments_; }

  float* value(int index) { return values_.data() + params_[index].offset; }
  float* grad(int index) { return grads_.data() + params_[index].offset; }
  std::vector<float>& values() { return values_; }
  const std::vector<float>& values() const { return values_; }
  std::vector<float>& grads() { return grads_; }
  size_t size() const { return values_.size(); }

  /// Element (row, col) of parameter `p`'s local shard as a flat index into the global tensor.
  uint64_t globalIndex(const Param& p, int row, int col) const;

 private:
  std::vector<Param> params_;
  std::vector<Range> segments_;
  std::vector<float> values_;
  std::vector<float> grads_;
  int tpRank_;
  int tpSize_;
};

}  // namespace loom::train
