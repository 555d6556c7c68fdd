#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "report.h"

namespace loom::plan {
namespace {

nlohmann::ordered_json toJson(const Prediction& p) {
  const Layout& l = p.layout;
  return {{"layout", l.label()},
          {"dp", l.dp},
          {"tp", l.tp},
          {"pp", l.pp},
          {"micro_batch_size", l.microBatchSize},
          {"zero1", l.zero1},
          {"checkpoint", l.checkpoint},
          {"compression", compressionName(l.compression)},
          {"fits", p.fits},
          {"step_s", p.stepSeconds},
          {"compute_s", p.computeSeconds},
          {"tp_comm_s", p.tpSeconds},
          {"bubble_s", p.bubbleSeconds},
          {"pp_comm_s", p.ppSeconds},
          {"dp_comm_s", p.dpSeconds},
          {"tflops_per_gpu", p.tflopsPerGpu},
          {"tokens_per_s", p.tokensPerSecond},
          {"params_per_gpu", p.memory.params},
          {"weights_bytes", p.memory.weights},
          {"gradients_bytes", p.memory.gradients},
          {"optimizer_bytes", p.memory.optimizer},
          {"residual_bytes", p.memory.residual},
          {"activation_bytes", p.memory.activations},
          {"total_bytes", p.memory.total()}};
}

}  // namespace

void printCsv(std::ostream& out, const PlanResult& plan) {
  out << "rank,dp,tp,pp,micro_batch_size,zero1,checkpoint,compression,fits,step_s,compute_s,"
         "tp_comm_s,bubble_s,pp_comm_s,dp_comm_s,tflops_per_gpu,tokens_per_s,params_per_gpu,"
         "weights_bytes,gradients_bytes,optimizer_bytes,residual_bytes,activation_bytes,"
         "total_bytes\n";
  int place = 0;
  for (const Prediction& p : plan.ranked) {
    const Layout& l = p.layout;
    out << fmt::format(
        "{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},"
        "{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f}\n",
        ++place, l.dp, l.tp, l.pp, l.microBatchSize, l.zero1 ? 1 : 0, l.checkpoint ? 1 : 0,
        compressionName(l.compression), p.fits ? 1 : 0, p.stepSeconds, p.computeSeconds,
        p.tpSeconds, p.bubbleSeconds, p.ppSeconds, p.dpSeconds, p.tflopsPerGpu, p.tokensPerSecond,
        p.memory.params, p.memory.weights, p.memory.gradients, p.memory.optimizer,
        p.memory.residual, p.memory.activations, p.memory.total());
  }
}

void printJson(std::ostream& out, const PlanResult& plan, int top) {
  const ModelShape& m = plan.model;
  nlohmann::ordered_json json;
  json["model"] = {{"name", m.name},
                   {"layers", m.layers},
                   {"hidden", m.hidden},
                   {"heads", m.heads},
                   {"seq", m.seq},
                   {"vocab", m.vocab},
                   {"batch", m.globalBatch},
                   {"parameters", totalParams(m)},
                   {"numerics", m.numerics.name}};
  json["topology"] = plan.topology;
  json["gpus"] = plan.gpus;
  json["tflops_per_gpu"] = plan.hardware.tflops;
  json["memory_bytes_per_gpu"] = plan.hardware.memoryBytes;
  json["layouts"] = nlohmann::ordered_json::array();
  for (int i = 0; i < top && i < static_cast<int>(plan.ranked.size()); ++i) {
    json["layouts"].push_back(toJson(plan.ranked[i]));
  }
  json["valid_layouts"] = plan.ranked.size();
  if (plan.asked) {
    json["asked"] = toJson(*plan.asked);
    json["asked"]["rank"] = plan.askedPlace;
  }
  out << json.dump(2) << "\n";
}

}  // namespace loom::plan
