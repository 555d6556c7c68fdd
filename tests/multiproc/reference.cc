#include "reference.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace loomtest {

size_t typeSize(loomDataType_t type) {
  switch (type) {
    case loomInt8:
    case loomUint8:
      return 1;
    case loomFloat16:
    case loomBfloat16:
      return 2;
    case loomInt32:
    case loomUint32:
    case loomFloat32:
      return 4;
    case loomInt64:
    case loomUint64:
    case loomFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* typeName(loomDataType_t type) {
  static const char* const kNames[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                                       "uint64", "float16", "float32", "float64", "bfloat16"};
  return static_cast<unsigned>(type) < loomNumTypes ? kNames[type] : "badtype";
}

const char* opName(loomRedOp_t op) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg"};
  return static_cast<unsigned>(op) < loomNumOps ? kNames[op] : "badop";
}

bool isFloatType(loomDataType_t type) {
  return type == loomFloat16 || type == loomBfloat16 || type == loomFloat32 || type == loomFloat64;
}

bool isSignedType(loomDataType_t type) {
  return type == loomInt8 || type == loomInt32 || type == loomInt64 || isFloatType(type);
}

// --- half and bfloat16 --------------------------------------------------------

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf stays inf; NaN stays a (quiet) NaN
    return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u);
  }
  // 65520 is halfway between 65504 (largest half) and 65536: ties-to-even
  // picks 65536, which does not exist, so it and everything above is inf.
  if (absx >= 0x477ff000u) return sign | 0x7c00u;
  const int e = static_cast<int>(absx >> 23) - 127;
  const uint32_t mant = absx & 0x7fffffu;
  uint32_t h;
  uint32_t rem;
  uint32_t halfway;
  if (e >= -14) {  // normal half: keep 10 of 23 mantissa bits
    h = (static_cast<uint32_t>(e + 15) << 10) | (mant >> 13);
    rem = mant & 0x1fffu;
    halfway = 0x1000u;
  } else {                     // subnormal half: units of 2^-24
    const int shift = -e - 1;  // >= 14
    if (shift > 24) return sign;
    const uint32_t m = 0x800000u | mant;
    h = m >> shift;
    rem = m & ((1u << shift) - 1);
    halfway = 1u << (shift - 1);
  }
  // A carry out of the mantissa correctly bumps the exponent.
  if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // overflow carries into the exponent and up to inf, as it should.
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// --- element access -------------------------------------------------------------

