#include "app/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace loom::train {
namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'C', 'K', 'P', '1'};
constexpr const char* kManifest = "manifest.json";

/// What must match between the run that saved and the run that resumes: the
/// shapes of every rank's state and the seed of its data.
struct Identity {
  uint32_t rank, worldSize, dp, tp, pp, layers, dModel, heads, seq, vocab, zero;
  uint32_t reserved;  // keeps `seed` aligned without padding, so memcmp compares values only
  uint64_t seed;
};

Identity identityOf(int rank, int worldSize, const TrainOptions& o) {
  return {static_cast<uint32_t>(rank),
          static_cast<uint32_t>(worldSize),
          static_cast<uint32_t>(o.grid.dp),
          static_cast<uint32_t>(o.grid.tp),
          static_cast<uint32_t>(o.grid.pp),
          static_cast<uint32_t>(o.model.layers),
          static_cast<uint32_t>(o.model.dModel),
          static_cast<uint32_t>(o.model.heads),
          static_cast<uint32_t>(o.model.seq),
          static_cast<uint32_t>(o.model.vocab),
          static_cast<uint32_t>(o.zero),
          0,
          o.seed};
}

std::string describe(const Identity& id) {
  std::ostringstream out;
  out << "rank " << id.rank << " of " << id.worldSize << ", dp " << id.dp << " tp " << id.tp
      << " pp " << id.pp << ", " << id.layers << " layers of width " << id.dModel << " ("
      << id.heads << " heads, seq " << id.seq << ", vocab " << id.vocab << "), zero " << id.zero
      << ", seed " << id.seed;
  return out.str();
}

