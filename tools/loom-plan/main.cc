// loom-plan: which data x tensor x pipeline layout to train a model with on a
// given machine, predicted with Loom's own tuner for the communication.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "make_plan.h"
#include "planner_options.h"
#include "report.h"

namespace {

void addOptions(CLI::App& app, loom::plan::RawOptions& o) {
  app.add_option("--preset", o.preset,
                 "model: gpt3-175b, 1t, gpt-39b, llama-8b, llama-70b, trainer-tiny, "
                 "trainer-small (the flags below override its fields)");
  app.add_option("--layers", o.layers, "transformer layers");
  app.add_option("--hidden", o.hidden, "hidden size (d_model)");
  app.add_option("--heads", o.heads, "attention heads");
  app.add_option("--kv-heads", o.kvHeads, "key/value heads (grouped-query attention)");
  app.add_option("--ffn", o.ffn, "MLP inner size (default 4 x hidden)");
  app.add_option("--seq", o.seq, "sequence length");
  app.add_option("--vocab", o.vocab, "vocabulary size");
  app.add_option("--batch", o.batch, "global batch in sequences");
  app.add_option("--precision", o.precision,
                 "mixed (2+2+12 bytes per parameter) or fp32 (loom-train's 4+4+8)");
  app.add_option("--topo", o.topoFile, "topology file (default: detect this machine)")
      ->check(CLI::ExistingFile);
  app.add_option("--gpus", o.gpus, "GPUs (ranks) to plan for (default: all of the topology)");
  app.add_option("--tflops", o.tflops, "dense TFLOP/s one GPU achieves");
  app.add_option("--peak-tflops", o.peakTflops,
                 "peak dense TFLOP/s of one GPU (with --efficiency)");
  app.add_option("--efficiency", o.efficiency, "share of peak that dense math achieves, 0..1");
  app.add_option("--memory-gb", o.memoryGb, "usable memory per GPU in GB (1e9 bytes)")
      ->capture_default_str();
  app.add_option("--concurrency", o.concurrency,
                 "ranks that compute at once (CPU cores shared by more ranks); 0: all");
  app.add_option("--max-micro-batch", o.maxMicroBatchSize, "largest micro-batch size to try")
      ->capture_default_str();
  app.add_option("--compress", o.compressions, "DP codecs to try: none,int8,topk")
      ->capture_default_str();
  app.add_option("--topk-fraction", o.topkFraction, "share top-k keeps")->capture_default_str();
  app.add_option("--dp-overlap", o.dpOverlap, "share of DP time hidden behind backward, 0..1")
      ->capture_default_str();
  app.add_flag("--no-zero", o.noZero, "do not try ZeRO-1");
  app.add_flag("--no-checkpoint", o.noCheckpoint, "do not try activation checkpointing");
  app.add_option("--layout", o.layout,
                 "also evaluate this layout, e.g. dp=16,tp=8,pp=8,b=1,ckpt=1,zero=0");
  app.add_option("--top", o.top, "layouts to show")->capture_default_str();
  app.add_flag("--csv", o.csv, "every layout as CSV instead of the table");
  app.add_flag("--json", o.json, "the best layouts as JSON instead of the table");
  app.add_option("--svg", o.svgPath, "also write a bar chart of predicted step times here");
  app.footer("See docs/planner.md.");
}

}  // namespace

// Only CLI11's option setup can throw out of main: a programming error, found at once.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  loom::plan::RawOptions raw;
  CLI::App app{
      "Plan a training deployment: rank data x tensor x pipeline layouts by predicted "
      "step time and memory.",
      "loom-plan"};
  addOptions(app, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    const loom::plan::PlannerOptions options = loom::plan::resolveOptions(raw);
    const loom::plan::PlanResult plan = loom::plan::makePlan(options);
    if (options.csv) {
      loom::plan::printCsv(std::cout, plan);
    } else if (options.json) {
      loom::plan::printJson(std::cout, plan, options.top);
    } else {
      loom::plan::printTable(std::cout, plan, options.top);
    }
    if (!options.svgPath.empty()) loom::plan::writeSvg(options.svgPath, plan, options.top);
    return 0;
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "loom-plan: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-plan: %s\n", e.what());
    return 1;
  }
}
