#include "app/step_report.h"

#include <cstdio>
#include <stdexcept>

#include "parallel/compression_spec.h"

namespace loom::train {
namespace {

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", bytes / 1e6);
  return text;
}

}  // namespace

std::string progressLine(const StepStats& s, const TrainOptions& o) {
  char line[512];
  int n = std::snprintf(line, sizeof line,
                        "step %4d/%d | loss %.4f | lr %.2e | norm %.3f | %7.0f tok/s | comm %4.1f%%"
                        " | wire %s",
                        s.step + 1, o.steps, s.loss, s.lr, s.gradNorm, s.tokensPerSecond,
                        100.0 * s.commFraction, megabytes(s.wireBytes).c_str());
  if (s.dpPayloadBytes > 0) {
    n += std::snprintf(line + n, sizeof line - n, " (dp grads %s raw -> %s sent)",
                       megabytes(s.dpPayloadBytes).c_str(), megabytes(s.dpWireBytes).c_str());
  }
  if (o.grid.pp > 1) {
    n += std::snprintf(line + n, sizeof line - n, " | bubble %.2f (ideal %.2f)", s.bubble,
                       theoreticalBubble(o.grid.pp, o.microBatches));
  }
  std::snprintf(line + n, sizeof line - n, " | act peak %s",
                megabytes(s.peakActivationBytes).c_str());
  return line;
}

std::string runBanner(const TrainOptions& o, size_t stageParams, int worldSize) {
  char line[512];
  std::snprintf(
      line, sizeof line,
      "loom-train: %d ranks = dp %d x tp %d x pp %d | GPT %d layers, d_model %d, %d heads,"
      " seq %d | batch %d in %d micro-batches of %d | %s schedule | compress %s | zero %d"
      " | checkpoint-activations %s | %zu params on rank 0",
      worldSize, o.grid.dp, o.grid.tp, o.grid.pp, o.model.layers, o.model.dModel, o.model.heads,
      o.model.seq, o.batch, o.microBatches, o.microBatchSize(), scheduleName(o.schedule),
      compressionName(o.compression, o.steps).c_str(), o.zero, o.checkpointActivations ? "on" : "off",
      stageParams);
  return line;
}

CsvLog::CsvLog(const std::string& path) : out_(path) {
  if (!out_) throw std::runtime_error("cannot write log file '" + path + "'");
  out_ << "step,loss,lr,grad_norm,seconds,tokens_per_s,comm_fraction,wire_bytes,"
          "dp_payload_bytes,dp_wire_bytes,bubble,peak_activation_bytes\n";
}

void CsvLog::write(const StepStats& s) {
  char row[512];
  std::snprintf(row, sizeof row, "%d,%.6f,%.6g,%.6g,%.6f,%.1f,%.4f,%.0f,%.0f,%.0f,%.4f,%.0f\n",
                s.step + 1, s.loss, s.lr, s.gradNorm, s.seconds, s.tokensPerSecond, s.commFraction,
                s.wireBytes, s.dpPayloadBytes, s.dpWireBytes, s.bubble, s.peakActivationBytes);
  out_ << row;
  out_.flush();
}

}  // namespace loom::train
