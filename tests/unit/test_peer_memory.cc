// PeerMemory against real processes: a forked child's memory read through
// cross-memory attach, the same read refused once the child is gone, and the
// access each kind of peer gets.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "transports/shm/peer_memory.h"

namespace loom {
namespace {

/// A child process that holds `words` (at the parent's addresses: fork copies
/// the address space) until its pipe closes.
class Child {
 public:
  Child() {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[1]);
      char c;
      while (::read(fds[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(fds[0]);
    pipe_ = fds[1];
  }
  ~Child() { finish(); }
  int pid() const { return pid_; }
  /// Lets the child exit and reaps it: its process id is free afterwards.
  void finish() {
    if (pipe_ >= 0) close(pipe_);
    pipe_ = -1;
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  int pid_ = -1;
  int pipe_ = -1;
};

uint64_t addressOf(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST(PeerMemory, ThreadsOfOneProcessUsePointers) {
  const std::vector<int> pids = {getpid(), getpid(), getpid()};
  PeerMemory memory(1, pids, true);
  EXPECT_TRUE(memory.everyPeerReadable());
  std::array<char, 5> text = {'l', 'o', 'o', 'm', '\0'};
  char scratch[5] = {};
  EXPECT_EQ(memory.view(0, addressOf(text.data()), 5, scratch), text.data());  // no copy
  char out[5] = {};
  memory.read(2, addressOf(text.data()), out, 5);
  EXPECT_STREQ(out, "loom");
  EXPECT_NO_THROW(memory.checkAlive(0));
}

TEST(PeerMemory, ReadsAnotherProcessThenRefusesOnceItIsGone) {
  std::vector<uint64_t> words(1000);
  for (size_t i = 0; i < words.size(); ++i) words[i] = i * 0x9E3779B97F4A7C15ULL;
  const uint64_t magic = 0x4c4f4f4d50524f42ULL;
  const uint64_t probeWord = magic;  // before the fork: the child has it at the same address
  Child child;
  // The child holds its copy; change ours so a read of our own memory would show.
  const std::vector<uint64_t> expected = words;
  for (uint64_t& w : words) w = ~w;
  const std::vector<int> pids = {getpid(), child.pid()};
  PeerMemory memory(0, pids, true);
  ASSERT_EQ(memory.access(1), PeerAccess::CrossMemory);
  std::string why;
  const std::vector<uint64_t> probes = {0, addressOf(&probeWord)};
  memory.probe(probes, magic, &why);
  ASSERT_TRUE(memory.everyPeerReadable()) << why;
  std::vector<uint64_t> got(words.size());
  memory.read(1, addressOf(words.data()), got.data(), got.size() * sizeof(uint64_t));
  EXPECT_EQ(got, expected);
  std::vector<char> scratch(24);
  const char* seen = memory.view(1, addressOf(words.data() + 3), 24, scratch.data());
  EXPECT_EQ(seen, scratch.data());
  EXPECT_EQ(std::memcmp(seen, expected.data() + 3, 24), 0);
  EXPECT_NO_THROW(memory.checkAlive(1));

  child.finish();
  try {
    memory.read(1, addressOf(words.data()), got.data(), 64);
    ADD_FAILURE() << "read a process that exited";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
  try {
    memory.checkAlive(1);
    ADD_FAILURE() << "checkAlive passed for a process that exited";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("exited"), std::string::npos) << e.what();
  }
}

TEST(PeerMemory, ProbeOfAWrongWordLeavesThePeerUnread) {
  const uint64_t word = 7;
  Child child;
  PeerMemory memory(0, std::vector<int>{getpid(), child.pid()}, true);
  std::string why;
  memory.probe(std::vector<uint64_t>{0, addressOf(&word)}, 8, &why);
  EXPECT_EQ(memory.access(1), PeerAccess::None);
  EXPECT_FALSE(memory.everyPeerReadable());
  EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  // An address the child never mapped: the kernel refuses, the peer is unread.
  PeerMemory unmapped(0, std::vector<int>{getpid(), child.pid()}, true);
  why.clear();
  unmapped.probe(std::vector<uint64_t>{0, 16}, 8, &why);
  EXPECT_EQ(unmapped.access(1), PeerAccess::None);
  EXPECT_NE(why.find("process_vm_readv"), std::string::npos) << why;
}

TEST(PeerMemory, CrossMemoryForbiddenLeavesOtherProcessesUnread) {
  Child child;
  PeerMemory memory(0, std::vector<int>{getpid(), child.pid(), getpid()}, false);
  EXPECT_EQ(memory.access(0), PeerAccess::Pointer);
  EXPECT_EQ(memory.access(1), PeerAccess::None);
  EXPECT_EQ(memory.access(2), PeerAccess::Pointer);
  EXPECT_FALSE(memory.everyPeerReadable());
  char out[8];
  EXPECT_THROW(memory.read(1, 0x1000, out, 8), Error);
}

}  // namespace
}  // namespace loom
