#include "scaling_json.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>

namespace loomtopo {
namespace {

nlohmann::ordered_json microseconds(double us) {
  return std::isnan(us) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(us);
}

}  // namespace

void printScalingJson(std::ostream& out, const std::string& source,
                      const std::vector<loom::tuner::ScalingRow>& rows,
                      const loom::tuner::ScalingOptions& options) {
  using loom::tuner::busBandwidth;
  using loom::tuner::candidateName;
  nlohmann::ordered_json json;
  json["source"] = source;
  json["collective"] = loom::toString(options.collective);
  json["bytes"] = options.bytes;
  json["rows"] = nlohmann::ordered_json::array();
  for (const auto& row : rows) {
    nlohmann::ordered_json r;
    r["ranks"] = row.ranks;
    r["hosts"] = row.hosts;
    r["channels"] = row.channels;
    r["candidates"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < row.candidates.size(); ++i) {
      const auto& c = row.candidates[i];
      nlohmann::ordered_json entry{
          {"name", candidateName(c.candidate)},
          {"us", microseconds(c.microseconds)},
          {"busbw_gbps", microseconds(busBandwidth(options.collective, options.bytes, row.ranks,
                                                   c.microseconds))}};
      if (i < row.simulated.size()) entry["simulated_us"] = microseconds(row.simulated[i]);
      r["candidates"].push_back(entry);
    }
    r["pick"] = {{"name", candidateName(row.pick.candidate)},
                 {"us", microseconds(row.pick.microseconds)},
                 {"chunk_bytes", row.pick.candidate.chunkBytes}};
    json["rows"].push_back(r);
  }
  out << json.dump(2) << "\n";
}

}  // namespace loomtopo
