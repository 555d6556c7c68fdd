// loom_soak: a long run of randomly mixed collectives, every result checked.
//   loomrun -n 4 loom_soak --ops 100000          (one process per rank)
//   loom_soak -t 3 --ops 3000 --seed 7           (3 ranks as threads)
// Every rank draws the same operation sequence from --seed; the first wrong
// element or Loom error stops the run with exit status 1, and so does resident
// memory growing past the bound after warm-up (see docs/reliability.md).
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "op_gen.h"
#include "rss.h"
#include "runner.h"
#include "types.h"
#include "values.h"

namespace {

struct Options {
  uint64_t ops = 100000;
  uint64_t seed = 1;
  size_t maxBytes = 1 << 20;
  int threads = 4;
  double rssSlackMiB = 16;
  uint64_t injectError = UINT64_MAX;
};

constexpr double kMiB = 1024.0 * 1024.0;

// A launcher loomCommInitFromEnv understands has set one of these.
bool underLauncher() {
  for (const char* name :
       {"LOOM_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "loom_soak: %s\n", message.c_str());
  std::fflush(stdout);
  std::_Exit(1);
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Warm-up fills the plan caches and the allocator's pools; RSS is measured
// from its end. Short runs keep two thirds of their ops for the measurement.
uint64_t warmupOps(uint64_t ops) { return std::min<uint64_t>(1000, ops / 3); }

// Allowed growth of resident memory after warm-up. The soak's own buffers are
// allocated and touched before the start; Loom's plan cache is bounded (1024
// plans per comm, each a few KiB of steps) and fills during warm-up. What
// remains is allocator noise, so a fixed slack plus 1% of the starting size;
// at 100,000 ops this catches any leak of more than ~170 bytes per op.
int64_t rssBound(int64_t start, double slackMiB) {
  return static_cast<int64_t>(slackMiB * kMiB) + start / 100;
}

// Runs the whole sequence on one rank; returns the process exit status.
int soakRank(loomComm_t comm, const Options& o) {
  int rank = 0, nranks = 0;
  if (loomCommUserRank(comm, &rank) != loomSuccess || loomCommCount(comm, &nranks) != loomSuccess) {
    die("cannot query the communicator");
  }
  if (nranks > soak::kMaxRanks) {
    die("at most " + std::to_string(soak::kMaxRanks) +
        " ranks: the value ranges that keep every result exact need it");
  }
  soak::Runner runner(comm, rank, nranks, o.maxBytes);
  runner.injectErrorAt(o.injectError);
  soak::Rng rng(o.seed);
  const uint64_t warmup = warmupOps(o.ops);
  std::vector<uint64_t> perColl(static_cast<size_t>(soak::Coll::kCount));
  uint64_t bytes = 0;
  int64_t rssStart = soak::residentBytes();
  const auto t0 = std::chrono::steady_clock::now();
  auto tWarm = t0;
  uint64_t nextReport = 1;
  for (uint64_t i = 0; i < o.ops; ++i) {
    const soak::SoakOp op = soak::drawOp(rng, i, o.seed, nranks, o.maxBytes);
    runner.run(op);
    bytes += soak::opBytes(op, nranks);
    ++perColl[static_cast<size_t>(op.coll)];
    if (i + 1 == warmup) {
      rssStart = soak::residentBytes();
      tWarm = std::chrono::steady_clock::now();
    }
    if (rank == 0 && (i + 1) * 10 >= nextReport * o.ops) {
      const double s = secondsSince(t0);
      std::printf(
          "loom_soak: %3llu%% %llu/%llu ops, %.1f s, %.0f ops/s, %.2f GB moved, RSS %.1f MiB\n",
          static_cast<unsigned long long>(nextReport) * 10, static_cast<unsigned long long>(i) + 1,
          static_cast<unsigned long long>(o.ops), s, static_cast<double>(i + 1) / s,
          static_cast<double>(bytes) / 1e9, static_cast<double>(soak::residentBytes()) / kMiB);
      std::fflush(stdout);
      while ((i + 1) * 10 >= nextReport * o.ops) ++nextReport;
    }
  }
  const double total = secondsSince(t0);
  const double steady = secondsSince(tWarm);
  const int64_t rssEnd = soak::residentBytes();

  // Every rank learns every rank's RSS, so all of them agree on pass or fail.
  std::vector<int64_t> rss(2 * static_cast<size_t>(nranks));
  const int64_t mine[2] = {rssStart, rssEnd};
  if (loomAllGather(mine, rss.data(), 2, loomInt64, comm, nullptr) != loomSuccess) {
    die(std::string("RSS exchange failed: ") + loomGetLastError(comm));
  }
  bool grew = false;
  for (int r = 0; r < nranks; ++r) {
    const int64_t start = rss[2 * r], end = rss[2 * r + 1];
    const bool over = start > 0 && end - start > rssBound(start, o.rssSlackMiB);
    grew = grew || over;
    if (rank == 0) {
      std::printf(
          "loom_soak: rank %d RSS start %.1f MiB, end %.1f MiB, growth %+.2f MiB (bound %.1f "
          "MiB)%s\n",
          r, static_cast<double>(start) / kMiB, static_cast<double>(end) / kMiB,
          static_cast<double>(end - start) / kMiB,
          static_cast<double>(rssBound(start, o.rssSlackMiB)) / kMiB, over ? "  <-- TOO MUCH" : "");
    }
  }
  if (rank == 0) {
    std::printf("loom_soak: ops per collective:");
    for (size_t c = 0; c < perColl.size(); ++c) {
      std::printf(" %s %llu", soak::collName(static_cast<soak::Coll>(c)),
                  static_cast<unsigned long long>(perColl[c]));
    }
    std::printf(
        "\nloom_soak: %llu ops on %d ranks in %.1f s: %.0f ops/s (%.0f ops/s after warm-up), "
        "%.2f GB moved per rank (%.0f MB/s), 0 wrong elements\n",
        static_cast<unsigned long long>(o.ops), nranks, total, static_cast<double>(o.ops) / total,
        static_cast<double>(o.ops - warmup) / steady, static_cast<double>(bytes) / 1e9,
        static_cast<double>(bytes) / 1e6 / total);
    std::printf("loom_soak: %s\n", grew ? "FAILED: resident memory grew past the bound" : "PASSED");
    std::fflush(stdout);
  }
  return grew ? 1 : 0;
}

}  // namespace

// Only CLI11's option setup can throw out of main: a programming error, found at once.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  Options o;
  CLI::App app{"loom_soak: randomly mixed collectives, every result checked"};
  app.add_option("--ops", o.ops, "operations to run")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the operation sequence")->capture_default_str();
  app.add_option("--max-bytes", o.maxBytes, "largest message per rank (K/M suffixes)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  auto* threadsOpt = app.add_option("-t,--threads", o.threads,
                                    "ranks as threads of this process (without a launcher)")
                         ->check(CLI::Range(1, soak::kMaxRanks))
                         ->capture_default_str();
  app.add_option("--rss-slack-mib", o.rssSlackMiB,
                 "allowed RSS growth after warm-up, on top of 1% of the start")
      ->capture_default_str();
  app.add_option("--inject-error", o.injectError,
                 "self-test: corrupt one received byte at this op; the soak must fail");
  CLI11_PARSE(app, argc, argv);
  if (o.maxBytes > (size_t{1} << 30)) die("--max-bytes above 1G is not useful for a soak");

  if (underLauncher()) {
    if (threadsOpt->count() > 0) die("-t makes no sense under a launcher: it starts the ranks");
    loomComm_t comm = nullptr;
    if (loomCommInitFromEnv(&comm) != loomSuccess) {
      die(std::string("loomCommInitFromEnv failed: ") + loomGetLastError(nullptr));
    }
    int rank = 0;
    loomCommUserRank(comm, &rank);
    if (rank == 0) {
      std::printf("loom_soak: seed %llu, %llu ops, messages up to %zu bytes\n",
                  static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(o.ops),
                  o.maxBytes);
    }
    const int rc = soakRank(comm, o);
    loomCommDestroy(comm);
    return rc;
  }

  std::printf("loom_soak: seed %llu, %llu ops, messages up to %zu bytes, %d rank threads\n",
              static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(o.ops),
              o.maxBytes, o.threads);
  std::vector<loomComm_t> comms(static_cast<size_t>(o.threads));
  if (loomCommInitAll(comms.data(), o.threads, nullptr) != loomSuccess) {
    die(std::string("loomCommInitAll failed: ") + loomGetLastError(nullptr));
  }
  std::vector<int> rcs(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] { rcs[r] = soakRank(comms[r], o); });
  }
  for (auto& t : threads) t.join();
  for (loomComm_t c : comms) loomCommDestroy(c);
  for (int rc : rcs) {
    if (rc != 0) return rc;
  }
  return 0;
}
