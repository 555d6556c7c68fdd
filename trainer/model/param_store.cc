#include "model/param_store.h"

#include <algorithm>
#include <stdexcept>

#include "core/rng.h"

namespace loom::train {

ParamStore::ParamStore(const std::vector<std::vector<ParamSpec>>& segments, int tpRank, int tpSize,
                       size_t padMultiple)
    : tpRank_(tpRank), tpSize_(tpSize) {
  size_t offset = 0;
  for (const std::vector<ParamSpec>& segment : segments) {
    const size_t begin = offset;
    for (const ParamSpec& spec : segment) {
      Param p;
      p.spec = spec;
      p.offset = offset;
      p.rows = spec.sharding == Sharding::kRows ? spec.rows / tpSize : spec.rows;
      p.cols = spec.sharding == Sharding::kColumns ? spec.cols / tpSize : spec.cols;
      // A replicated tensor has tpSize identical copies; only TP rank 0's counts.
      p.countInNorm = spec.normOwner && (spec.sharding != Sharding::kReplicated || tpRank == 0);
      offset += p.size();
      params_.push_back(p);
    }
    offset = begin + (offset - begin + padMultiple - 1) / padMultiple * padMultiple;
    segments_.push_back({begin, offset});
  }
  values_.assign(offset, 0.0f);
  grads_.assign(offset, 0.0f);
}

int ParamStore::index(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].spec.name == name) return static_cast<int>(i);
  }
  throw std::logic_error("no parameter named '" + name + "' on this stage");
}

uint64_t ParamStore::globalIndex(const Param& p, int row, int col) const {
  int globalRow = row;
  int globalCol = col;
  if (p.spec.sharding == Sharding::kRows) {
    globalRow = tpRank_ * p.rows + row;
  } else if (p.spec.sharding == Sharding::kColumns) {
    // Part j of the global tensor is columns [j * partCols, (j + 1) * partCols);
    // this rank holds slice tpRank of every part, side by side.
    const int partCols = p.spec.cols / p.spec.parts;
    const int localPartCols = partCols / tpSize_;
    const int part = col / localPartCols;
    globalCol = part * partCols + tpRank_ * localPartCols + col % localPartCols;
  }
  return static_cast<uint64_t>(globalRow) * p.spec.cols + globalCol;
}

void ParamStore::initialize(uint64_t seed) {
  for (const Param& p : params_) {
    float* v = values_.data() + p.offset;
    for (int r = 0; r < p.rows; ++r) {
      for (int c = 0; c < p.cols; ++c) {
        float x = 0.0f;
        switch (p.spec.init) {
          case Init::kOnes:
            x = 1.0f;
            break;
          case Init::kZeros:
            x = 0.0f;
            break;
          case Init::kNormal:
            x = p.spec.stddev * normalAt(seed, p.spec.id, globalIndex(p, r, c));
            break;
        }
        v[static_cast<size_t>(r) * p.cols + c] = x;
      }
    }
  }
}

void ParamStore::zeroGrads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

}  // namespace loom::train
