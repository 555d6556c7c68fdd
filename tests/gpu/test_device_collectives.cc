// Every collective on device buffers through the public API: n ranks of one
// process on one GPU (loomCommInitAll, one thread driving them in a group),
// every dtype, the reduce ops whose results are exact for small integers, in
// and out of place, sizes 0, 1, odd and large; results against a reference
// computed on the host from the same inputs, identical on every rank.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tests/gpu/typed_values.h"

namespace loom::gpu_test {
namespace {

#define LOOM_OK(expr) ASSERT_EQ((expr), loomSuccess) << loomGetLastError(nullptr)

/// cudaMemcpy from pageable memory may return before its DMA lands, and the
/// ranks' non-blocking streams do not wait for it: the upload is complete
/// before any collective reads it.
cudaError_t copyToDevice(void* device, const void* host, size_t bytes) {
  const cudaError_t status = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
  return status != cudaSuccess ? status : cudaDeviceSynchronize();
}

struct Device {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit Device(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&ptr, n + 1), cudaSuccess); }
  ~Device() { cudaFree(ptr); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  char* at(size_t offset) const { return static_cast<char*>(ptr) + offset; }
  void upload(const std::vector<unsigned char>& host, size_t offset = 0) const {
    ASSERT_EQ(copyToDevice(at(offset), host.data(), host.size()), cudaSuccess);
  }
  std::vector<unsigned char> download(size_t offset, size_t n) const {
    std::vector<unsigned char> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), at(offset), n, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

class Ranks {
 public:
  explicit Ranks(int n) : comms_(static_cast<size_t>(n)) {
    EXPECT_EQ(loomCommInitAll(comms_.data(), n, nullptr), loomSuccess) << loomGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      cudaStream_t s = nullptr;
      EXPECT_EQ(cudaStreamCreate(&s), cudaSuccess);
      streams_.push_back(s);
    }
  }
  ~Ranks() {
    for (loomComm_t c : comms_) loomCommDestroy(c);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }
  int size() const { return static_cast<int>(comms_.size()); }
  /// Calls `call(rank, comm, stream)` for every rank inside one group.
  loomResult_t group(const std::function<loomResult_t(int, loomComm_t, cudaStream_t)>& call) {
    loomResult_t first = loomGroupStart();
    for (int r = 0; r < size(); ++r) {
      const loomResult_t rc = call(r, comms_[r], streams_[r]);
      if (first == loomSuccess) first = rc;
    }
    const loomResult_t ended = loomGroupEnd();
    return first != loomSuccess ? first : ended;
  }

 private:
  std::vector<loomComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};

struct Shape {
  int nranks;
  size_t count;
};

class DeviceCollectives : public testing::TestWithParam<Shape> {};

// All-reduce, reduce, reduce-scatter: every dtype with sum, max, min (avg on
// float32); in and out of place.
TEST_P(DeviceCollectives, Reductions) {
  const auto [n, count] = GetParam();
  Ranks ranks(n);
  for (loomDataType_t t : kTypes) {
    const size_t es = loomTypeSize(t);
    for (loomRedOp_t op : {loomSum, loomMax, loomMin, loomAvg}) {
      if (op == loomAvg && t != loomFloat32) continue;
      for (bool inPlace : {false, true}) {
        const std::string what = "type " + std::to_string(t) + " op " + std::to_string(op) +
                                 (inPlace ? " in place" : " out of place") + " n " +
                                 std::to_string(n) + " count " + std::to_string(count);
        // All-reduce: input count, output count.
        std::vector<std::unique_ptr<Device>> in, out;
        for (int r = 0; r < n; ++r) {
          std::vector<double> v(count);
          for (size_t i = 0; i < count; ++i) v[i] = valueOf(r, i);
          in.push_back(std::make_unique<Device>(count * es));
          in.back()->upload(encode(t, v));
          out.push_back(inPlace ? nullptr : std::make_unique<Device>(count * es));
        }
        auto recvOf = [&](int r) { return inPlace ? in[r]->ptr : out[r]->ptr; };
        ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
          return loomAllReduce(in[r]->ptr, recvOf(r), count, t, op, c, s);
        }),
                  loomSuccess)
            << what << ": " << loomGetLastError(nullptr);
        std::vector<double> want(count);
        for (size_t i = 0; i < count; ++i) {
          std::vector<double> xs;
          for (int r = 0; r < n; ++r) xs.push_back(valueOf(r, i));
          want[i] = reduce(op, xs);
        }
        const auto expected = encode(t, want);
        for (int r = 0; r < n; ++r) {
          const Device& d = inPlace ? *in[r] : *out[r];
          EXPECT_EQ(d.download(0, count * es), expected) << "all-reduce " << what << " rank " << r;
        }
        if (inPlace) continue;
        // Reduce to the last rank, out of place: the same sums there.
        for (int r = 0; r < n; ++r) {
          std::vector<double> v(count);
          for (size_t i = 0; i < count; ++i) v[i] = valueOf(r, i);
          in[r]->upload(encode(t, v));
        }
        ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
          return loomReduce(in[r]->ptr, out[r]->ptr, count, t, op, n - 1, c, s);
        }),
                  loomSuccess)
            << what << ": " << loomGetLastError(nullptr);
        EXPECT_EQ(out[n - 1]->download(0, count * es), expected) << "reduce " << what;
        // Reduce-scatter: rank r gets block r of the sum of n-block inputs.
        std::vector<std::unique_ptr<Device>> wide;
        for (int r = 0; r < n; ++r) {
          std::vector<double> v(count * n);
          for (size_t i = 0; i < v.size(); ++i) v[i] = valueOf(r, i);
          wide.push_back(std::make_unique<Device>(v.size() * es));
          wide.back()->upload(encode(t, v));
        }
        ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
          return loomReduceScatter(wide[r]->ptr, out[r]->ptr, count, t, op, c, s);
        }),
                  loomSuccess)
            << what << ": " << loomGetLastError(nullptr);
        for (int r = 0; r < n; ++r) {
          std::vector<double> part(count);
          for (size_t i = 0; i < count; ++i) {
            std::vector<double> xs;
            for (int q = 0; q < n; ++q) xs.push_back(valueOf(q, r * count + i));
            part[i] = reduce(op, xs);
          }
          EXPECT_EQ(out[r]->download(0, count * es), encode(t, part))
              << "reduce-scatter " << what << " rank " << r;
        }
      }
    }
  }
}

