// Memory per GPU of a layout, in bytes, on its fullest pipeline stage.
//
// Model state follows Rajbhandari et al. 2020 (ZeRO): with Φ parameters on a
// GPU, weights take Φ·weightBytes, gradients Φ·gradBytes and Adam's state
// Φ·K (mixed precision: 2 + 2 + 12 bytes); ZeRO-1 divides the K part by dp.
// Compression's error feedback keeps an fp32 residual per parameter.
//
// Activations follow Korthikanti et al. 2022 per layer and micro-batch of b
// sequences of s tokens (hidden h, a heads, TP size t):
//   s·b·h·replicated + s·b·fixed + s·b·splitElements·bytes/t + scoreBytes·a·s²·b/t
// (mixed precision GPT: s·b·h·(10 + 24/t) + 5·a·s²·b/t). With full
// recomputation a layer keeps only its input (s·b·h·bytes) and one layer's
// other tensors live while it is recomputed. Under 1F1B stage i holds
// min(m, p - i) micro-batches; the last stage also holds the LM head's
// normed input and logits.
#pragma once

#include "layout.h"
#include "model_shape.h"

namespace loom::plan {

struct MemoryBreakdown {
  double params = 0;  ///< parameters on the fullest stage's GPU (count, not bytes)
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double residual = 0;  ///< compression error feedback
  double activations = 0;
  double total() const { return weights + gradients + optimizer + residual + activations; }
};

/// Activation elements one TP rank keeps per token and layer, split by TP
/// before dividing: qkv, attention output and the MLP's inner tensors.
double splitActivationElements(const ModelShape& m);

/// Bytes of one layer's activations for one micro-batch on one TP rank.
double layerActivationBytes(const ModelShape& m, const Layout& l);

/// Parameters a GPU of stage `stage` holds.
double stageParams(const ModelShape& m, const Layout& l, int stage);

/// Activation bytes at the peak of stage `stage`.
double stageActivationBytes(const ModelShape& m, const Layout& l, int stage);

/// The larger of the first and the last stage (the middle ones hold less).
MemoryBreakdown memoryPerGpu(const ModelShape& m, const Layout& l);

}  // namespace loom::plan
