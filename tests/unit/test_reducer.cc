// Host reduction kernels: every type x op x size x aliasing mode, for every
// instruction-set build this CPU runs, against scalar references written here
// (integers through 128-bit arithmetic, 16-bit floats through the separately
// tested half.h conversions).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/types.h"
#include "math/half.h"
#include "math/reducer.h"
#include "math/reducer_isa.h"

namespace loom {
namespace {

constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min,
                             ReduceOp::Avg};

// ---- References --------------------------------------------------------------

template <typename T>
T refInt(ReduceOp op, T a, T b) {
  // 128 bits hold every sum and product exactly; converting back is modular.
  using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return static_cast<T>(static_cast<Wide>(a) + static_cast<Wide>(b));
    case ReduceOp::Prod:
      return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
    case ReduceOp::Max:
      return a > b ? a : b;
    case ReduceOp::Min:
      return a < b ? a : b;
  }
  return 0;
}

template <typename T>
T refFloat(ReduceOp op, T a, T b) {
  if ((op == ReduceOp::Max || op == ReduceOp::Min) && (std::isnan(a) || std::isnan(b))) {
    return std::numeric_limits<T>::quiet_NaN();
  }
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return a + b;
    case ReduceOp::Prod:
      return a * b;
    case ReduceOp::Max:  // equal values (+0, -0): the first operand
      return b > a ? b : a;
    case ReduceOp::Min:
      return b < a ? b : a;
  }
  return 0;
}

// Storage-level view of each element type: reference op and equality (NaNs of
// any payload compare equal; otherwise bit-exact, so -0 != +0).
template <typename S>
struct Native {
  static S ref(ReduceOp op, S a, S b) {
    if constexpr (std::is_floating_point_v<S>) {
      return refFloat(op, a, b);
    } else {
      return refInt(op, a, b);
    }
  }
  static bool same(S x, S y) {
    if constexpr (std::is_floating_point_v<S>) {
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    }
    return std::memcmp(&x, &y, sizeof(S)) == 0;
  }
};

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
struct Narrow {
  static uint16_t ref(ReduceOp op, uint16_t a, uint16_t b) {
    return Store(refFloat(op, Load(a), Load(b)));
  }
  static bool same(uint16_t x, uint16_t y) {
    if (std::isnan(Load(x)) || std::isnan(Load(y)))
      return std::isnan(Load(x)) && std::isnan(Load(y));
    return x == y;
  }
};
using HalfRef = Narrow<halfToFloat, floatToHalf>;
using Bf16Ref = Narrow<bf16ToFloat, floatToBf16>;

// ---- Inputs ------------------------------------------------------------------

template <typename S>
S randomValue(std::mt19937_64& rng) {
  if constexpr (std::is_integral_v<S>) {
    // Half full-range (overflows), half small (products that fit).
    if (rng() % 2) return static_cast<S>(rng());
    return static_cast<S>(static_cast<int>(rng() % 21) - (std::is_signed_v<S> ? 10 : 0));
  } else if constexpr (std::is_same_v<S, uint16_t>) {
    return static_cast<uint16_t>(rng());  // every pattern: NaN, inf, subnormal too
  } else {
    switch (rng() % 16) {
      case 0:
        return std::numeric_limits<S>::quiet_NaN();
      case 1:
        return (rng() % 2 ? 1 : -1) * std::numeric_limits<S>::infinity();
      case 2:
        return (rng() % 2) ? S(0) : -S(0);
      case 3:
        return std::numeric_limits<S>::max();
      default:
        return std::uniform_real_distribution<S>(-100, 100)(rng);
    }
  }
}

// ---- Harness -----------------------------------------------------------------

enum class Alias { None, DstIsA, DstIsB };

struct Kernels {
  std::string name;
  ReduceFn (*reducer)(DataType, ReduceOp);
};

std::vector<Kernels> allKernels() {
  std::vector<Kernels> out{{"dispatch", reducerFor}, {"generic", reducer_isa::genericReducer}};
  if (reducer_isa::haveAvx2()) out.push_back({"avx2", reducer_isa::avx2Reducer});
  return out;
}