// Data movement: broadcast, all-gather, all-to-all, gather, scatter and a
// ring of send/recv, every dtype, out of place.
TEST_P(DeviceCollectives, DataMovement) {
  const auto [n, count] = GetParam();
  Ranks ranks(n);
  for (loomDataType_t t : kTypes) {
    const size_t es = loomTypeSize(t);
    const size_t block = count * es;
    auto input = [&](int r, size_t elements) {
      std::vector<double> v(elements);
      for (size_t i = 0; i < elements; ++i) v[i] = valueOf(r, i);
      return encode(t, v);
    };
    std::vector<std::unique_ptr<Device>> in, out;
    for (int r = 0; r < n; ++r) {
      in.push_back(std::make_unique<Device>(block * n));
      in.back()->upload(input(r, count * n));
      out.push_back(std::make_unique<Device>(block * n));
    }
    const int root = n - 1;
    // Broadcast from the last rank.
    ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
      return loomBroadcast(in[r]->ptr, out[r]->ptr, count, t, root, c, s);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    const auto rootInput = input(root, count * n);
    const std::vector<unsigned char> rootBlock(rootInput.begin(), rootInput.begin() + block);
    for (int r = 0; r < n; ++r) EXPECT_EQ(out[r]->download(0, block), rootBlock) << "bcast " << t;
    // All-gather: block b of every output is rank b's first block.
    ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
      return loomAllGather(in[r]->ptr, out[r]->ptr, count, t, c, s);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      for (int b = 0; b < n; ++b) {
        const auto src = input(b, count);
        EXPECT_EQ(out[r]->download(b * block, block), src) << "allgather " << t << " rank " << r;
      }
    }
    // All-to-all: rank r's block b is rank b's block r.
    ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
      return loomAllToAll(in[r]->ptr, out[r]->ptr, count, t, c, s);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      for (int b = 0; b < n; ++b) {
        const auto src = input(b, count * n);
        const std::vector<unsigned char> want(src.begin() + r * block,
                                              src.begin() + (r + 1) * block);
        EXPECT_EQ(out[r]->download(b * block, block), want) << "alltoall " << t << " rank " << r;
      }
    }
    // Gather to the root: block b is rank b's first block.
    ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
      return loomGather(in[r]->ptr, out[r]->ptr, count, t, root, c, s);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    for (int b = 0; b < n; ++b) {
      EXPECT_EQ(out[root]->download(b * block, block), input(b, count)) << "gather " << t;
    }
    // Scatter from the root: rank r gets the root's block r.
    ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
      return loomScatter(in[r]->ptr, out[r]->ptr, count, t, root, c, s);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      const std::vector<unsigned char> want(rootInput.begin() + r * block,
                                            rootInput.begin() + (r + 1) * block);
      EXPECT_EQ(out[r]->download(0, block), want) << "scatter " << t << " rank " << r;
    }
    // Send/recv around a ring: rank r receives rank r-1's first block.
    ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
      const loomResult_t a = loomSend(in[r]->ptr, count, t, (r + 1) % n, c, s);
      const loomResult_t b = loomRecv(out[r]->ptr, count, t, (r + n - 1) % n, c, s);
      return a != loomSuccess ? a : b;
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(out[r]->download(0, block), input((r + n - 1) % n, count)) << "sendrecv " << t;
    }
  }
}

// Several calls per rank in one group (a framework's bucketed gradients): an
// all-reduce of floats, an all-gather of int32 and a broadcast of bf16, on
// one stream per rank; a path that walks a group runs them in order.
TEST_P(DeviceCollectives, SeveralCallsInOneGroup) {
  const auto [n, count] = GetParam();
  Ranks ranks(n);
  std::vector<std::unique_ptr<Device>> sums, gathered, mine, bcast;
  std::vector<std::vector<double>> values(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    values[r].resize(count);
    for (size_t i = 0; i < count; ++i) values[r][i] = valueOf(r, i);
    sums.push_back(std::make_unique<Device>(count * 4));
    sums.back()->upload(encode(loomFloat32, values[r]));
    mine.push_back(std::make_unique<Device>(count * 4));
    mine.back()->upload(encode(loomInt32, values[r]));
    gathered.push_back(std::make_unique<Device>(count * 4 * n));
    bcast.push_back(std::make_unique<Device>(count * 2));
    bcast.back()->upload(encode(loomBfloat16, values[r]));
  }
  ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    loomResult_t rc = loomAllReduce(sums[r]->ptr, sums[r]->ptr, count, loomFloat32, loomSum, c, s);
    if (rc == loomSuccess)
      rc = loomAllGather(mine[r]->ptr, gathered[r]->ptr, count, loomInt32, c, s);
    if (rc == loomSuccess)
      rc = loomBroadcast(bcast[r]->ptr, bcast[r]->ptr, count, loomBfloat16, 0, c, s);
    return rc;
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  std::vector<double> total(count, 0.0);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) total[i] += values[r][i];
  }
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(sums[r]->download(0, count * 4), encode(loomFloat32, total)) << "rank " << r;
    for (int b = 0; b < n; ++b) {
      EXPECT_EQ(gathered[r]->download(b * count * 4, count * 4), encode(loomInt32, values[b]))
          << "rank " << r << " block " << b;
    }
    EXPECT_EQ(bcast[r]->download(0, count * 2), encode(loomBfloat16, values[0])) << "rank " << r;
  }
}