namespace {

template <typename T>
T load(const void* buf, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(buf) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void store(void* buf, size_t i, T v) {
  std::memcpy(static_cast<char*>(buf) + i * sizeof(T), &v, sizeof(T));
}

/// Stores v (integral for integer types and in range) as `type`.
void storeDouble(void* buf, loomDataType_t type, size_t i, double v) {
  switch (type) {
    case loomInt8:
      return store<int8_t>(buf, i, static_cast<int8_t>(v));
    case loomUint8:
      return store<uint8_t>(buf, i, static_cast<uint8_t>(v));
    case loomInt32:
      return store<int32_t>(buf, i, static_cast<int32_t>(v));
    case loomUint32:
      return store<uint32_t>(buf, i, static_cast<uint32_t>(v));
    case loomInt64:
      return store<int64_t>(buf, i, static_cast<int64_t>(v));
    case loomUint64:
      return store<uint64_t>(buf, i, static_cast<uint64_t>(v));
    case loomFloat16:
      return store<uint16_t>(buf, i, floatToHalf(static_cast<float>(v)));
    case loomBfloat16:
      return store<uint16_t>(buf, i, floatToBf16(static_cast<float>(v)));
    case loomFloat32:
      return store<float>(buf, i, static_cast<float>(v));
    case loomFloat64:
      return store<double>(buf, i, v);
    default:
      return;
  }
}

/// Machine epsilon (distance from 1 to the next value) of a float type.
double epsilonOf(loomDataType_t type) {
  switch (type) {
    case loomFloat16:
      return std::ldexp(1.0, -10);
    case loomBfloat16:
      return std::ldexp(1.0, -7);
    case loomFloat32:
      return std::ldexp(1.0, -23);
    default:
      return std::ldexp(1.0, -52);
  }
}

/// Smallest positive subnormal, as an absolute floor for tolerances near zero.
double tinyOf(loomDataType_t type) {
  return type == loomFloat16 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -120);
}

/// splitmix64 finalizer over (seed, rank, index): stateless, so any element of
/// any rank's input can be recomputed anywhere.
uint64_t mix(uint64_t seed, int rank, size_t index) {
  uint64_t z = seed ^ ((static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull) ^
               (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The value an input element should have, before rounding to the type.
double rawValue(loomDataType_t type, Pattern pattern, uint64_t seed, int rank, size_t index,
                loomRedOp_t op) {
  const bool isSigned = isSignedType(type);
  switch (pattern) {
    case Pattern::SmallInts: {
      const double v =
          static_cast<double>((index * 7 + static_cast<size_t>(rank) * 13 + seed) % 31);
      return isSigned ? v - 15 : v;
    }
    case Pattern::ProdSafe: {
      // At most 2 of any 8 consecutive ranks have (index + rank) % 4 == 0.
      double v = (index + static_cast<size_t>(rank)) % 4 == 0 ? 2 : 1;
      if (isSigned && (index + 2 * static_cast<size_t>(rank)) % 3 == 0) v = -v;
      return v;
    }
    case Pattern::RandomReal: {
      const double u = static_cast<double>(mix(seed, rank, index) >> 11) * std::ldexp(1.0, -53);
      return op == loomProd ? 0.5 + 1.5 * u : 2 * u - 1;
    }
    case Pattern::RandomBytes:
      break;
  }
  return 0;
}

/// The exact value of an input element as stored in `type`.
double inputValue(loomDataType_t type, Pattern pattern, uint64_t seed, int rank, size_t index,
                  loomRedOp_t op) {
  unsigned char tmp[8];
  storeDouble(tmp, type, 0, rawValue(type, pattern, seed, rank, index, op));
  return elementAsDouble(tmp, type, 0);
}

}  // namespace

double elementAsDouble(const void* buf, loomDataType_t type, size_t i) {
  switch (type) {
    case loomInt8:
      return load<int8_t>(buf, i);
    case loomUint8:
      return load<uint8_t>(buf, i);
    case loomInt32:
      return load<int32_t>(buf, i);
    case loomUint32:
      return load<uint32_t>(buf, i);
    case loomInt64:
      return static_cast<double>(load<int64_t>(buf, i));
    case loomUint64:
      return static_cast<double>(load<uint64_t>(buf, i));
    case loomFloat16:
      return halfToFloat(load<uint16_t>(buf, i));
    case loomBfloat16:
      return bf16ToFloat(load<uint16_t>(buf, i));
    case loomFloat32:
      return load<float>(buf, i);
    case loomFloat64:
      return load<double>(buf, i);
    default:
      return 0;
  }
}

void fillInput(void* out, loomDataType_t type, Pattern pattern, uint64_t seed, int rank,
               size_t first, size_t count, loomRedOp_t op) {
  if (pattern == Pattern::RandomBytes) {
    auto* bytes = static_cast<unsigned char*>(out);
    const size_t es = typeSize(type);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t r = mix(seed, rank, first + i);
      std::memcpy(bytes + i * es, &r, es);
    }
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    storeDouble(out, type, i, rawValue(type, pattern, seed, rank, first + i, op));
  }
}

void reduceReference(void* out, loomDataType_t type, loomRedOp_t op, Pattern pattern, uint64_t seed,
                     int nranks, size_t first, size_t count, std::vector<double>* tolerance) {
  const bool isFloat = isFloatType(type);
  const double eps = isFloat ? epsilonOf(type) : 0;
  const bool random = pattern == Pattern::RandomReal;
  const bool needTolerance = isFloat && (random || op == loomAvg) && op != loomMax && op != loomMin;
  if (tolerance != nullptr) {
    tolerance->clear();
    if (needTolerance) tolerance->resize(count);
  }
  for (size_t i = 0; i < count; ++i) {
    if (!isFloat) {
      // Integers: exact in int64 for the small patterns we generate; avg
      // truncates toward zero like C's integer division.
      int64_t acc = static_cast<int64_t>(inputValue(type, pattern, seed, 0, first + i, op));
      for (int r = 1; r < nranks; ++r) {
        const auto v = static_cast<int64_t>(inputValue(type, pattern, seed, r, first + i, op));
        switch (op) {
          case loomSum:
          case loomAvg:
            acc += v;
            break;
          case loomProd:
            acc *= v;
            break;
          case loomMax:
            acc = v > acc ? v : acc;
            break;
          case loomMin:
            acc = v < acc ? v : acc;
            break;
          default:
            break;
        }
      }
      if (op == loomAvg) acc /= nranks;
      storeDouble(out, type, i, static_cast<double>(acc));
      continue;
    }
    // Floats: double holds the exact result of the small-integer patterns.
    double acc = inputValue(type, pattern, seed, 0, first + i, op);
    double absSum = std::fabs(acc);
    for (int r = 1; r < nranks; ++r) {
      const double v = inputValue(type, pattern, seed, r, first + i, op);
      absSum += std::fabs(v);
      switch (op) {
        case loomSum:
        case loomAvg:
          acc += v;
          break;
        case loomProd:
          acc *= v;
          break;
        case loomMax:
          acc = v > acc ? v : acc;
          break;
        case loomMin:
          acc = v < acc ? v : acc;
          break;
        default:
          break;
      }
    }
    if (op == loomAvg) acc /= nranks;
    storeDouble(out, type, i, acc);
    if (needTolerance && tolerance != nullptr) {
      // Any summation order is allowed; each partial result may be rounded to
      // the type, so the error grows with the ranks and the magnitudes added.
      double tol = eps * std::fabs(acc) + tinyOf(type);
      if (random) {
        const double n = nranks + 1;
        if (op == loomProd) tol += n * eps * std::fabs(acc);
        if (op == loomSum) tol += n * eps * absSum;
        if (op == loomAvg) tol += n * eps * absSum / nranks;
      }
      (*tolerance)[i] = tol;
    }
  }
}

std::string compareElements(const void* got, const void* expected, loomDataType_t type,
                            size_t count, const std::vector<double>& tolerance) {
  const size_t es = typeSize(type);
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* e = static_cast<const unsigned char*>(expected);
  size_t bad = 0;
  std::ostringstream out;
  out.precision(17);  // enough digits to show a one-ulp difference in a double
  for (size_t i = 0; i < count; ++i) {
    bool ok;
    if (tolerance.empty()) {
      ok = std::memcmp(g + i * es, e + i * es, es) == 0;
    } else {
      const double a = elementAsDouble(got, type, i);
      const double b = elementAsDouble(expected, type, i);
      ok = std::fabs(a - b) <= tolerance[i];  // false for NaN
    }
    if (ok) continue;
    if (bad < 3) {
      out << (bad ? "; " : "") << "element " << i << ": got " << elementAsDouble(got, type, i)
          << " expected " << elementAsDouble(expected, type, i);
      if (!tolerance.empty()) out << " (tolerance " << tolerance[i] << ")";
    }
    ++bad;
  }
  if (bad == 0) return "";
  out << " [" << bad << " of " << count << " elements differ]";
  return out.str();
}

uint64_t hashBytes(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace loomtest