bool operator==(const Identity& a, const Identity& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// FNV-1a over the payload: catches a truncated or overwritten file.
uint64_t checksum(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
void putVector(std::string& out, const std::vector<T>& values) {
  put(out, static_cast<uint64_t>(values.size()));
  // An empty vector's data() may be null, which append must not be given.
  if (!values.empty()) {
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
}

class Reader {
 public:
  Reader(const std::string& bytes, std::string path) : bytes_(bytes), path_(std::move(path)) {}
  template <typename T>
  T get() {
    T value{};
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  template <typename T>
  std::vector<T> getVector() {
    const auto count = get<uint64_t>();
    if (count > (bytes_.size() - at_) / sizeof(T)) fail("a length past the end of the file");
    std::vector<T> values(count);
    if (count > 0) std::memcpy(values.data(), bytes_.data() + at_, count * sizeof(T));
    at_ += count * sizeof(T);
    return values;
  }
  size_t at() const { return at_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("checkpoint " + path_ + ": " + what);
  }

 private:
  void need(size_t n) const {
    if (bytes_.size() - at_ < n) fail("the file ends early (truncated?)");
  }
  const std::string& bytes_;
  std::string path_;
  size_t at_ = 0;
};

/// mkdir -p: every rank calls it, so a directory that appears meanwhile is fine.
void makeDirectory(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error("cannot create checkpoint directory " + prefix + ": " +
                               std::strerror(errno));
    }
    if (slash == std::string::npos) return;
  }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so that a
/// reader never sees half a file under the real name.
void writeAtomically(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw std::runtime_error("cannot write checkpoint file " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + temporary + " to " + path + ": " +
                             std::strerror(errno));
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read checkpoint file " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

std::string checkpointDirectory(const std::string& root, int nextStep) {
  char name[32];
  std::snprintf(name, sizeof name, "/step-%06d", nextStep);
  return root + name;
}

std::string latestCheckpoint(const std::string& path) {
  const auto complete = [](const std::string& dir) {
    struct stat info {};
    return ::stat((dir + "/" + kManifest).c_str(), &info) == 0;
  };
  if (complete(path)) return path;
  std::string best;
  int bestStep = -1;
  if (DIR* listing = ::opendir(path.c_str())) {
    while (const dirent* entry = ::readdir(listing)) {
      int step = -1;
      char tail = 0;
      if (std::sscanf(entry->d_name, "step-%d%c", &step, &tail) != 1 || step <= bestStep) continue;
      const std::string candidate = path + "/" + entry->d_name;
      if (complete(candidate)) {
        bestStep = step;
        best = candidate;
      }
    }
    ::closedir(listing);
  }
  if (best.empty()) {
    throw std::runtime_error("no complete checkpoint in " + path + " (no " + kManifest +
                             " there or in a step-N directory under it)");
  }
  return best;
}

std::string rankFileName(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05d.ckpt", rank);
  return name;
}

void writeRankState(const std::string& dir, int rank, int worldSize, const TrainOptions& o,
                    const RankState& state) {
  makeDirectory(dir);
  std::string payload;
  put(payload, identityOf(rank, worldSize, o));
  put(payload, static_cast<int32_t>(state.nextStep));
  put(payload, static_cast<int32_t>(state.optimizer.steps));
  putVector(payload, state.values);
  putVector(payload, state.optimizer.m);
  putVector(payload, state.optimizer.v);
  putVector(payload, state.optimizer.held);
  std::string file(kMagic, sizeof kMagic);
  file += payload;
  put(file, checksum(payload));
  writeAtomically(dir + "/" + rankFileName(rank), file);
}

void writeManifest(const std::string& dir, int worldSize, const TrainOptions& o, int nextStep) {
  std::ostringstream json;
  json << "{\n  \"format\": \"loom-train checkpoint 1\",\n  \"next_step\": " << nextStep
       << ",\n  \"ranks\": " << worldSize << ",\n  \"grid\": {\"dp\": " << o.grid.dp
       << ", \"tp\": " << o.grid.tp << ", \"pp\": " << o.grid.pp
       << "},\n  \"model\": {\"layers\": " << o.model.layers << ", \"d_model\": " << o.model.dModel
       << ", \"heads\": " << o.model.heads << ", \"seq\": " << o.model.seq
       << ", \"vocab\": " << o.model.vocab << "},\n  \"zero\": " << o.zero
       << ",\n  \"seed\": " << o.seed << ",\n  \"files\": [";
  for (int r = 0; r < worldSize; ++r) json << (r ? ", " : "") << '"' << rankFileName(r) << '"';
  json << "]\n}\n";
  writeAtomically(dir + "/" + kManifest, json.str());
}

RankState readRankState(const std::string& dir, int rank, int worldSize, const TrainOptions& o) {
  struct stat info {};
  if (::stat((dir + "/" + kManifest).c_str(), &info) != 0) {
    throw std::runtime_error("no checkpoint in " + dir + " (" + kManifest +
                             " is missing: the saving run did not finish writing it)");
  }
  const std::string path = dir + "/" + rankFileName(rank);
  const std::string file = readFile(path);
  Reader header(file, path);
  if (file.size() < sizeof kMagic + sizeof(uint64_t) ||
      std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) {
    header.fail("not a loom-train checkpoint of this version");
  }
  const std::string payload =
      file.substr(sizeof kMagic, file.size() - sizeof kMagic - sizeof(uint64_t));
  uint64_t stored = 0;
  std::memcpy(&stored, file.data() + file.size() - sizeof stored, sizeof stored);
  if (stored != checksum(payload)) header.fail("checksum mismatch (corrupt or overwritten)");

  Reader in(payload, path);
  const auto saved = in.get<Identity>();
  const Identity wanted = identityOf(rank, worldSize, o);
  if (!(saved == wanted)) {
    in.fail("saved by " + describe(saved) + "; this run is " + describe(wanted));
  }
  RankState state;
  state.nextStep = in.get<int32_t>();
  state.optimizer.steps = in.get<int32_t>();
  state.values = in.getVector<float>();
  state.optimizer.m = in.getVector<float>();
  state.optimizer.v = in.getVector<float>();
  state.optimizer.held = in.getVector<uint32_t>();
  if (in.at() != payload.size()) in.fail("trailing bytes after the state");
  if (state.nextStep < 0) in.fail("a negative step");
  return state;
}

}  // namespace loom::train
