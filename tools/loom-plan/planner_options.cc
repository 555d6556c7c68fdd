#include "planner_options.h"

#include <fmt/format.h>

#include <charconv>
#include <sstream>

#include "core/error.h"

namespace loom::plan {
namespace {

std::vector<std::string> splitOn(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

Compression compressionNamed(const std::string& name, const char* flag) {
  if (name == "none") return Compression::None;
  if (name == "int8") return Compression::Int8;
  if (name == "topk") return Compression::TopK;
  raise(ErrorCode::InvalidArgument, "{} '{}': compressions are none, int8 and topk", flag, name);
}

int positiveInt(const std::string& key, const std::string& value) {
  int parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error != std::errc() || end != value.data() + value.size() || parsed < 1) {
    raise(ErrorCode::InvalidArgument, "--layout {}='{}': expected a whole number >= 1", key, value);
  }
  return parsed;
}

bool onOff(const std::string& key, const std::string& value) {
  if (value == "1" || value == "on") return true;
  if (value == "0" || value == "off") return false;
  raise(ErrorCode::InvalidArgument, "--layout {}='{}': expected 0/1 or on/off", key, value);
}

// A flag given as -1 keeps the preset's value; anything else must be >= 0.
void override(int raw, int& field, const char* flag) {
  if (raw == -1) return;
  if (raw < 0) raise(ErrorCode::InvalidArgument, "{} must be >= 0 (got {})", flag, raw);
  field = raw;
}

}  // namespace

Layout parseLayout(const std::string& text) {
  Layout l;
  for (const std::string& item : splitOn(text, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      raise(ErrorCode::InvalidArgument,
            "--layout '{}': expected key=value items such as dp=2,tp=2,pp=1,b=1", item);
    }
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "dp") {
      l.dp = positiveInt(key, value);
    } else if (key == "tp") {
      l.tp = positiveInt(key, value);
    } else if (key == "pp") {
      l.pp = positiveInt(key, value);
    } else if (key == "b") {
      l.microBatchSize = positiveInt(key, value);
    } else if (key == "zero") {
      l.zero1 = onOff(key, value);
    } else if (key == "ckpt") {
      l.checkpoint = onOff(key, value);
    } else if (key == "compress") {
      l.compression = compressionNamed(value, "--layout compress");
    } else {
      raise(ErrorCode::InvalidArgument,
            "--layout key '{}' is not known; keys: dp, tp, pp, b, zero, ckpt, compress", key);
    }
  }
  return l;
}

std::vector<Compression> parseCompressions(const std::string& text) {
  std::vector<Compression> list;
  for (const std::string& name : splitOn(text, ',')) {
    list.push_back(compressionNamed(name, "--compress"));
  }
  if (list.empty()) raise(ErrorCode::InvalidArgument, "--compress needs at least one codec");
  return list;
}

PlannerOptions resolveOptions(const RawOptions& raw) {
  PlannerOptions o;
  if (raw.preset.empty() && (raw.layers < 0 || raw.hidden < 0 || raw.heads < 0 || raw.seq < 0 ||
                             raw.vocab < 0 || raw.batch < 0)) {
    raise(ErrorCode::InvalidArgument,
          "give a model: --preset NAME, or all of --layers --hidden --heads --seq --vocab "
          "--batch");
  }
  if (!raw.preset.empty()) o.model = presetNamed(raw.preset);
  override(raw.layers, o.model.layers, "--layers");
  override(raw.hidden, o.model.hidden, "--hidden");
  override(raw.heads, o.model.heads, "--heads");
  override(raw.kvHeads, o.model.kvHeads, "--kv-heads");
  override(raw.ffn, o.model.ffn, "--ffn");
  override(raw.seq, o.model.seq, "--seq");
  override(raw.vocab, o.model.vocab, "--vocab");
  override(raw.batch, o.model.globalBatch, "--batch");
  if (raw.precision == "fp32") {
    o.model.numerics = trainerFp32();
  } else if (raw.precision == "mixed") {
    o.model.numerics = mixedPrecision();
  } else if (!raw.precision.empty()) {
    raise(ErrorCode::InvalidArgument, "--precision '{}': expected mixed or fp32", raw.precision);
  }
  validateShape(o.model);

  if (raw.gpus < 0) raise(ErrorCode::InvalidArgument, "--gpus must be >= 1 (got {})", raw.gpus);
  o.gpus = raw.gpus;
  o.topoFile = raw.topoFile;
  if (raw.tflops > 0 && raw.peakTflops > 0) {
    raise(ErrorCode::InvalidArgument,
          "give --tflops (achieved) or --peak-tflops with "
          "--efficiency, not both");
  }
  if (raw.tflops > 0) {
    o.hardware.tflops = raw.tflops;
  } else if (raw.peakTflops > 0) {
    if (!(raw.efficiency > 0 && raw.efficiency <= 1)) {
      raise(ErrorCode::InvalidArgument,
            "--peak-tflops needs --efficiency in (0, 1], the share of peak dense math achieves "
            "(got {})",
            raw.efficiency);
    }
    o.hardware.tflops = raw.peakTflops * raw.efficiency;
  } else {
    raise(ErrorCode::InvalidArgument,
          "give the GPU's compute rate: --tflops X (achieved TFLOP/s) or --peak-tflops X "
          "--efficiency E (got tflops {}, peak {})",
          raw.tflops, raw.peakTflops);
  }
  if (!(raw.memoryGb > 0)) {
    raise(ErrorCode::InvalidArgument, "--memory-gb must be > 0 (got {})", raw.memoryGb);
  }
  o.hardware.memoryBytes = raw.memoryGb * 1e9;
  if (raw.concurrency < 0) {
    raise(ErrorCode::InvalidArgument, "--concurrency must be >= 0 (got {})", raw.concurrency);
  }
  o.hardware.concurrentRanks = raw.concurrency;

  if (raw.maxMicroBatchSize < 1) {
    raise(ErrorCode::InvalidArgument, "--max-micro-batch must be >= 1 (got {})",
          raw.maxMicroBatchSize);
  }
  o.limits.maxMicroBatchSize = raw.maxMicroBatchSize;
  o.limits.compressions = parseCompressions(raw.compressions);
  o.limits.tryZero = !raw.noZero;
  o.limits.tryCheckpoint = !raw.noCheckpoint;
  if (!(raw.topkFraction > 0 && raw.topkFraction <= 1)) {
    raise(ErrorCode::InvalidArgument, "--topk-fraction must be in (0, 1] (got {})",
          raw.topkFraction);
  }
  o.comm.topkFraction = raw.topkFraction;
  if (!(raw.dpOverlap >= 0 && raw.dpOverlap <= 1)) {
    raise(ErrorCode::InvalidArgument, "--dp-overlap must be in [0, 1] (got {})", raw.dpOverlap);
  }
  o.comm.dpOverlap = raw.dpOverlap;
  if (!raw.layout.empty()) o.layout = parseLayout(raw.layout);
  if (raw.top < 1) raise(ErrorCode::InvalidArgument, "--top must be >= 1 (got {})", raw.top);
  o.top = raw.top;
  if (raw.csv && raw.json) raise(ErrorCode::InvalidArgument, "give --csv or --json, not both");
  o.csv = raw.csv;
  o.json = raw.json;
  o.svgPath = raw.svgPath;
  return o;
}

}  // namespace loom::plan