template <typename S, typename Ref>
void checkType(DataType type) {
  std::mt19937_64 rng(static_cast<uint64_t>(type) * 7919 + 1);
  constexpr size_t kGuard = 9;
  const S sentinel = static_cast<S>(0x5a);
  for (const Kernels& k : allKernels()) {
    for (ReduceOp op : kOps) {
      const ReduceFn fn = k.reducer(type, op);
      ASSERT_NE(fn, nullptr);
      for (size_t n : {0, 1, 7, 33, 255, 256, 257, 1003}) {
        for (Alias alias : {Alias::None, Alias::DstIsA, Alias::DstIsB}) {
          for (size_t offset : {0, 1}) {  // 1: element-aligned but not vector-aligned
            SCOPED_TRACE(testing::Message()
                         << k.name << " " << dataTypeName(type) << " " << reduceOpName(op) << " n="
                         << n << " alias=" << static_cast<int>(alias) << " offset=" << offset);
            std::vector<S> a(n + offset + kGuard, sentinel), b(a), d(a);
            for (size_t i = 0; i < n; ++i) {
              a[offset + i] = randomValue<S>(rng);
              b[offset + i] = randomValue<S>(rng);
            }
            std::vector<S> want(n);
            for (size_t i = 0; i < n; ++i) want[i] = Ref::ref(op, a[offset + i], b[offset + i]);
            S* dst = alias == Alias::DstIsA   ? a.data()
                     : alias == Alias::DstIsB ? b.data()
                                              : d.data();
            fn(dst + offset, a.data() + offset, b.data() + offset, n);
            for (size_t i = 0; i < n; ++i) {
              ASSERT_TRUE(Ref::same(dst[offset + i], want[i]))
                  << "i=" << i << " got " << +dst[offset + i] << " want " << +want[i];
            }
            for (size_t i = 0; i < offset; ++i) ASSERT_EQ(dst[i], sentinel);
            for (size_t i = offset + n; i < a.size(); ++i) {
              ASSERT_EQ(std::memcmp(&dst[i], &sentinel, sizeof(S)), 0) << "wrote past n at " << i;
            }
          }
        }
      }
    }
  }
}

TEST(Reducer, AllTypesOpsSizesAliases) {
  checkType<int8_t, Native<int8_t>>(DataType::Int8);
  checkType<uint8_t, Native<uint8_t>>(DataType::Uint8);
  checkType<int32_t, Native<int32_t>>(DataType::Int32);
  checkType<uint32_t, Native<uint32_t>>(DataType::Uint32);
  checkType<int64_t, Native<int64_t>>(DataType::Int64);
  checkType<uint64_t, Native<uint64_t>>(DataType::Uint64);
  checkType<uint16_t, HalfRef>(DataType::Float16);
  checkType<float, Native<float>>(DataType::Float32);
  checkType<double, Native<double>>(DataType::Float64);
  checkType<uint16_t, Bf16Ref>(DataType::Bfloat16);
}

// Every fp16/bf16 pattern against a shuffled copy of every pattern, NaNs
// included: each ISA build must give the same bits as the portable one (the
// AVX2 build converts fp16 with F16C instructions, not half_inl.h).
TEST(Reducer, BuildsAgreeBitForBitOn16BitFloats) {
  if (!reducer_isa::haveAvx2()) GTEST_SKIP() << "only the generic build runs here";
  std::vector<uint16_t> a(65536), b(65536);
  for (uint32_t i = 0; i < 65536; ++i) a[i] = static_cast<uint16_t>(i);
  b = a;
  std::shuffle(b.begin(), b.end(), std::mt19937(5));
  for (DataType type : {DataType::Float16, DataType::Bfloat16}) {
    for (ReduceOp op : kOps) {
      std::vector<uint16_t> g(a.size()), v(a.size());
      reducer_isa::genericReducer(type, op)(g.data(), a.data(), b.data(), a.size());
      reducer_isa::avx2Reducer(type, op)(v.data(), a.data(), b.data(), a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(g[i], v[i]) << dataTypeName(type) << " " << reduceOpName(op) << " " << std::hex
                              << a[i] << " " << b[i];
      }
    }
    std::vector<uint16_t> g = a, v = a;
    reducer_isa::genericAvgFinalizer(type)(g.data(), g.size(), 3);
    reducer_isa::avx2AvgFinalizer(type)(v.data(), v.size(), 3);
    ASSERT_EQ(g, v) << dataTypeName(type);
  }
}

template <typename T>
T reduce1(DataType type, ReduceOp op, T a, T b) {
  T out;
  reducerFor(type, op)(&out, &a, &b, 1);
  return out;
}

