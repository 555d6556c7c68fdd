#include "app/grow_back.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace loom::train {
namespace {

namespace fs = std::filesystem;

std::string toHex(const loomUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (const char c : id.internal) {
    const auto byte = static_cast<unsigned char>(c);
    hex += digits[byte >> 4];
    hex += digits[byte & 15];
  }
  return hex;
}

bool fromHex(const std::string& hex, loomUniqueId* id) {
  if (hex.size() != 2 * sizeof id->internal) return false;
  for (size_t i = 0; i < sizeof id->internal; ++i) {
    unsigned value = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &value) != 1) return false;
    id->internal[i] = static_cast<char>(value);
  }
  return true;
}

/// Writes `text` to `path` through a temporary name and a rename.
void writeAtomically(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + temporary.string());
  }
  fs::rename(temporary, path);
}

/// Reads a plan file; false if it is not one (or not complete).
bool readPlan(const fs::path& path, GrowPlan* plan) {
  std::ifstream in(path);
  std::string key, hex, pidsLine;
  if (!(in >> key >> plan->nranks) || key != "nranks") return false;
  if (!(in >> key >> plan->firstNewRank) || key != "first") return false;
  if (!(in >> key >> hex) || key != "id" || !fromHex(hex, &plan->id)) return false;
  if (!(in >> key) || key != "pids") return false;
  std::getline(in, pidsLine);
  std::istringstream pids(pidsLine);
  plan->pids.clear();
  for (int pid = 0; pids >> pid;) plan->pids.push_back(pid);
  return !plan->pids.empty();
}

}  // namespace

std::string growDirectory() {
  const char* dir = std::getenv("LOOM_GROW_DIR");
  return dir != nullptr ? dir : "";
}

bool startedAsReplacement() {
  const char* flag = std::getenv("LOOM_REPLACEMENT");
  return flag != nullptr && std::strcmp(flag, "1") == 0;
}

std::vector<int> GrowChannel::waiting() const {
  std::vector<std::pair<fs::file_time_type, int>> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory_, error)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    char rest = 0;
    if (std::sscanf(name.c_str(), "waiting.%d%c", &pid, &rest) != 1) continue;
    // The directory is loomrun's, on this machine: the pid is a local process.
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      fs::remove(entry.path(), error);
      continue;
    }
    found.emplace_back(entry.last_write_time(error), pid);
  }
  std::sort(found.begin(), found.end());
  std::vector<int> pids;
  pids.reserve(found.size());
  for (const auto& [time, pid] : found) pids.push_back(pid);
  return pids;
}

void GrowChannel::publish(const GrowPlan& plan) const {
  std::ostringstream text;
  text << "nranks " << plan.nranks << "\nfirst " << plan.firstNewRank << "\nid " << toHex(plan.id)
       << "\npids";
  for (const int pid : plan.pids) text << ' ' << pid;
  text << '\n';
  // Named by the publisher and the new size: unique within one job.
  writeAtomically(fs::path(directory_) /
                      ("grow." + std::to_string(::getpid()) + "." + std::to_string(plan.nranks)),
                  text.str());
  for (const int pid : plan.pids) {
    std::error_code ignored;
    fs::remove(fs::path(directory_) / ("waiting." + std::to_string(pid)), ignored);
  }
}

void GrowChannel::close() const { writeAtomically(fs::path(directory_) / "closed", "done\n"); }

std::optional<GrowPlan> GrowChannel::awaitPlan(std::chrono::milliseconds timeout) const {
  const int me = ::getpid();
  const fs::path mine = fs::path(directory_) / ("waiting." + std::to_string(me));
  const fs::path closed = fs::path(directory_) / "closed";
  writeAtomically(mine, std::to_string(me) + "\n");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code error;
    if (fs::exists(closed, error)) {
      fs::remove(mine, error);
      return std::nullopt;
    }
    for (const auto& entry : fs::directory_iterator(directory_, error)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("grow.") || name.ends_with(".tmp")) continue;
      GrowPlan plan;
      if (readPlan(entry.path(), &plan) &&
          std::find(plan.pids.begin(), plan.pids.end(), me) != plan.pids.end()) {
        return plan;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::error_code ignored;
  fs::remove(mine, ignored);
  throw std::runtime_error("no survivors took this rank in within " +
                           std::to_string(timeout.count() / 1000) + " s (LOOM_TIMEOUT)");
}

loom::Comm growAsMember(const loom::Comm& world, const GrowChannel& channel,
                        const std::vector<int>& pids, const GridShape& before, int step) {
  const int perReplica = before.tp * before.pp;
  GridShape after = before;
  after.dp += static_cast<int>(pids.size()) / perReplica;
  const int nranks = world.size() + static_cast<int>(pids.size());
  if (world.rank() == 0) {
    GrowPlan plan;
    plan.nranks = nranks;
    plan.firstNewRank = world.size();
    plan.pids = pids;
    plan.id = world.growId();
    channel.publish(plan);
  }
  loom::Comm grown = world.grow(nranks);
  std::array<int32_t, 2> header = {step, after.dp};  // what the new ranks need to know
  grown.broadcast(std::span<int32_t>(header), 0);
  return grown.split(0, worldRankOf(after, coordsOf(before, world.rank())));
}

std::optional<loom::Comm> joinAsNewRank(const GrowChannel& channel, GridShape& shape, int& step,
                                        std::chrono::milliseconds timeout,
                                        const std::function<void()>& joined) {
  const std::optional<GrowPlan> found = channel.awaitPlan(timeout);
  if (!found) return std::nullopt;
  const GrowPlan& plan = *found;
  const int index = static_cast<int>(std::find(plan.pids.begin(), plan.pids.end(), ::getpid()) -
                                     plan.pids.begin());
  loom::Comm grown = loom::Comm::joinGrown(plan.nranks, plan.id, plan.firstNewRank + index);
  if (joined) joined();
  std::array<int32_t, 2> header{};
  grown.broadcast(std::span<int32_t>(header), 0);
  step = header[0];
  shape.dp = header[1];
  // New ranks fill new replicas, after the members' ones, in rank order.
  const int perReplica = shape.tp * shape.pp;
  const int newReplicas = static_cast<int>(plan.pids.size()) / perReplica;
  GridCoords coords;
  coords.dp = shape.dp - newReplicas + index / perReplica;
  coords.tp = index % perReplica % shape.tp;
  coords.pp = index % perReplica / shape.tp;
  return grown.split(0, worldRankOf(shape, coords));
}

}  // namespace loom::train
