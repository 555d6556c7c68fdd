#include "unit/collective_cases.h"

#include <cstring>

#include "math/half.h"
#include "math/reducer.h"

namespace loom::testing_cases {

namespace {

/// Stores small integers, exact in every type.
void storeValue(DataType t, double v, char* out) {
  switch (t) {
    case DataType::Int8:
      *reinterpret_cast<int8_t*>(out) = static_cast<int8_t>(v);
      break;
    case DataType::Uint8:
      *reinterpret_cast<uint8_t*>(out) = static_cast<uint8_t>(v);
      break;
    case DataType::Int32:
      *reinterpret_cast<int32_t*>(out) = static_cast<int32_t>(v);
      break;
    case DataType::Uint32:
      *reinterpret_cast<uint32_t*>(out) = static_cast<uint32_t>(v);
      break;
    case DataType::Int64:
      *reinterpret_cast<int64_t*>(out) = static_cast<int64_t>(v);
      break;
    case DataType::Uint64:
      *reinterpret_cast<uint64_t*>(out) = static_cast<uint64_t>(v);
      break;
    case DataType::Float32:
      *reinterpret_cast<float*>(out) = static_cast<float>(v);
      break;
    case DataType::Float64:
      *reinterpret_cast<double*>(out) = v;
      break;
    case DataType::Float16: {
      const uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case DataType::Bfloat16: {
      const uint16_t h = floatToBf16(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
  }
}

double valueOf(ReduceOp op, int rank, size_t i) {
  // Products of 1s and 2s stay exact (and wrap exactly in 8-bit integers).
  if (op == ReduceOp::Prod) return static_cast<double>(1 + (rank + i) % 2);
  return static_cast<double>((static_cast<size_t>(rank) * 3 + i * 7) % 11 + 1);
}

}  // namespace

std::string describe(const Case& c) {
  return toString(c.collective) + " n=" + std::to_string(c.nranks) +
         " count=" + std::to_string(c.count) + " type=" + std::to_string(static_cast<int>(c.type)) +
         " op=" + std::to_string(static_cast<int>(c.op)) + " root=" + std::to_string(c.root) +
         (c.inPlace ? " in place" : "");
}

size_t sendElements(const Case& c) {
  switch (c.collective) {
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::Scatter:
      return c.count * c.nranks;
    default:
      return c.count;
  }
}
size_t recvElements(const Case& c) {
  switch (c.collective) {
    case Collective::AllGather:
    case Collective::AllToAll:
    case Collective::Gather:
      return c.count * c.nranks;
    default:
      return c.count;
  }
}

World makeWorld(const Case& c) {
  const size_t es = dataTypeSize(c.type);
  World w;
  for (int r = 0; r < c.nranks; ++r) {
    const size_t sendBytes = sendElements(c) * es;
    const size_t recvBytes = recvElements(c) * es;
    std::vector<char> values(sendBytes);
    for (size_t i = 0; i < sendElements(c); ++i) {
      storeValue(c.type, valueOf(c.op, r, i), values.data() + i * es);
    }
    if (!c.inPlace) {
      w.memory.push_back(values);
      w.memory.emplace_back(recvBytes + 1, '\x5a');
      continue;
    }
    // One buffer; where the send part sits inside the receive part or vice versa.
    std::vector<char> one(std::max(sendBytes, recvBytes), '\x5a');
    size_t sendAt = 0;
    if (c.collective == Collective::AllGather || c.collective == Collective::Gather) {
      sendAt = static_cast<size_t>(r) * c.count * es;
    }
    if (sendBytes > 0) std::memcpy(one.data() + sendAt, values.data(), sendBytes);
    w.memory.push_back(std::move(one));
    w.memory.emplace_back();  // unused
  }
  for (int r = 0; r < c.nranks; ++r) {
    char* first = w.memory[2 * static_cast<size_t>(r)].data();
    if (!c.inPlace) {
      w.buffers.push_back({first, w.memory[2 * static_cast<size_t>(r) + 1].data()});
      continue;
    }
    const size_t block = c.count * es * static_cast<size_t>(r);
    switch (c.collective) {
      case Collective::AllGather:
      case Collective::Gather:
        w.buffers.push_back({first + block, first});
        break;
      case Collective::ReduceScatter:
      case Collective::Scatter:
        w.buffers.push_back({first, first + block});
        break;
      default:
        w.buffers.push_back({first, first});
    }
  }
  return w;
}

/// The expected receive buffer of `rank`, computed element by element.
std::vector<char> expected(const Case& c, int rank) {
  const size_t es = dataTypeSize(c.type);
  const ReduceFn reduce = reducerFor(c.type, c.op);
  std::vector<char> out(recvElements(c) * es);
  auto value = [&](int p, size_t i) {
    std::vector<char> v(es);
    storeValue(c.type, valueOf(c.op, p, i), v.data());
    return v;
  };
  auto reduced = [&](size_t i, char* dst) {
    std::memcpy(dst, value(0, i).data(), es);
    for (int p = 1; p < c.nranks; ++p) reduce(dst, dst, value(p, i).data(), 1);
    if (c.op == ReduceOp::Avg) finalizerFor(c.type, c.op)(dst, 1, c.nranks);
  };
  for (size_t i = 0; i < recvElements(c); ++i) {
    char* dst = out.data() + i * es;
    const int block = static_cast<int>(c.count == 0 ? 0 : i / c.count);
    const size_t within = c.count == 0 ? 0 : i % c.count;
    switch (c.collective) {
      case Collective::AllReduce:
      case Collective::Reduce:
        reduced(i, dst);
        break;
      case Collective::ReduceScatter:
        reduced(static_cast<size_t>(rank) * c.count + i, dst);
        break;
      case Collective::AllGather:
      case Collective::Gather:
        std::memcpy(dst, value(block, within).data(), es);
        break;
      case Collective::Broadcast:
        std::memcpy(dst, value(c.root, i).data(), es);
        break;
      case Collective::AllToAll:
        std::memcpy(dst, value(block, static_cast<size_t>(rank) * c.count + within).data(), es);
        break;
      case Collective::Scatter:
        std::memcpy(dst, value(c.root, static_cast<size_t>(rank) * c.count + i).data(), es);
        break;
      default:
        break;
    }
  }
  return out;
}

bool receives(const Case& c, int rank) {
  return !((c.collective == Collective::Reduce || c.collective == Collective::Gather) &&
           rank != c.root);
}

}  // namespace loom::testing_cases