TEST(Reducer, IntegerOverflowWraps) {
  EXPECT_EQ(reduce1<int8_t>(DataType::Int8, ReduceOp::Sum, 127, 1), -128);
  EXPECT_EQ(reduce1<uint8_t>(DataType::Uint8, ReduceOp::Sum, 255, 3), 2);
  EXPECT_EQ(reduce1<int8_t>(DataType::Int8, ReduceOp::Prod, -128, -1), -128);
  EXPECT_EQ(reduce1<uint8_t>(DataType::Uint8, ReduceOp::Prod, 16, 17), 16);  // 272 mod 256
  EXPECT_EQ(reduce1<int32_t>(DataType::Int32, ReduceOp::Sum, INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(reduce1<int32_t>(DataType::Int32, ReduceOp::Prod, 65536, 65536), 0);
  EXPECT_EQ(reduce1<uint32_t>(DataType::Uint32, ReduceOp::Sum, UINT32_MAX, 2), 1u);
  EXPECT_EQ(reduce1<int64_t>(DataType::Int64, ReduceOp::Sum, INT64_MAX, INT64_MAX), -2);
  EXPECT_EQ(reduce1<int64_t>(DataType::Int64, ReduceOp::Prod, INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(reduce1<uint64_t>(DataType::Uint64, ReduceOp::Prod, 1ull << 63, 2), 0u);
}

TEST(Reducer, FloatMinMaxPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ReduceOp op : {ReduceOp::Min, ReduceOp::Max}) {
    EXPECT_TRUE(std::isnan(reduce1<float>(DataType::Float32, op, nan, 1.0f)));
    EXPECT_TRUE(std::isnan(reduce1<float>(DataType::Float32, op, 1.0f, nan)));
    EXPECT_TRUE(std::isnan(reduce1<double>(DataType::Float64, op, 2.0, std::nan(""))));
    EXPECT_TRUE(std::isnan(
        halfToFloat(reduce1<uint16_t>(DataType::Float16, op, floatToHalf(1.0f), 0x7e00))));
    EXPECT_TRUE(std::isnan(
        bf16ToFloat(reduce1<uint16_t>(DataType::Bfloat16, op, 0x7fc0, floatToBf16(1.0f)))));
  }
  EXPECT_EQ(reduce1<float>(DataType::Float32, ReduceOp::Max, -INFINITY, 3.0f), 3.0f);
  EXPECT_EQ(reduce1<float>(DataType::Float32, ReduceOp::Min, -INFINITY, 3.0f), -INFINITY);
}

TEST(Reducer, HalfRoundsOncePerElement) {
  // 2048 + 1 is a tie in fp16 (ulp 2 there): float sum 2049, rounded to even 2048.
  EXPECT_EQ(
      reduce1<uint16_t>(DataType::Float16, ReduceOp::Sum, floatToHalf(2048.0f), floatToHalf(1.0f)),
      floatToHalf(2048.0f));
  EXPECT_EQ(reduce1<uint16_t>(DataType::Float16, ReduceOp::Sum, floatToHalf(60000.0f),
                              floatToHalf(10000.0f)),
            0x7c00);  // overflow to +inf
  EXPECT_EQ(
      reduce1<uint16_t>(DataType::Bfloat16, ReduceOp::Prod, floatToBf16(3.0f), floatToBf16(3.0f)),
      floatToBf16(9.0f));
}

// ---- Avg ---------------------------------------------------------------------

template <typename T>
std::vector<T> finalize(DataType type, std::vector<T> v, int nranks) {
  const FinalizeFn fn = finalizerFor(type, ReduceOp::Avg);
  EXPECT_NE(fn, nullptr);
  fn(v.data(), v.size(), nranks);
  return v;
}

TEST(Reducer, AvgFinalizeIntegersTruncateTowardZero) {
  EXPECT_EQ(finalize<int32_t>(DataType::Int32, {7, -7, 8, -8, 1, -1, 0}, 2),
            (std::vector<int32_t>{3, -3, 4, -4, 0, 0, 0}));
  EXPECT_EQ(finalize<int8_t>(DataType::Int8, {-128, 127, -100, 100}, 3),
            (std::vector<int8_t>{-42, 42, -33, 33}));
  // nranks above the type's range must not be narrowed to it.
  EXPECT_EQ(finalize<int8_t>(DataType::Int8, {-128, 127}, 200), (std::vector<int8_t>{0, 0}));
  EXPECT_EQ(finalize<uint8_t>(DataType::Uint8, {255, 199}, 200), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(finalize<uint32_t>(DataType::Uint32, {UINT32_MAX, 5}, 4),
            (std::vector<uint32_t>{UINT32_MAX / 4, 1}));
  EXPECT_EQ(finalize<int64_t>(DataType::Int64, {INT64_MIN, -9}, 4),
            (std::vector<int64_t>{INT64_MIN / 4, -2}));
  EXPECT_EQ(finalize<uint64_t>(DataType::Uint64, {UINT64_MAX}, 1000),
            (std::vector<uint64_t>{UINT64_MAX / 1000}));
}

TEST(Reducer, AvgFinalizeFloatsDivideInOwnPrecision) {
  std::vector<float> f(1003);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) * 0.37f - 11.0f;
  const std::vector<float> fo = finalize(DataType::Float32, f, 3);
  for (size_t i = 0; i < f.size(); ++i) ASSERT_EQ(fo[i], f[i] / 3.0f) << i;

  const std::vector<double> d = finalize<double>(DataType::Float64, {1.0, -10.0, 1e300}, 3);
  EXPECT_EQ(d, (std::vector<double>{1.0 / 3.0, -10.0 / 3.0, 1e300 / 3.0}));

  std::vector<uint16_t> h(1003), b(1003);
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<uint16_t>(i * 61);
    b[i] = static_cast<uint16_t>(i * 67);
  }
  const std::vector<uint16_t> ho = finalize(DataType::Float16, h, 7);
  const std::vector<uint16_t> bo = finalize(DataType::Bfloat16, b, 7);
  for (size_t i = 0; i < h.size(); ++i) {
    ASSERT_TRUE(HalfRef::same(ho[i], floatToHalf(halfToFloat(h[i]) / 7.0f))) << i;
    ASSERT_TRUE(Bf16Ref::same(bo[i], floatToBf16(bf16ToFloat(b[i]) / 7.0f))) << i;
  }
}

TEST(Reducer, AvgFinalizersPerBuildAgree) {
  std::vector<FinalizeFn (*)(DataType)> builds{reducer_isa::genericAvgFinalizer};
  if (reducer_isa::haveAvx2()) builds.push_back(reducer_isa::avx2AvgFinalizer);
  for (auto build : builds) {
    std::vector<int32_t> v{9, -9, 100};
    build(DataType::Int32)(v.data(), v.size(), 4);
    EXPECT_EQ(v, (std::vector<int32_t>{2, -2, 25}));
    std::vector<float> f{1.0f, 2.0f};
    build(DataType::Float32)(f.data(), f.size(), 3);
    EXPECT_EQ(f, (std::vector<float>{1.0f / 3.0f, 2.0f / 3.0f}));
  }
}

TEST(Reducer, AvgReducesAsSum) {
  for (int t = 0; t < kNumDataTypes; ++t) {
    const DataType type = static_cast<DataType>(t);
    EXPECT_EQ(reducerFor(type, ReduceOp::Avg), reducerFor(type, ReduceOp::Sum));
  }
}

TEST(Reducer, FinalizerOnlyForAvg) {
  for (int t = 0; t < kNumDataTypes; ++t) {
    const DataType type = static_cast<DataType>(t);
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) {
      EXPECT_EQ(finalizerFor(type, op), nullptr);
    }
    EXPECT_NE(finalizerFor(type, ReduceOp::Avg), nullptr);
  }
}

// ---- Invalid arguments -------------------------------------------------------

template <typename F>
void expectInvalid(F&& f) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
  }
}

TEST(Reducer, InvalidEnumsRaise) {
  expectInvalid([] { reducerFor(static_cast<DataType>(kNumDataTypes), ReduceOp::Sum); });
  expectInvalid([] { reducerFor(static_cast<DataType>(255), ReduceOp::Sum); });
  expectInvalid([] { reducerFor(DataType::Float32, static_cast<ReduceOp>(kNumReduceOps)); });
  expectInvalid([] { finalizerFor(static_cast<DataType>(12), ReduceOp::Avg); });
  expectInvalid([] { finalizerFor(DataType::Int8, static_cast<ReduceOp>(9)); });
}

TEST(Reducer, AvgOverNoRanksRaises) {
  std::vector<float> v{1.0f};
  expectInvalid([&] { finalizerFor(DataType::Float32, ReduceOp::Avg)(v.data(), 1, 0); });
  expectInvalid([&] { finalizerFor(DataType::Int64, ReduceOp::Avg)(v.data(), 0, -1); });
}

}  // namespace
}  // namespace loom
