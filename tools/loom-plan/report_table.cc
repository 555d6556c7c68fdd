#include <fmt/format.h>

#include <ostream>

#include "compute_model.h"
#include "report.h"

namespace loom::plan {
namespace {

// Memory columns in GB, or MB for models whose best layout needs under 1 GB.
struct Unit {
  const char* name;
  double bytes;
};

std::string amount(double bytes, Unit unit) { return fmt::format("{:.1f}", bytes / unit.bytes); }

std::string seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

void printRow(std::ostream& out, int place, const Prediction& p, Unit unit) {
  out << fmt::format(
      "{:>4} {:<28} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8.4g} {:>7} {:>7} {:>7} {:>7} "
      "{:>7}{}\n",
      place, p.layout.label(), seconds(p.stepSeconds), seconds(p.computeSeconds),
      seconds(p.tpSeconds), seconds(p.bubbleSeconds), seconds(p.ppSeconds), seconds(p.dpSeconds),
      p.tflopsPerGpu, amount(p.memory.weights, unit), amount(p.memory.gradients, unit),
      amount(p.memory.optimizer, unit), amount(p.memory.activations, unit),
      amount(p.memory.total(), unit), p.fits ? "" : "  DOES NOT FIT");
}

void printHeader(std::ostream& out, Unit unit) {
  out << fmt::format(
      "{:>4} {:<28} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7} {:>7} {:>7} {:>7} "
      "{:>7}\n",
      "#", "layout", "step", "compute", "TP comm", "bubble", "PP comm", "DP comm", "TFLOP/s",
      fmt::format("wts {}", unit.name), fmt::format("grd {}", unit.name),
      fmt::format("opt {}", unit.name), fmt::format("act {}", unit.name),
      fmt::format("tot {}", unit.name));
}

}  // namespace

void printTable(std::ostream& out, const PlanResult& plan, int top) {
  const ModelShape& m = plan.model;
  out << fmt::format(
      "# {}: {} layers, hidden {}, {} heads, seq {}, vocab {}, batch {}; {:.3g}B parameters, "
      "{} precision\n",
      m.name, m.layers, m.hidden, m.heads, m.seq, m.vocab, m.globalBatch, totalParams(m) / 1e9,
      m.numerics.name);
  out << fmt::format("# {} GPUs of {:.4g} TFLOP/s and {:.4g} GB on {}\n", plan.gpus,
                     plan.hardware.tflops, plan.hardware.memoryBytes / 1e9, plan.topology);
  int fitting = 0;
  for (const Prediction& p : plan.ranked) fitting += p.fits ? 1 : 0;
  out << fmt::format("# {} valid layouts, {} fit in memory; best {}:\n", plan.ranked.size(),
                     fitting, std::min<size_t>(top, plan.ranked.size()));
  const bool small = !plan.ranked.empty() && plan.ranked.front().memory.total() < 1e9;
  const Unit unit = small ? Unit{"MB", 1e6} : Unit{"GB", 1e9};
  printHeader(out, unit);
  for (int i = 0; i < top && i < static_cast<int>(plan.ranked.size()); ++i) {
    printRow(out, i + 1, plan.ranked[i], unit);
  }
  if (plan.asked) {
    out << "# asked for:\n";
    printRow(out, plan.askedPlace, *plan.asked, unit);
  }
  if (plan.ranked.empty() || !plan.ranked.front().fits) {
    out << "# no layout fits in memory: the first rows need the least\n";
    return;
  }
  const Prediction& best = plan.ranked.front();
  out << fmt::format("# best: {} at {} per step, {:.0f} tokens/s, {:.1f} TFLOP/s per GPU\n",
                     best.layout.label(), seconds(best.stepSeconds), best.tokensPerSecond,
                     best.tflopsPerGpu);
  // The runner-up of another shape says more than one differing in a flag.
  for (size_t i = 1; i < plan.ranked.size(); ++i) {
    const Layout& l = plan.ranked[i].layout;
    if (l.dp != best.layout.dp || l.tp != best.layout.tp || l.pp != best.layout.pp) {
      out << "# why: " << whyBetter(best, plan.ranked[i]) << "\n";
      break;
    }
  }
  const Layout& next = plan.ranked.size() > 1 ? plan.ranked[1].layout : best.layout;
  if (next.dp == best.layout.dp && next.tp == best.layout.tp && next.pp == best.layout.pp &&
      plan.ranked.size() > 1) {
    out << "# next: " << whyBetter(best, plan.ranked[1]) << "\n";
  }
  if (plan.asked && plan.asked->layout.label() != best.layout.label()) {
    out << "# vs asked: " << whyBetter(best, *plan.asked) << "\n";
  }
}

}  // namespace loom::plan
