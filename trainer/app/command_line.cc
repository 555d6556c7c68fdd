#include "app/command_line.h"

#include <CLI/CLI.hpp>

#include "parallel/compression_spec.h"

namespace loom::train {

ParseOutcome parseCommandLine(int argc, const char* const* argv, TrainOptions* options,
                              std::string* error) {
  TrainOptions& o = *options;
  CLI::App app{"loom-train: a minimal hybrid-parallel GPT trainer on Loom", "loom-train"};
  app.add_option("--dp", o.grid.dp, "data-parallel ranks")->capture_default_str();
  app.add_option("--tp", o.grid.tp, "tensor-parallel ranks (splits heads and MLP)")
      ->capture_default_str();
  app.add_option("--pp", o.grid.pp, "pipeline stages (splits layers)")->capture_default_str();
  app.add_option("--layers", o.model.layers, "transformer blocks")->capture_default_str();
  app.add_option("--d-model", o.model.dModel, "model width")->capture_default_str();
  app.add_option("--heads", o.model.heads, "attention heads")->capture_default_str();
  app.add_option("--seq", o.model.seq, "context length in tokens (bytes)")->capture_default_str();
  app.add_option("--batch", o.batch, "global batch in sequences")->capture_default_str();
  app.add_option("--micro-batches", o.microBatches, "micro-batches per DP rank and step")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "optimizer steps")->capture_default_str();
  app.add_option("--lr", o.lr, "peak learning rate")->capture_default_str();
  app.add_option("--min-lr", o.minLr, "learning rate at the end of the cosine decay")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "linear warm-up steps")->capture_default_str();
  app.add_option("--weight-decay", o.weightDecay, "AdamW decoupled weight decay")
      ->capture_default_str();
  app.add_option("--grad-clip", o.gradClip, "clip the global gradient norm to this (0: off)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of initialisation, data and synthetic corpus")
      ->capture_default_str();
  std::string compress = "none";
  app.add_option("--compress", compress,
                 "DP gradients: none, int8 (block 64), int8:block=N, topk:R[:warmup=N]")
      ->capture_default_str();
  app.add_option("--zero", o.zero, "ZeRO stage: 0, or 1 (shard optimizer state over DP)")
      ->capture_default_str();
  std::string schedule = scheduleName(o.schedule);
  app.add_option("--schedule", schedule, "pipeline schedule: afab or 1f1b")->capture_default_str();
  app.add_flag("--checkpoint-activations", o.checkpointActivations,
               "keep only block inputs; recompute each block in backward");
  double bucketKb = o.bucketElements * sizeof(float) / 1024.0;
  app.add_option("--bucket-kb", bucketKb, "DP gradient bucket size in KiB")->capture_default_str();
  bool noOverlap = false;
  app.add_flag("--no-overlap", noOverlap,
               "reduce DP buckets after backward instead of while it runs");
  app.add_option("--data", o.dataPath, "train on this text file (default: synthetic corpus)");
  app.add_option("--log", o.logPath, "write a CSV row per step to this file");
  app.add_option("--save", o.savePath,
                 "write checkpoints (parameters and optimizer state) to DIR/step-N after the "
                 "last step");
  app.add_option("--save-every", o.saveEvery, "with --save: also every N steps");
  app.add_flag("--elastic", o.elastic,
               "when a rank dies, drop its data-parallel replica, redo the step on the "
               "survivors and go on (launch with loomrun --keep-going)");
  app.add_option("--resume", o.resumePath,
                 "continue from a checkpoint (a step-N directory, or a --save directory: its "
                 "latest); the configuration must match the saving run's");
  app.add_option("--threads", o.blasThreads, "BLAS threads per rank")->capture_default_str();
  app.add_flag("--quiet", o.quiet, "no progress lines");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    return ParseOutcome::kExitSuccess;
  } catch (const CLI::ParseError& e) {
    *error = e.what();
    return ParseOutcome::kError;
  }
  if (!parseCompression(compress, &o.compression, error)) return ParseOutcome::kError;
  if (!parseSchedule(schedule, &o.schedule)) {
    *error = "invalid --schedule '" + schedule + "': expected afab or 1f1b";
    return ParseOutcome::kError;
  }
  o.bucketElements = static_cast<size_t>(bucketKb * 1024.0 / sizeof(float));
  o.overlapDp = !noOverlap;
  return ParseOutcome::kRun;
}

}  // namespace loom::train