// A group of many calls of one type (the kernel path fuses up to 16 into one
// launch, so 21 take two): all-reduces with alternating ops, in and out of
// place, and reduce-scatters, of sizes around `count`.
TEST_P(DeviceCollectives, ManyCallsOfOneTypeInOneGroup) {
  const auto [n, count] = GetParam();
  constexpr int kCalls = 21;
  Ranks ranks(n);
  std::vector<std::vector<std::unique_ptr<Device>>> in(kCalls), out(kCalls);
  auto sizeOf = [count = count](int k) { return count + static_cast<size_t>(k % 3); };
  auto isScatter = [](int k) { return k % 5 == 4; };
  for (int k = 0; k < kCalls; ++k) {
    const size_t c = sizeOf(k);
    const size_t inCount = isScatter(k) ? c * static_cast<size_t>(n) : c;
    for (int r = 0; r < n; ++r) {
      std::vector<double> v(inCount);
      for (size_t i = 0; i < inCount; ++i) v[i] = valueOf(r + k, i);
      in[k].push_back(std::make_unique<Device>(inCount * 4));
      in[k].back()->upload(encode(loomFloat32, v));
      out[k].push_back(std::make_unique<Device>(c * 4));
    }
  }
  ASSERT_EQ(ranks.group([&](int r, loomComm_t comm, cudaStream_t s) {
    loomResult_t rc = loomSuccess;
    for (int k = 0; k < kCalls && rc == loomSuccess; ++k) {
      const size_t c = sizeOf(k);
      if (isScatter(k)) {
        rc = loomReduceScatter(in[k][r]->ptr, out[k][r]->ptr, c, loomFloat32, loomSum, comm, s);
      } else {
        void* recv = k % 2 == 0 ? in[k][r]->ptr : out[k][r]->ptr;  // in place or not
        rc = loomAllReduce(in[k][r]->ptr, recv, c, loomFloat32, k % 3 == 0 ? loomMax : loomSum,
                           comm, s);
      }
    }
    return rc;
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  for (int k = 0; k < kCalls; ++k) {
    const size_t c = sizeOf(k);
    std::vector<double> want(c, 0.0);
    for (size_t i = 0; i < c; ++i) {
      for (int r = 0; r < n; ++r) {
        if (isScatter(k)) continue;
        const double v = valueOf(r + k, i);
        want[i] = k % 3 == 0 ? (r == 0 ? v : std::max(want[i], v)) : want[i] + v;
      }
    }
    for (int r = 0; r < n; ++r) {
      if (isScatter(k)) {
        for (size_t i = 0; i < c; ++i) {
          want[i] = 0;
          for (int q = 0; q < n; ++q) want[i] += valueOf(q + k, static_cast<size_t>(r) * c + i);
        }
      }
      const Device& result = k % 2 == 0 && !isScatter(k) ? *in[k][r] : *out[k][r];
      EXPECT_EQ(result.download(0, c * 4), encode(loomFloat32, want))
          << "call " << k << " rank " << r;
    }
  }
}

// A group that mixes a collective with send/recv on some ranks only: ranks 0
// and 1 also exchange a buffer, rank 2 makes just the all-reduce. Every rank
// must reach the same path for the all-reduce without waiting for the others.
TEST(DeviceCollectivesGroups, CollectiveAndSendRecvOnSomeRanks) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 1031;
  Ranks ranks(kRanks);
  std::vector<std::unique_ptr<Device>> sums, sent, received;
  std::vector<std::vector<double>> values(kRanks, std::vector<double>(kCount));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) values[r][i] = valueOf(r, i);
    sums.push_back(std::make_unique<Device>(kCount * 4));
    sums.back()->upload(encode(loomFloat32, values[r]));
    sent.push_back(std::make_unique<Device>(kCount * 8));
    sent.back()->upload(encode(loomFloat64, values[r]));
    received.push_back(std::make_unique<Device>(kCount * 8));
  }
  ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    loomResult_t rc = loomAllReduce(sums[r]->ptr, sums[r]->ptr, kCount, loomFloat32, loomSum, c, s);
    if (rc == loomSuccess && r < 2) {
      rc = loomSend(sent[r]->ptr, kCount, loomFloat64, 1 - r, c, s);
      if (rc == loomSuccess) rc = loomRecv(received[r]->ptr, kCount, loomFloat64, 1 - r, c, s);
    }
    return rc;
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  std::vector<double> total(kCount, 0.0);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) total[i] += values[r][i];
  }
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(sums[r]->download(0, kCount * 4), encode(loomFloat32, total)) << "rank " << r;
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(received[r]->download(0, kCount * 8), encode(loomFloat64, values[1 - r]))
        << "rank " << r;
  }
}

