// The handshake primitives against published test vectors (FIPS 180-2 for
// SHA-256, RFC 4231 for HMAC-SHA256).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "core/keyed_hash.h"

namespace loom {
namespace {

std::string hex(const Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : digest) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

TEST(KeyedHash, Sha256MatchesFips180Vectors) {
  EXPECT_EQ(hex(sha256("abc", {})),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // The label and the data hash as one message.
  EXPECT_EQ(hex(sha256("ab", bytesOf("c"))), hex(sha256("abc", {})));
  EXPECT_EQ(hex(sha256("", {})),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(KeyedHash, HmacSha256MatchesRfc4231) {
  // Test case 2: key "Jefe"; the message split across label and parts.
  EXPECT_EQ(
      hex(hmacSha256(bytesOf("Jefe"), "what do ya ", {bytesOf("want for "), bytesOf("nothing?")})),
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 1: a 20-byte key of 0x0b, "Hi There".
  const std::string key(20, '\x0b');
  EXPECT_EQ(hex(hmacSha256(bytesOf(key), "Hi There", {})),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(KeyedHash, SameBytesComparesContentAndLength) {
  const Digest a = sha256("a", {});
  Digest b = a;
  EXPECT_TRUE(sameBytes(a, b));
  b[31] ^= 1;
  EXPECT_FALSE(sameBytes(a, b));
  EXPECT_FALSE(sameBytes(a, std::span<const uint8_t>(a).first(31)));
  EXPECT_TRUE(sameBytes({}, {}));
}

TEST(KeyedHash, ChildForkedWhileAnotherThreadHashesCanHash) {
  // Launchers and Python's multiprocessing fork processes that then join a
  // communicator; a library lock held by another thread at the fork would
  // stay locked in the child forever.
  std::atomic<bool> stop{false};
  std::thread hasher([&] {
    while (!stop.load()) (void)hmacSha256(bytesOf("key"), "busy", {bytesOf("payload")});
  });
  int hung = 0;
  for (int i = 0; i < 40; ++i) {
    const pid_t child = ::fork();
    if (child == 0) {
      alarm(5);  // a hung child dies instead of outliving the test
      const Digest d = hmacSha256(bytesOf("Jefe"), "what do ya want for nothing?", {});
      _exit(hex(d).starts_with("5bdcc146") ? 0 : 1);
    }
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++hung;
  }
  stop = true;
  hasher.join();
  EXPECT_EQ(hung, 0) << "children that could not hash after the fork";
}

TEST(KeyedHash, RandomBytesDiffer) {
  // 128 random bits colliding would mean the generator is broken.
  EXPECT_NE(randomArray<16>(), randomArray<16>());
  randomBytes({});  // an empty request is fine
}

}  // namespace
}  // namespace loom
