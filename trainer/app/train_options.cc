#include "app/train_options.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace loom::train {
namespace {

/// Collects the first failed check's message.
class Checker {
 public:
  template <typename... Parts>
  void require(bool ok, const Parts&... parts) {
    if (ok || !error_.empty()) return;
    std::ostringstream s;
    (s << ... << parts);
    error_ = s.str();
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace

std::string validateOptions(const TrainOptions& o, int worldSize) {
  Checker c;
  const GridShape& g = o.grid;
  const ModelConfig& m = o.model;
  c.require(g.dp >= 1 && g.tp >= 1 && g.pp >= 1, "--dp, --tp and --pp must be >= 1 (got ", g.dp,
            ", ", g.tp, ", ", g.pp, ")");
  c.require(g.size() == worldSize, "dp x tp x pp = ", g.dp, " x ", g.tp, " x ", g.pp, " = ",
            g.size(), " but the world has ", worldSize, " ranks");
  c.require(m.layers >= 1 && m.dModel >= 1 && m.heads >= 1 && m.seq >= 1,
            "--layers, --d-model, --heads and --seq must be >= 1");
  c.require(m.dModel % std::max(1, m.heads) == 0, "--d-model ", m.dModel,
            " is not divisible by --heads ", m.heads);
  c.require(m.heads % std::max(1, g.tp) == 0, "--heads ", m.heads, " is not divisible by --tp ",
            g.tp, " (tensor parallelism splits whole heads)");
  c.require(m.layers >= g.pp, "--layers ", m.layers, " < --pp ", g.pp,
            " (every pipeline stage needs a layer)");
  c.require(o.microBatches >= 1, "--micro-batches must be >= 1 (got ", o.microBatches, ")");
  c.require(o.batch >= 1 && o.batch % std::max(1, g.dp) == 0, "--batch ", o.batch,
            " is not a positive multiple of --dp ", g.dp);
  c.require(o.microBatches < 1 || g.dp < 1 || (o.batch / g.dp) % o.microBatches == 0,
            "--batch / --dp = ", o.batch / std::max(1, g.dp),
            " sequences per DP rank do not split into --micro-batches ", o.microBatches);
  c.require(o.steps >= 1, "--steps must be >= 1 (got ", o.steps, ")");
  c.require(o.lr > 0 && o.minLr >= 0 && o.minLr <= o.lr, "need 0 <= --min-lr <= --lr, --lr > 0");
  c.require(o.warmup >= 0, "--warmup must be >= 0");
  c.require(o.zero == 0 || o.zero == 1, "--zero must be 0 or 1 (got ", o.zero, ")");
  c.require(o.bucketElements >= 1, "--bucket-kb must be > 0");
  c.require(o.blasThreads >= 1, "--threads must be >= 1");
  c.require(o.saveEvery >= 0, "--save-every must be >= 0 (got ", o.saveEvery, ")");
  c.require(!o.elastic || o.zero == 0,
            "--elastic needs --zero 0: under ZeRO-1 a lost rank takes its optimizer shards "
            "with it");
  c.require(!o.elastic || (o.savePath.empty() && o.resumePath.empty()),
            "--elastic does not combine with --save or --resume yet");
  if (!o.dataPath.empty() && c.error().empty()) {
    std::ifstream in(o.dataPath, std::ios::binary | std::ios::ate);
    c.require(static_cast<bool>(in), "cannot read data file '", o.dataPath, "'");
    if (in) {
      const auto bytes = static_cast<long long>(in.tellg());
      c.require(bytes > m.seq, "data file '", o.dataPath, "' has ", bytes, " bytes; --seq ", m.seq,
                " needs more than that");
    }
  }
  return c.error();
}

}  // namespace loom::train