// A group of every kind of call on every rank (a pipeline stage's step):
// all-reduce, ring send/recv, all-gather, a partner exchange of more calls
// than a walk takes per peer (those pairs take another path) and a copy to
// itself. Whatever path each part takes, every result is right.
TEST(DeviceCollectivesGroups, CollectivesAndSendRecvOnEveryRank) {
  constexpr int kRanks = 4;
  constexpr size_t kCount = 5003;
  constexpr int kPartnerCalls = 4;  // more than a walk's FIFO allows per direction
  constexpr size_t kSmall = 33;
  Ranks ranks(kRanks);
  struct Buffers {
    std::unique_ptr<Device> sum, ringOut, ringIn, piece, gathered, partnerOut, partnerIn, selfIn;
  };
  std::vector<Buffers> b(kRanks);
  std::vector<std::vector<double>> values(kRanks, std::vector<double>(kCount));
  std::vector<std::vector<double>> smalls(kRanks, std::vector<double>(kSmall));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) values[r][i] = valueOf(r, i);
    for (size_t i = 0; i < kSmall; ++i) smalls[r][i] = valueOf(r + 5, i);
    b[r].sum = std::make_unique<Device>(kCount * 4);
    b[r].sum->upload(encode(loomFloat32, values[r]));
    b[r].ringOut = std::make_unique<Device>(kCount * 8);
    b[r].ringOut->upload(encode(loomFloat64, values[r]));
    b[r].ringIn = std::make_unique<Device>(kCount * 8);
    b[r].piece = std::make_unique<Device>(kSmall * 4);
    b[r].piece->upload(encode(loomInt32, smalls[r]));
    b[r].gathered = std::make_unique<Device>(kSmall * 4 * kRanks);
    b[r].partnerOut = std::make_unique<Device>(kSmall * 2 * kPartnerCalls);
    std::vector<double> repeated;
    for (int k = 0; k < kPartnerCalls; ++k) {
      repeated.insert(repeated.end(), smalls[r].begin(), smalls[r].end());
    }
    b[r].partnerOut->upload(encode(loomBfloat16, repeated));
    b[r].partnerIn = std::make_unique<Device>(kSmall * 2 * kPartnerCalls);
    b[r].selfIn = std::make_unique<Device>(kSmall * 4);
  }
  ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    const int next = (r + 1) % kRanks;
    const int prev = (r + kRanks - 1) % kRanks;
    const int partner = (r + 2) % kRanks;
    std::vector<std::function<loomResult_t()>> calls = {
        [&] {
          return loomAllReduce(b[r].sum->ptr, b[r].sum->ptr, kCount, loomFloat32, loomSum, c, s);
        },
        [&] { return loomRecv(b[r].ringIn->ptr, kCount, loomFloat64, prev, c, s); },
        [&] { return loomSend(b[r].ringOut->ptr, kCount, loomFloat64, next, c, s); },
        [&] { return loomAllGather(b[r].piece->ptr, b[r].gathered->ptr, kSmall, loomInt32, c, s); },
        [&] { return loomSend(b[r].piece->ptr, kSmall, loomInt32, r, c, s); },
        [&] { return loomRecv(b[r].selfIn->ptr, kSmall, loomInt32, r, c, s); },
    };
    for (int k = 0; k < kPartnerCalls; ++k) {
      calls.emplace_back([&, k] {
        return loomSend(b[r].partnerOut->at(k * kSmall * 2), kSmall, loomBfloat16, partner, c, s);
      });
      calls.emplace_back([&, k] {
        return loomRecv(b[r].partnerIn->at(k * kSmall * 2), kSmall, loomBfloat16, partner, c, s);
      });
    }
    for (const auto& call : calls) {
      if (const loomResult_t rc = call(); rc != loomSuccess) return rc;
    }
    return loomSuccess;
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  std::vector<double> total(kCount, 0.0);
  std::vector<double> allPieces;
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) total[i] += values[r][i];
    allPieces.insert(allPieces.end(), smalls[r].begin(), smalls[r].end());
  }
  for (int r = 0; r < kRanks; ++r) {
    const int prev = (r + kRanks - 1) % kRanks;
    const int partner = (r + 2) % kRanks;
    EXPECT_EQ(b[r].sum->download(0, kCount * 4), encode(loomFloat32, total)) << "rank " << r;
    EXPECT_EQ(b[r].ringIn->download(0, kCount * 8), encode(loomFloat64, values[prev]))
        << "rank " << r;
    EXPECT_EQ(b[r].gathered->download(0, kSmall * 4 * kRanks), encode(loomInt32, allPieces))
        << "rank " << r;
    EXPECT_EQ(b[r].selfIn->download(0, kSmall * 4), encode(loomInt32, smalls[r])) << "rank " << r;
    EXPECT_EQ(b[r].partnerIn->download(0, kSmall * 2 * kPartnerCalls),
              b[partner].partnerOut->download(0, kSmall * 2 * kPartnerCalls))
        << "rank " << r;
  }
}

