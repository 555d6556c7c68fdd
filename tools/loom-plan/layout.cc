#include "layout.h"

#include <fmt/format.h>

#include "core/error.h"

namespace loom::plan {

const char* compressionName(Compression c) {
  switch (c) {
    case Compression::Int8:
      return "int8";
    case Compression::TopK:
      return "topk";
    case Compression::None:
      break;
  }
  return "none";
}

std::string Layout::label() const {
  std::string text = fmt::format("dp{} tp{} pp{} b{}", dp, tp, pp, microBatchSize);
  if (zero1) text += " zero1";
  if (checkpoint) text += " ckpt";
  if (compression != Compression::None) text += fmt::format(" {}", compressionName(compression));
  return text;
}

std::string whyInvalid(const ModelShape& m, int gpus, const Layout& l) {
  if (l.dp < 1 || l.tp < 1 || l.pp < 1 || l.microBatchSize < 1) {
    return "dp, tp, pp and the micro-batch size must be >= 1";
  }
  if (l.gpus() != gpus) {
    return fmt::format("dp x tp x pp = {} is not the {} GPUs", l.gpus(), gpus);
  }
  if (m.heads % l.tp != 0 || m.kvHeadCount() % l.tp != 0) {
    return fmt::format("tp {} does not divide the {} heads ({} KV heads)", l.tp, m.heads,
                       m.kvHeadCount());
  }
  if (l.pp > m.layers) return fmt::format("pp {} exceeds the {} layers", l.pp, m.layers);
  if (m.globalBatch % (l.dp * l.microBatchSize) != 0) {
    return fmt::format("batch {} is not a multiple of dp {} x micro-batch size {}", m.globalBatch,
                       l.dp, l.microBatchSize);
  }
  if (l.dp == 1 && (l.zero1 || l.compression != Compression::None)) {
    return "ZeRO-1 and compression act on data-parallel traffic and need dp > 1";
  }
  return "";
}

std::vector<Layout> enumerateLayouts(const ModelShape& m, int gpus,
                                     const EnumerationLimits& limits) {
  std::vector<Layout> valid;
  for (int dp = 1; dp <= gpus; ++dp) {
    if (gpus % dp != 0) continue;
    for (int tp = 1; tp <= gpus / dp; ++tp) {
      if ((gpus / dp) % tp != 0) continue;
      Layout l;
      l.dp = dp;
      l.tp = tp;
      l.pp = gpus / dp / tp;
      for (int b = 1; b <= limits.maxMicroBatchSize; ++b) {
        l.microBatchSize = b;
        for (const bool zero : {false, true}) {
          if (zero && !limits.tryZero) continue;
          l.zero1 = zero;
          for (const bool ckpt : {false, true}) {
            if (ckpt && !limits.tryCheckpoint) continue;
            l.checkpoint = ckpt;
            for (const Compression c : limits.compressions) {
              l.compression = c;
              if (whyInvalid(m, gpus, l).empty()) valid.push_back(l);
            }
          }
        }
      }
    }
  }
  if (valid.empty()) {
    raise(ErrorCode::InvalidArgument,
          "no valid layout of '{}' on {} GPUs: need tp dividing {} heads, pp <= {} layers and "
          "dp x micro-batch size dividing the batch of {}",
          m.name, gpus, m.heads, m.layers, m.globalBatch);
  }
  return valid;
}

}  // namespace loom::plan
