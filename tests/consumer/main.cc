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
  int version = 0;
  loom::check(loomGetVersion(&version));
  std::printf("consumer ok: loom %d\n", version);
  return 0;
}
