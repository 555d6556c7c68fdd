// Element types the perf binaries measure, with conversions to and from double so
// one checker handles every type (half and bf16 included, written here from their
// IEEE/bfloat layouts because the library's own converters are internal).
#ifndef LOOM_PERF_COMMON_TYPES_H_
#define LOOM_PERF_COMMON_TYPES_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace perf {

enum class PerfType { Int8, Uint8, Int32, Uint32, Int64, Uint64, Half, Float, Double, Bf16 };

struct Half {
  uint16_t bits;
};
struct Bf16 {
  uint16_t bits;
};

inline constexpr PerfType kAllTypes[] = {
    PerfType::Int8,   PerfType::Uint8, PerfType::Int32, PerfType::Uint32, PerfType::Int64,
    PerfType::Uint64, PerfType::Half,  PerfType::Float, PerfType::Double, PerfType::Bf16};

inline const char* typeName(PerfType t) {
  switch (t) {
    case PerfType::Int8:
      return "int8";
    case PerfType::Uint8:
      return "uint8";
    case PerfType::Int32:
      return "int32";
    case PerfType::Uint32:
      return "uint32";
    case PerfType::Int64:
      return "int64";
    case PerfType::Uint64:
      return "uint64";
    case PerfType::Half:
      return "half";
    case PerfType::Float:
      return "float";
    case PerfType::Double:
      return "double";
    case PerfType::Bf16:
      return "bfloat16";
  }
  return "?";
}

inline size_t typeSize(PerfType t) {
  switch (t) {
    case PerfType::Int8:
    case PerfType::Uint8:
      return 1;
    case PerfType::Half:
    case PerfType::Bf16:
      return 2;
    case PerfType::Int32:
    case PerfType::Uint32:
    case PerfType::Float:
      return 4;
    default:
      return 8;
  }
}

inline bool isIntegerType(PerfType t) {
  return t != PerfType::Half && t != PerfType::Bf16 && t != PerfType::Float &&
         t != PerfType::Double;
}

/// Names nccl-tests accepts plus the obvious aliases; "all" yields every type.
inline std::vector<PerfType> parseTypes(const std::string& name) {
  if (name == "all") return {std::begin(kAllTypes), std::end(kAllTypes)};
  struct Alias {
    const char* name;
    PerfType type;
  };
  static constexpr Alias kAliases[] = {
      {"int8", PerfType::Int8},      {"char", PerfType::Int8},     {"uint8", PerfType::Uint8},
      {"int32", PerfType::Int32},    {"int", PerfType::Int32},     {"uint32", PerfType::Uint32},
      {"int64", PerfType::Int64},    {"uint64", PerfType::Uint64}, {"half", PerfType::Half},
      {"float16", PerfType::Half},   {"fp16", PerfType::Half},     {"float", PerfType::Float},
      {"float32", PerfType::Float},  {"fp32", PerfType::Float},    {"double", PerfType::Double},
      {"float64", PerfType::Double}, {"fp64", PerfType::Double},   {"bf16", PerfType::Bf16},
      {"bfloat16", PerfType::Bf16}};
  for (const Alias& a : kAliases) {
    if (name == a.name) return {a.type};
  }
  throw std::invalid_argument("unknown datatype '" + name +
                              "' (int8 uint8 int32 uint32 int64 uint64 half float double "
                              "bfloat16 all)");
}

inline float halfToFloat(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  } else if (exponent == 31) {
    magnitude = mantissa ? NAN : INFINITY;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  }
  return (h & 0x8000) ? -magnitude : magnitude;
}

/// Round to nearest even, as hardware conversions do, so expected values match.
inline uint16_t floatToHalf(float f) {
  if (std::isnan(f)) return 0x7e00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal: the encoding is the value in units of 2^-24; 1024 carries into the
    // smallest normal, which the bit layout makes come out right.
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int exp2 = 0;
  std::frexp(a, &exp2);  // a = fr * 2^exp2, fr in [0.5, 1)
  int exponent = exp2 - 1;
  long mantissa = std::lrint((std::ldexp(a, -exponent) - 1.0) * 1024.0);
  if (mantissa == 1024) {
    mantissa = 0;
    ++exponent;
  }
  if (exponent + 15 >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | mantissa);
}

inline float bf16ToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t floatToBf16(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even on the dropped 16 bits
  return static_cast<uint16_t>(u >> 16);
}

template <class T>
double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return halfToFloat(v.bits);
  } else if constexpr (std::is_same_v<T, Bf16>) {
    return bf16ToFloat(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

/// Integers wrap (through int64, which C++20 defines as modular), as the library's
/// integer reductions do, so an expected sum that overflows still matches.
template <class T>
T fromDouble(double d) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{floatToHalf(static_cast<float>(d))};
  } else if constexpr (std::is_same_v<T, Bf16>) {
    return Bf16{floatToBf16(static_cast<float>(d))};
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<int64_t>(d));
  } else {
    return static_cast<T>(d);
  }
}

/// Calls f(T{}) with the C++ type that stores `t`.
template <class F>
decltype(auto) visitType(PerfType t, F&& f) {
  switch (t) {
    case PerfType::Int8:
      return f(int8_t{});
    case PerfType::Uint8:
      return f(uint8_t{});
    case PerfType::Int32:
      return f(int32_t{});
    case PerfType::Uint32:
      return f(uint32_t{});
    case PerfType::Int64:
      return f(int64_t{});
    case PerfType::Uint64:
      return f(uint64_t{});
    case PerfType::Half:
      return f(Half{});
    case PerfType::Float:
      return f(float{});
    case PerfType::Double:
      return f(double{});
    case PerfType::Bf16:
      return f(Bf16{});
  }
  throw std::logic_error("bad PerfType");
}

}  // namespace perf

#endif  // LOOM_PERF_COMMON_TYPES_H_
