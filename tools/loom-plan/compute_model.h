// Arithmetic of a training step. FLOPs of one step of global batch B
// sequences of s tokens, L layers of P parameters each, hidden h, vocab V:
//
//   F = (6 + 2c)·L·P·B·s + (12 + 4c)·L·B·s²·h + 6·B·s·V·h
//
// 6 = 2 (forward) + 4 (backward) FLOPs per parameter and token; the second
// term is attention's QKᵀ and softmax·V, which no parameter counts; the third
// the LM head. c = 1 with activation checkpointing: every layer's forward runs
// twice. With c = 1 this is Megatron-LM's 96·B·s·L·h²(1 + s/6h + V/16Lh) for
// P = 12h², so throughputs compare with the paper's.
#pragma once

#include "layout.h"
#include "model_shape.h"

namespace loom::plan {

/// F above for the whole model and one step.
double modelFlopsPerStep(const ModelShape& m, bool checkpoint);

/// FLOPs one TP rank of stage `stage` runs for one micro-batch.
double stageFlopsPerMicroBatch(const ModelShape& m, const Layout& l, int stage);

/// Idle share of the 1F1B schedule relative to the useful work: (p - 1) / m.
double bubbleFraction(int stages, int microBatches);

}  // namespace loom::plan