// Send/recv groups in orders a blocking walk could deadlock on: receive
// before send around a ring, and exchanges with every other rank, each
// pair's calls in opposite orders at its two ends.
TEST(DeviceCollectivesGroups, SendRecvInAnyOrder) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 70000;  // several FIFO slots per message
  Ranks ranks(kRanks);
  std::vector<std::unique_ptr<Device>> mine, got;
  std::vector<std::vector<double>> values(kRanks, std::vector<double>(kCount));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) values[r][i] = valueOf(r, i);
    mine.push_back(std::make_unique<Device>(kCount * 4));
    mine.back()->upload(encode(loomFloat32, values[r]));
    got.push_back(std::make_unique<Device>(kCount * 4 * kRanks));
  }
  // Ring, receive first.
  ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    loomResult_t rc = loomRecv(got[r]->ptr, kCount, loomFloat32, (r + kRanks - 1) % kRanks, c, s);
    if (rc == loomSuccess) rc = loomSend(mine[r]->ptr, kCount, loomFloat32, (r + 1) % kRanks, c, s);
    return rc;
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(got[r]->download(0, kCount * 4),
              encode(loomFloat32, values[(r + kRanks - 1) % kRanks]))
        << "ring, rank " << r;
  }
  // Everyone with everyone: for k = 1, 2 a send to r + k and a receive from
  // r + k (whose matching calls come in the other order there).
  ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    loomResult_t rc = loomSuccess;
    for (int k = 1; k < kRanks && rc == loomSuccess; ++k) {
      const int peer = (r + k) % kRanks;
      rc = loomSend(mine[r]->ptr, kCount, loomFloat32, peer, c, s);
      if (rc == loomSuccess) {
        rc = loomRecv(got[r]->at(peer * kCount * 4), kCount, loomFloat32, peer, c, s);
      }
    }
    return rc;
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r) {
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == r) continue;
      EXPECT_EQ(got[r]->download(peer * kCount * 4, kCount * 4), encode(loomFloat32, values[peer]))
          << "all pairs, rank " << r << " from " << peer;
    }
  }
}

// Calls whose sizes match in total but not one by one are an error, never
// data moved into the wrong buffer.
TEST(DeviceCollectivesGroups, SendRecvSizesThatDisagreeAreAnError) {
  Ranks ranks(2);
  Device a(300 * 4), b(300 * 4), x(300 * 4), y(300 * 4);
  const loomResult_t rc = ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    if (r == 0) {
      loomResult_t first = loomSend(a.ptr, 100, loomFloat32, 1, c, s);
      if (first == loomSuccess) first = loomSend(b.ptr, 300, loomFloat32, 1, c, s);
      return first;
    }
    loomResult_t first = loomRecv(x.ptr, 300, loomFloat32, 0, c, s);
    if (first == loomSuccess) first = loomRecv(y.ptr, 100, loomFloat32, 0, c, s);
    return first;
  });
  EXPECT_NE(rc, loomSuccess);
}

std::string shapeName(const testing::TestParamInfo<Shape>& info) {
  std::string name =
      "n";  // appended, not concatenated: GCC 12 misreads "x" + to_string (-Wrestrict)
  name += std::to_string(info.param.nranks);
  name += "_count";
  name += std::to_string(info.param.count);
  return name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DeviceCollectives,
                         testing::Values(Shape{2, 0}, Shape{2, 1}, Shape{2, 1031}, Shape{4, 1031},
                                         Shape{8, 1}, Shape{8, 4097}),
                         shapeName);

// One large all-reduce (256 MiB of fp32 per rank, 2 ranks): the staged path
// moves it through host memory and back.
TEST(DeviceCollectivesLarge, AllReduce256MiB) {
  const size_t count = size_t{64} << 20;
  Ranks ranks(2);
  std::vector<std::unique_ptr<Device>> bufs;
  for (int r = 0; r < 2; ++r) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(valueOf(r, i));
    bufs.push_back(std::make_unique<Device>(count * 4));
    ASSERT_EQ(copyToDevice(bufs.back()->ptr, v.data(), count * 4), cudaSuccess);
  }
  ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    return loomAllReduce(bufs[r]->ptr, bufs[r]->ptr, count, loomFloat32, loomSum, c, s);
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  std::vector<float> got(count);
  ASSERT_EQ(cudaMemcpy(got.data(), bufs[1]->ptr, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (got[i] != static_cast<float>(valueOf(0, i) + valueOf(1, i))) ++wrong;
  }
  EXPECT_EQ(wrong, 0u);
}

