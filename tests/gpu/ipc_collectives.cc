// Two processes on one GPU, or one GPU each where there are several (started
// by `loomrun -n 2`): every collective on device buffers, every element type,
// the reduce ops whose results are exact for small integers (sum, max, min,
// avg), in and out of place, at counts 0, 1 and 1031 (and 2^20 and one 256 MiB
// all-reduce in float32), checked against values computed on the host. With
// LOOM_CUDA_PATH=kernel the ranks' kernels exchange data through FIFOs mapped
// with CUDA IPC handles; staged, through host memory. Exits 77 (skipped)
// without a device, 1 on a wrong value or error, 0 when all match.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/gpu/typed_values.h"
#include "tools/stack_dump/stack_dump.h"

namespace {

using loom::gpu_test::encode;
using loom::gpu_test::kTypes;
using loom::gpu_test::reduce;
using loom::gpu_test::valueOf;
using Bytes = std::vector<unsigned char>;

/// A call that failed: the message is printed and counted as a failure.
struct Failed {
  std::string what;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Failed{std::string(what) + ": " + cudaGetErrorString(e)};
}

void check(loomResult_t r, const std::string& what) {
  if (r != loomSuccess) throw Failed{what + ": " + loomGetLastError(nullptr)};
}

/// Device memory of one rank, filled and read on that rank's stream.
class DeviceBytes {
 public:
  DeviceBytes(size_t bytes, cudaStream_t stream) : bytes_(bytes), stream_(stream) {
    check(cudaMalloc(&ptr_, bytes + 1), "cudaMalloc");
  }
  ~DeviceBytes() { cudaFree(ptr_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  char* at(size_t offset) const { return static_cast<char*>(ptr_) + offset; }
  /// On the stream the collectives use: a cudaMemcpy from pageable memory may
  /// return before its DMA lands, and a non-blocking stream does not wait for
  /// it (the staged path read stale input that way on an H200).
  void upload(const Bytes& host, size_t offset = 0) const {
    check(cudaMemcpyAsync(at(offset), host.data(), host.size(), cudaMemcpyHostToDevice, stream_),
          "upload");
  }
  Bytes download(size_t offset, size_t n) const {
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    Bytes out(n);
    check(cudaMemcpy(out.data(), at(offset), n, cudaMemcpyDeviceToHost), "download");
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
  cudaStream_t stream_;
};

struct Rank {
  loomComm_t comm;
  int rank;
  int n;
  cudaStream_t stream;
};

/// Rank r's `elements` inputs, encoded as `t`.
Bytes inputOf(loomDataType_t t, int r, size_t elements) {
  std::vector<double> v(elements);
  for (size_t i = 0; i < elements; ++i) v[i] = valueOf(r, i);
  return encode(t, v);
}

class Checker {
 public:
  explicit Checker(const Rank& me) : me_(me) {}
  int wrong() const { return wrong_; }

  void expect(const std::string& what, const Bytes& got, const Bytes& want) {
    if (got == want) return;
    size_t at = 0;
    while (at < got.size() && got[at] == want[at]) ++at;
    std::fprintf(stderr, "rank %d: %s: byte %zu of %zu differs\n", me_.rank, what.c_str(), at,
                 want.size());
    ++wrong_;
  }

  /// Every collective of type `t` at `count` elements per rank (per block).
  void collectives(loomDataType_t t, size_t count) {
    const size_t es = loomTypeSize(t);
    const std::string shape = "type " + std::to_string(t) + " count " + std::to_string(count);
    for (loomRedOp_t op : {loomSum, loomMax, loomMin, loomAvg}) {
      const std::string what = shape + " op " + std::to_string(op);
      for (bool inPlace : {false, true}) reductions(t, op, count, es, what, inPlace);
    }
    for (bool inPlace : {false, true}) dataMovement(t, count, es, shape, inPlace);
  }

  /// One large float32 all-reduce (2^26 elements, 256 MiB), in place.
  void large() {
    const size_t count = size_t{1} << 26;
    DeviceBytes buffer(count * 4, me_.stream);
    buffer.upload(inputOf(loomFloat32, me_.rank, count));
    check(loomAllReduce(buffer.at(0), buffer.at(0), count, loomFloat32, loomSum, me_.comm,
                        me_.stream),
          "256 MiB all-reduce");
    expect("256 MiB all-reduce", buffer.download(0, count * 4),
           reduced(loomFloat32, loomSum, count, 0));
  }

 private:
  /// op over the ranks of element `first + i` for i < count, encoded as `t`.
  Bytes reduced(loomDataType_t t, loomRedOp_t op, size_t count, size_t first) const {
    std::vector<double> want(count);
    for (size_t i = 0; i < count; ++i) {
      std::vector<double> xs(static_cast<size_t>(me_.n));
      for (int p = 0; p < me_.n; ++p) xs[static_cast<size_t>(p)] = valueOf(p, first + i);
      want[i] = reduce(op, xs);
    }
    return encode(t, want);
  }

  void reductions(loomDataType_t t, loomRedOp_t op, size_t count, size_t es,
                  const std::string& what, bool inPlace) {
    const std::string how = what + (inPlace ? " in place" : " out of place");
    const size_t block = count * es;
    const Bytes want = reduced(t, op, count, 0);
    {
      DeviceBytes send(block, me_.stream);
      DeviceBytes recv(block, me_.stream);
      const DeviceBytes& out = inPlace ? send : recv;
      send.upload(inputOf(t, me_.rank, count));
      check(loomAllReduce(send.at(0), out.at(0), count, t, op, me_.comm, me_.stream), how);
      expect("all-reduce " + how, out.download(0, block), want);

      send.upload(inputOf(t, me_.rank, count));
      const int root = 1;
      check(loomReduce(send.at(0), out.at(0), count, t, op, root, me_.comm, me_.stream), how);
      if (me_.rank == root) expect("reduce " + how, out.download(0, block), want);
    }
    // Reduce-scatter: rank r gets block r of the reduction of n-block
    // inputs; in place, its result lands in its own block of the input.
    DeviceBytes wide(block * me_.n, me_.stream);
    DeviceBytes part(block, me_.stream);
    wide.upload(inputOf(t, me_.rank, count * me_.n));
    const char* result = inPlace ? wide.at(block * me_.rank) : part.at(0);
    check(loomReduceScatter(wide.at(0), const_cast<char*>(result), count, t, op, me_.comm,
                            me_.stream),
          how);
    const DeviceBytes& holder = inPlace ? wide : part;
    expect("reduce-scatter " + how, holder.download(inPlace ? block * me_.rank : 0, block),
           reduced(t, op, count, count * me_.rank));
  }

  void dataMovement(loomDataType_t t, size_t count, size_t es, const std::string& what,
                    bool inPlace) {
    const std::string how = what + (inPlace ? " in place" : " out of place");
    const size_t block = count * es;
    const int n = me_.n;
    Bytes gathered;
    for (int p = 0; p < n; ++p) {
      const Bytes b = inputOf(t, p, count);
      gathered.insert(gathered.end(), b.begin(), b.end());
    }
    DeviceBytes send(block * n, me_.stream);
    DeviceBytes recv(block * n, me_.stream);
    // All-gather; in place, each rank's input is its own block of the output.
    if (inPlace) {
      recv.upload(inputOf(t, me_.rank, count), block * me_.rank);
    } else {
      send.upload(inputOf(t, me_.rank, count));
    }
    check(loomAllGather(inPlace ? recv.at(block * me_.rank) : send.at(0), recv.at(0), count, t,
                        me_.comm, me_.stream),
          how);
    expect("all-gather " + how, recv.download(0, block * n), gathered);

    // Broadcast from rank 1.
    const DeviceBytes& out = inPlace ? send : recv;
    send.upload(inputOf(t, me_.rank, count));
    check(loomBroadcast(send.at(0), out.at(0), count, t, 1, me_.comm, me_.stream), how);
    expect("broadcast " + how, out.download(0, block), inputOf(t, 1, count));
    if (inPlace) return;  // all-to-all and send/recv take separate buffers

    // All-to-all: block p of rank r's output is block r of rank p's input.
    send.upload(inputOf(t, me_.rank, count * n));
    check(loomAllToAll(send.at(0), recv.at(0), count, t, me_.comm, me_.stream), how);
    Bytes exchanged;
    for (int p = 0; p < n; ++p) {
      const Bytes all = inputOf(t, p, count * n);
      exchanged.insert(exchanged.end(), all.begin() + static_cast<long>(block * me_.rank),
                       all.begin() + static_cast<long>(block * (me_.rank + 1)));
    }
    expect("all-to-all " + how, recv.download(0, block * n), exchanged);

    // Send/recv in one group around the ring: rank r gets rank r-1's values.
    const int next = (me_.rank + 1) % n;
    const int prev = (me_.rank + n - 1) % n;
    send.upload(inputOf(t, me_.rank, count));
    check(loomGroupStart(), "loomGroupStart");
    check(loomSend(send.at(0), count, t, next, me_.comm, me_.stream), how);
    check(loomRecv(recv.at(0), count, t, prev, me_.comm, me_.stream), how);
    check(loomGroupEnd(), how);
    expect("send/recv " + how, recv.download(0, block), inputOf(t, prev, count));
  }

  const Rank& me_;
  int wrong_ = 0;
};

}  // namespace

int main() {
  loom::debug::dumpStacksOnSigquit();  // scripts/run-with-stacks.sh, on a stall
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping the two-process device test\n");
    return 77;
  }
  // One GPU each where there are several (peer access or the proxy between
  // them), both on one GPU otherwise; chosen before the communicator is made,
  // which runs its device collectives on the current device (as NCCL).
  const char* rankText = std::getenv("LOOM_LOCAL_RANK");
  if (cudaSetDevice((rankText != nullptr ? std::atoi(rankText) : 0) % devices) != cudaSuccess) {
    std::fprintf(stderr, "cudaSetDevice failed\n");
    return 1;
  }
  Rank me{};
  if (loomCommInitFromEnv(&me.comm) != loomSuccess) {
    std::fprintf(stderr, "loomCommInitFromEnv: %s\n", loomGetLastError(nullptr));
    return 1;
  }
  int failures = 0;
  try {
    check(loomCommUserRank(me.comm, &me.rank), "loomCommUserRank");
    check(loomCommCount(me.comm, &me.n), "loomCommCount");
    check(cudaStreamCreateWithFlags(&me.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    Checker checker(me);
    for (loomDataType_t t : kTypes) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1031}}) checker.collectives(t, count);
    }
    checker.collectives(loomFloat32, size_t{1} << 20);
    checker.large();
    failures = checker.wrong();
    cudaStreamDestroy(me.stream);
  } catch (const Failed& f) {
    std::fprintf(stderr, "rank %d: %s\n", me.rank, f.what.c_str());
    failures = 1;
  }
  if (loomCommDestroy(me.comm) != loomSuccess) failures = 1;
  if (failures != 0) {
    std::fprintf(stderr, "rank %d: %d checks failed\n", me.rank, failures);
    return 1;
  }
  std::printf("rank %d: all values match\n", me.rank);
  return 0;
}
