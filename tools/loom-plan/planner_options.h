// What loom-plan is asked: the command line as given (RawOptions, filled by
// CLI11) and resolved into checked values (PlannerOptions). Every bad value is
// an Error(InvalidArgument) naming the flag.
#pragma once

#include <optional>
#include <string>

#include "comm_model.h"
#include "layout.h"
#include "model_shape.h"
#include "predictor.h"

namespace loom::plan {

/// Flags as typed; -1 or empty means "not given".
struct RawOptions {
  std::string preset;
  int layers = -1, hidden = -1, heads = -1, kvHeads = -1, ffn = -1, seq = -1, vocab = -1;
  int batch = -1;
  std::string precision;  ///< "mixed" or "fp32"; empty: the preset's
  std::string topoFile;
  int gpus = 0;
  double tflops = 0, peakTflops = 0, efficiency = 0;
  double memoryGb = 80;
  int concurrency = 0;
  int maxMicroBatchSize = 8;
  std::string compressions = "none,int8,topk";
  double topkFraction = 0.01;
  double dpOverlap = 0;
  std::string layout;  ///< --layout: evaluate this one
  int top = 10;
  bool noZero = false, noCheckpoint = false;
  bool csv = false, json = false;
  std::string svgPath;
};

struct PlannerOptions {
  ModelShape model;
  std::string topoFile;  ///< empty: detect this machine
  int gpus = 0;          ///< 0: every GPU (or rank) of the topology
  Hardware hardware;
  EnumerationLimits limits;
  CommOptions comm;
  std::optional<Layout> layout;
  int top = 10;
  bool csv = false, json = false;
  std::string svgPath;
};

/// "dp=16,tp=8,pp=8,b=1,zero=0,ckpt=1,compress=none" (any order, omitted
/// keys: dp/tp/pp/b 1, the rest off). Throws naming the bad key or value.
Layout parseLayout(const std::string& text);

/// "none,int8,topk" -> the codecs to try.
std::vector<Compression> parseCompressions(const std::string& text);

/// Checks and resolves every flag (GPU count is checked later against the
/// topology). Throws Error(InvalidArgument).
PlannerOptions resolveOptions(const RawOptions& raw);

}  // namespace loom::plan
