// Byte sizes on the command line ("32M") and the sweep of sizes a run measures.
#ifndef LOOM_PERF_COMMON_SIZES_H_
#define LOOM_PERF_COMMON_SIZES_H_

#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace perf {

/// Parses "8", "64K", "32M", "1G" (binary multiples, as nccl-tests does; an optional
/// trailing "B" or "iB" is accepted). Throws std::invalid_argument naming the text.
inline uint64_t parseBytes(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0 || pos > 18) throw std::invalid_argument("bad size '" + text + "'");
  uint64_t value = std::stoull(text.substr(0, pos));
  std::string suffix = text.substr(pos);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.ends_with("IB")) suffix.resize(suffix.size() - 2);
  if (suffix.size() == 2 && suffix.back() == 'B') suffix.pop_back();
  if (suffix == "B") suffix.clear();
  int shift = 0;
  if (suffix == "K") {
    shift = 10;
  } else if (suffix == "M") {
    shift = 20;
  } else if (suffix == "G") {
    shift = 30;
  } else if (!suffix.empty()) {
    throw std::invalid_argument("bad size suffix in '" + text + "' (use K, M or G)");
  }
  if (value > (UINT64_MAX >> shift)) throw std::invalid_argument("size '" + text + "' too large");
  return value << shift;
}

/// min, then min*factor (or min+step when step > 0), ... up to and including max.
inline std::vector<uint64_t> sizeSweep(uint64_t minBytes, uint64_t maxBytes, double factor,
                                       uint64_t step) {
  if (minBytes > maxBytes) throw std::invalid_argument("minbytes is larger than maxbytes");
  if (step == 0 && factor <= 1.0) {
    throw std::invalid_argument("stepfactor must be > 1 (or give stepbytes)");
  }
  std::vector<uint64_t> sizes;
  for (uint64_t size = minBytes; size <= maxBytes;) {
    sizes.push_back(size);
    uint64_t next = step > 0 ? size + step : static_cast<uint64_t>(size * factor);
    if (next <= size) next = size + 1;  // factor close to 1 on tiny sizes must still move on
    size = next;
  }
  return sizes;
}

}  // namespace perf

#endif  // LOOM_PERF_COMMON_SIZES_H_
