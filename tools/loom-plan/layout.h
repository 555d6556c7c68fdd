// One way to lay a model over the GPUs: data, tensor and pipeline sizes,
// micro-batching and the memory/traffic options, and the enumeration of every
// valid one.
#pragma once

#include <string>
#include <vector>

#include "model_shape.h"

namespace loom::plan {

enum class Compression { None, Int8, TopK };
const char* compressionName(Compression c);  ///< "none", "int8", "topk"

struct Layout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int microBatchSize = 1;   ///< sequences per micro-batch
  bool zero1 = false;       ///< optimizer state sharded over DP (ZeRO stage 1)
  bool checkpoint = false;  ///< full activation recomputation per layer
  Compression compression = Compression::None;

  int gpus() const { return dp * tp * pp; }
  /// Micro-batches each pipeline runs per step: globalBatch / (dp * microBatchSize).
  int microBatches(const ModelShape& m) const { return m.globalBatch / (dp * microBatchSize); }
  /// "dp16 tp8 pp8 b1 ckpt" style, stable for tables and tests.
  std::string label() const;
};

struct EnumerationLimits {
  int maxMicroBatchSize = 8;
  std::vector<Compression> compressions = {Compression::None, Compression::Int8, Compression::TopK};
  bool tryZero = true;
  bool tryCheckpoint = true;
};

/// Empty when `layout` can run `m` on `gpus` GPUs, else why not: dp*tp*pp must
/// be the GPU count, tp must divide the heads (and KV heads), pp may not exceed
/// the layers, dp * microBatchSize must divide the global batch; ZeRO-1 and
/// compression need dp > 1.
std::string whyInvalid(const ModelShape& m, int gpus, const Layout& layout);

/// Every valid layout, in a fixed order (dp, tp, pp, micro-batch size,
/// ZeRO-1, checkpointing, compression). Throws Error(InvalidArgument) when
/// there is none.
std::vector<Layout> enumerateLayouts(const ModelShape& m, int gpus,
                                     const EnumerationLimits& limits);

}  // namespace loom::plan
