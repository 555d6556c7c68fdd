// Two ranks in one process all-reduce through the installed headers and library.
#include <cstdio>
#include <loom/loom.hpp>
#include <thread>
#include <vector>

int main() {
  std::vector<loom::Comm> comms = loom::Comm::initAll(2);
  std::vector<std::vector<int32_t>> data(2, std::vector<int32_t>(1000));
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < data[r].size(); ++i) data[r][i] = static_cast<int32_t>(i) * (r + 1);
    threads.emplace_back([&, r] { comms[r].allReduce(std::span<int32_t>(data[r])); });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < data[r].size(); ++i) {
      if (data[r][i] != static_cast<int32_t>(i) * 3) {
        std::printf("rank %d element %zu: got %d, expected %d\n", r, i, data[r][i],
                    static_cast<int32_t>(i) * 3);
        return 1;
      }
    }
  }
  // The same through loomMemAlloc's memory, registered with each communicator.
  std::vector<loom::SharedArray<float>> shared;
  for (int r = 0; r < 2; ++r) shared.emplace_back(size_t{1} << 18);
  threads.clear();
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const loom::Registration registered = comms[r].registerBuffer(shared[r].span());
      for (size_t i = 0; i < shared[r].size(); ++i) shared[r][i] = static_cast<float>(r + 1);
      comms[r].allReduce(shared[r].span());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    if (shared[r][0] != 3.0f || shared[r][shared[r].size() - 1] != 3.0f) {
      std::printf("rank %d: shared buffer not reduced\n", r);
      return 1;
    }
  }
  int version = 0;
  loom::check(loomGetVersion(&version));
  std::printf("consumer ok: loom %d\n", version);
  return 0;
}