// Compressed all-reduce (int8, top-k) on device buffers gives the same bits as
// the same call on host buffers with the same inputs, on every rank.
TEST(DeviceCollectivesCompressed, EqualTheHostResultBitForBit) {
  constexpr int kRanks = 4;
  constexpr size_t kCount = 4099;
  Ranks ranks(kRanks);
  std::vector<std::vector<float>> inputs(kRanks, std::vector<float>(kCount));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) {
      inputs[r][i] = static_cast<float>(valueOf(r, i)) * 0.37f - static_cast<float>(i % 13) * 0.11f;
    }
  }
  loomCompression int8{};
  int8.kind = loomCompressInt8;
  loomCompression topk{};
  topk.kind = loomCompressTopK;
  topk.ratio = 0.1;
  for (const loomCompression& c : {int8, topk}) {
    SCOPED_TRACE(testing::Message() << "codec " << static_cast<int>(c.kind));
    std::vector<std::vector<float>> host = inputs;
    std::vector<std::vector<float>> hostOut(kRanks, std::vector<float>(kCount));
    ASSERT_EQ(ranks.group([&](int r, loomComm_t comm, cudaStream_t) {
      return loomAllReduceEx(host[r].data(), hostOut[r].data(), kCount, loomFloat32, loomSum, &c,
                             comm, nullptr);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    std::vector<std::unique_ptr<Device>> send, recv;
    for (int r = 0; r < kRanks; ++r) {
      send.push_back(std::make_unique<Device>(kCount * 4));
      recv.push_back(std::make_unique<Device>(kCount * 4));
      ASSERT_EQ(copyToDevice(send[r]->ptr, inputs[r].data(), kCount * 4), cudaSuccess);
    }
    ASSERT_EQ(ranks.group([&](int r, loomComm_t comm, cudaStream_t s) {
      return loomAllReduceEx(send[r]->ptr, recv[r]->ptr, kCount, loomFloat32, loomSum, &c, comm, s);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> got(kCount);
      ASSERT_EQ(cudaMemcpy(got.data(), recv[r]->ptr, kCount * 4, cudaMemcpyDeviceToHost),
                cudaSuccess);
      EXPECT_EQ(std::memcmp(got.data(), hostOut[r].data(), kCount * 4), 0) << "rank " << r;
      EXPECT_EQ(std::memcmp(hostOut[r].data(), hostOut[0].data(), kCount * 4), 0) << "rank " << r;
    }
  }
}

/// The compressions the device tests run: int8 (block 64) by two-shot and by
/// the ring (the codec fused into the ring's steps), int8 with blocks of 4096
/// by the ring (fused with the default FIFO slots; hop by hop, codec kernels
/// between the walks, when LOOM_CUDA_SLOT_BYTES is 4K), top-k by the default
/// algorithm (sparse all-gather for an all-reduce on 3 ranks), by two-shot
/// and by the ring (hop by hop).
std::vector<loomCompression> deviceCodecs() {
  loomCompression int8{};
  int8.kind = loomCompressInt8;
  int8.block = 64;
  int8.seed = 11;
  loomCompression int8Ring = int8;
  int8Ring.algorithm = loomCompressAlgoRing;
  loomCompression int8WideRing = int8Ring;
  int8WideRing.block = 4096;
  loomCompression topk{};
  topk.kind = loomCompressTopK;
  topk.ratio = 0.3;
  loomCompression topkTwoShot = topk;
  topkTwoShot.algorithm = loomCompressAlgoTwoShot;
  loomCompression topkRing = topk;
  topkRing.algorithm = loomCompressAlgoRing;
  return {int8, int8Ring, int8WideRing, topk, topkTwoShot, topkRing};
}

// Every codec on every collective it compresses, on device buffers against
// the same calls on host buffers: fp32, fp16 and bf16, sum and avg, nearest
// and stochastic rounding (int8), sizes 0, 1, odd and several blocks,
// all-reduce in and out of place, and a group where compressed calls sit
// between plain ones. The two sets of communicators make the same calls in
// the same order, so their stochastic-rounding counters agree; 3 ranks cut
// tensors unevenly.
TEST(DeviceCollectivesCompressed, EveryCodecOnEveryCollectiveEqualsTheHost) {
  constexpr int kRanks = 3;
  Ranks onHost(kRanks);
  Ranks onDevice(kRanks);
  struct Case {
    const char* collective;
    loomDataType_t type;
    loomRedOp_t op;
    size_t count;
    bool stochastic;
    bool inPlace;
    loomCompression codec;
  };
  std::vector<Case> cases;
  for (const loomCompression& codec : deviceCodecs()) {
    for (const char* collective : {"allreduce", "reducescatter", "allgather"}) {
      for (loomDataType_t type : {loomFloat32, loomFloat16, loomBfloat16}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1027}}) {
          const bool reduces = std::string(collective) != "allgather";
          cases.push_back({collective, type, loomSum, count, false, false, codec});
          if (reduces) cases.push_back({collective, type, loomAvg, count, true, false, codec});
        }
      }
    }
    cases.push_back({"allreduce", loomFloat32, loomSum, 4099, true, true, codec});
    cases.push_back({"group", loomFloat32, loomSum, 517, false, false, codec});
  }
  for (const Case& k : cases) {
    SCOPED_TRACE(testing::Message()
                 << k.collective << " codec " << k.codec.kind << " algorithm " << k.codec.algorithm
                 << " type " << k.type << " op " << k.op << " count " << k.count
                 << (k.stochastic ? " stochastic" : "") << (k.inPlace ? " in place" : ""));
    const std::string what = k.collective;
    const size_t es = loomTypeSize(k.type);
    const size_t inCount = what == "reducescatter" ? k.count * kRanks : k.count;
    const size_t outCount = what == "allgather" ? k.count * kRanks : k.count;
    loomCompression int8 = k.codec;
    int8.stochastic = k.stochastic && k.codec.kind == loomCompressInt8 ? 1 : 0;
    std::vector<std::vector<unsigned char>> inputs(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      std::vector<double> values(inCount);
      for (size_t i = 0; i < inCount; ++i) {
        values[i] = valueOf(r, i) * 0.37 - static_cast<double>(i % 13) * 0.11;
      }
      inputs[r] = encode(k.type, values);
    }
    // One call per rank (the group case: plain, compressed, plain all-reduces).
    auto call = [&](const void* send, void* recv, void* extra, loomComm_t c, void* s) {
      if (what == "allreduce") {
        return loomAllReduceEx(send, recv, k.count, k.type, k.op, &int8, c, s);
      }
      if (what == "reducescatter") {
        return loomReduceScatterEx(send, recv, k.count, k.type, k.op, &int8, c, s);
      }
      if (what == "allgather") return loomAllGatherEx(send, recv, k.count, k.type, &int8, c, s);
      loomResult_t rc = loomAllReduce(extra, extra, k.count, k.type, loomSum, c, s);
      if (rc == loomSuccess) rc = loomAllReduceEx(send, recv, k.count, k.type, k.op, &int8, c, s);
      if (rc == loomSuccess) rc = loomAllReduce(extra, extra, k.count, k.type, loomMax, c, s);
      return rc;
    };
    std::vector<std::vector<unsigned char>> hostIn = inputs;
    std::vector<std::vector<unsigned char>> hostOut(kRanks,
                                                    std::vector<unsigned char>(outCount * es));
    // Plain sums of small integers: exact in any order, so any algorithm matches.
    std::vector<std::vector<unsigned char>> plain(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      std::vector<double> values(inCount);
      for (size_t i = 0; i < inCount; ++i) values[i] = valueOf(r, i);
      plain[r] = encode(k.type, values);
    }
    std::vector<std::vector<unsigned char>> hostExtra = plain;
    ASSERT_EQ(onHost.group([&](int r, loomComm_t c, cudaStream_t) {
      void* out = k.inPlace ? hostIn[r].data() : hostOut[r].data();
      return call(hostIn[r].data(), out, hostExtra[r].data(), c, nullptr);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    std::vector<std::unique_ptr<Device>> in, out, extra;
    for (int r = 0; r < kRanks; ++r) {
      in.push_back(std::make_unique<Device>(inCount * es));
      in.back()->upload(inputs[r]);
      out.push_back(std::make_unique<Device>(outCount * es));
      extra.push_back(std::make_unique<Device>(inCount * es));
      extra.back()->upload(plain[r]);
    }
    ASSERT_EQ(onDevice.group([&](int r, loomComm_t c, cudaStream_t s) {
      void* result = k.inPlace ? in[r]->ptr : out[r]->ptr;
      return call(in[r]->ptr, result, extra[r]->ptr, c, s);
    }),
              loomSuccess)
        << loomGetLastError(nullptr);
    for (int r = 0; r < kRanks; ++r) {
      const Device& result = k.inPlace ? *in[r] : *out[r];
      const std::vector<unsigned char>& want = k.inPlace ? hostIn[r] : hostOut[r];
      EXPECT_EQ(result.download(0, outCount * es), want) << "rank " << r;
      if (what == "group") {
        EXPECT_EQ(extra[r]->download(0, inCount * es), hostExtra[r]) << "rank " << r;
      }
    }
    // The compressed result is a real reduction, not a copy: the all-reduce
    // of ranks' inputs is near their sum (int8 error is a fraction of a percent).
    if (what == "allreduce" && k.count > 0 && k.type == loomFloat32 && k.op == loomSum &&
        k.codec.kind == loomCompressInt8) {
      float first = 0;
      std::memcpy(&first, (k.inPlace ? hostIn : hostOut)[0].data(), 4);
      double sum = 0;
      for (int r = 0; r < kRanks; ++r) sum += valueOf(r, 0) * 0.37;
      EXPECT_NEAR(first, sum, 0.05 * sum);
    }
  }
}

// Pinned host buffers run on the host executor, but in stream order: a copy
// the caller queued into the send buffer on the same stream lands first.
TEST(DeviceCollectivesPinned, WaitForTheCallersStream) {
  constexpr int kRanks = 2;
  const size_t count = size_t{16} << 20;  // 64 MiB: the copy takes long enough to race
  Ranks ranks(kRanks);
  std::vector<std::unique_ptr<Device>> source;
  std::vector<float*> send(kRanks), recv(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(valueOf(r, i));
    source.push_back(std::make_unique<Device>(count * 4));
    ASSERT_EQ(copyToDevice(source[r]->ptr, v.data(), count * 4), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&send[r]), count * 4), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&recv[r]), count * 4), cudaSuccess);
    std::memset(send[r], 0, count * 4);
  }
  ASSERT_EQ(ranks.group([&](int r, loomComm_t c, cudaStream_t s) {
    if (cudaMemcpyAsync(send[r], source[r]->ptr, count * 4, cudaMemcpyDeviceToHost, s) !=
        cudaSuccess) {
      return loomInternalError;
    }
    return loomAllReduce(send[r], recv[r], count, loomFloat32, loomSum, c, s);
  }),
            loomSuccess)
      << loomGetLastError(nullptr);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (recv[1][i] != static_cast<float>(valueOf(0, i) + valueOf(1, i))) ++wrong;
  }
  EXPECT_EQ(wrong, 0u);
  for (int r = 0; r < kRanks; ++r) {
    cudaFreeHost(send[r]);
    cudaFreeHost(recv[r]);
  }
}

// Host and device buffers in one call are refused before anything moves.
TEST(DeviceCollectivesRules, HostAndDeviceInOneCallIsInvalid) {
  Ranks ranks(1);
  Device d(64);
  std::vector<float> host(16, 1.0f);
  EXPECT_EQ(ranks.group([&](int, loomComm_t c, cudaStream_t s) {
    return loomAllReduce(d.ptr, host.data(), 16, loomFloat32, loomSum, c, s);
  }),
            loomInvalidArgument);
  EXPECT_EQ(host, std::vector<float>(16, 1.0f));
}

}  // namespace
// Error feedback (int8, top-k by sparse all-gather and by two-shot) on
// device buffers against the same calls on host buffers, step after step:
// outputs and residuals (loomErrorFeedbackGet) bit for bit, for all-reduce
// and reduce-scatter, fp32/fp16/bf16, sizes 1, 7 and 1027. One feedback per rank and side carries
// across the steps, and the device side's moves between homes: steps on device buffers (the
// residual kept in device memory), one on host buffers (pulled back first), a reset, and device
// buffers again (uploaded). Step 1 holds an inf, which must leave a zero residual, not a poisoned
// one.
TEST(DeviceCollectivesCompressed, ErrorFeedbackEqualsTheHostStepByStep) {
  constexpr int kRanks = 3;
  constexpr int kSteps = 5;
  Ranks onHost(kRanks);
  Ranks onDevice(kRanks);
  for (const loomCompression& codec : deviceCodecs()) {
    for (const char* collective : {"allreduce", "reducescatter"}) {
      for (loomDataType_t type : {loomFloat32, loomFloat16, loomBfloat16}) {
        for (size_t count : {size_t{1}, size_t{7}, size_t{1027}}) {
          SCOPED_TRACE(testing::Message()
                       << collective << " codec " << codec.kind << " algorithm " << codec.algorithm
                       << " type " << type << " count " << count);
          const bool allReduce = std::string(collective) == "allreduce";
          const size_t es = loomTypeSize(type);
          const size_t inCount = allReduce ? count : count * kRanks;
          std::vector<loomErrorFeedback_t> hostFeedback(kRanks), deviceFeedback(kRanks);
          for (int r = 0; r < kRanks; ++r) {
            ASSERT_EQ(loomErrorFeedbackCreate(&hostFeedback[r], inCount), loomSuccess);
            ASSERT_EQ(loomErrorFeedbackCreate(&deviceFeedback[r], inCount), loomSuccess);
          }
          bool residualMoved = false;
          for (int step = 0; step < kSteps; ++step) {
            SCOPED_TRACE(testing::Message() << "step " << step);
            if (step == 3) {
              for (int r = 0; r < kRanks; ++r) {
                ASSERT_EQ(loomErrorFeedbackReset(hostFeedback[r]), loomSuccess);
                ASSERT_EQ(loomErrorFeedbackReset(deviceFeedback[r]), loomSuccess);
              }
            }
            std::vector<std::vector<unsigned char>> inputs(kRanks);
            for (int r = 0; r < kRanks; ++r) {
              std::vector<double> values(inCount);
              for (size_t i = 0; i < inCount; ++i) {
                values[i] =
                    valueOf(r, i) * (0.31 + 0.07 * step) - static_cast<double>(i % 11) * 0.13;
              }
              if (step == 1 && r == 2)
                values[inCount / 2] = std::numeric_limits<double>::infinity();
              inputs[r] = encode(type, values);
            }
            auto call = [&](const void* send, void* recv, loomErrorFeedback_t feedback,
                            loomComm_t c, void* s) {
              loomCompression compression = codec;
              compression.stochastic = codec.kind == loomCompressInt8 ? step % 2 : 0;
              compression.feedback = feedback;
              return allReduce
                         ? loomAllReduceEx(send, recv, count, type, loomSum, &compression, c, s)
                         : loomReduceScatterEx(send, recv, count, type, loomAvg, &compression, c,
                                               s);
            };
            std::vector<std::vector<unsigned char>> hostOut(kRanks,
                                                            std::vector<unsigned char>(count * es));
            ASSERT_EQ(onHost.group([&](int r, loomComm_t c, cudaStream_t) {
              return call(inputs[r].data(), hostOut[r].data(), hostFeedback[r], c, nullptr);
            }),
                      loomSuccess)
                << loomGetLastError(nullptr);
            std::vector<std::vector<unsigned char>> got(kRanks);
            if (step == 2) {
              // Host buffers on the device side's communicators and feedback.
              std::vector<std::vector<unsigned char>> in = inputs;
              for (auto& g : got) g.resize(count * es);
              ASSERT_EQ(onDevice.group([&](int r, loomComm_t c, cudaStream_t) {
                return call(in[r].data(), got[r].data(), deviceFeedback[r], c, nullptr);
              }),
                        loomSuccess)
                  << loomGetLastError(nullptr);
            } else {
              std::vector<std::unique_ptr<Device>> in, out;
              for (int r = 0; r < kRanks; ++r) {
                in.push_back(std::make_unique<Device>(inCount * es));
                in.back()->upload(inputs[r]);
                out.push_back(std::make_unique<Device>(count * es));
              }
              ASSERT_EQ(onDevice.group([&](int r, loomComm_t c, cudaStream_t s) {
                return call(in[r]->ptr, out[r]->ptr, deviceFeedback[r], c, s);
              }),
                        loomSuccess)
                  << loomGetLastError(nullptr);
              for (int r = 0; r < kRanks; ++r) got[r] = out[r]->download(0, count * es);
            }
            for (int r = 0; r < kRanks; ++r) {
              EXPECT_EQ(got[r], hostOut[r]) << "rank " << r;
              std::vector<float> want(inCount), have(inCount);
              ASSERT_EQ(loomErrorFeedbackGet(hostFeedback[r], want.data(), inCount), loomSuccess);
              ASSERT_EQ(loomErrorFeedbackGet(deviceFeedback[r], have.data(), inCount), loomSuccess);
              EXPECT_EQ(std::memcmp(have.data(), want.data(), inCount * 4), 0) << "rank " << r;
              for (float v : have) {
                EXPECT_TRUE(std::isfinite(v)) << "rank " << r;
                residualMoved = residualMoved || v != 0.0f;
              }
            }
          }
          // Feedback did something: neither codec carries these values exactly.
          EXPECT_TRUE(residualMoved || count == 1);
          for (int r = 0; r < kRanks; ++r) {
            loomErrorFeedbackDestroy(hostFeedback[r]);
            loomErrorFeedbackDestroy(deviceFeedback[r]);
          }
        }
      }
    }
  }
}

}  // namespace loom::gpu_test
