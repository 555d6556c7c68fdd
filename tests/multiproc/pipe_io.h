// Length-prefixed strings over a pipe: how forked ranks report back to the
// test process (harness.cc and fault_harness.cc).
#ifndef LOOM_TESTS_MULTIPROC_PIPE_IO_H_
#define LOOM_TESTS_MULTIPROC_PIPE_IO_H_

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace loomtest {

/// Writes everything or gives up quietly (the reader is gone: nothing useful left to do).
inline void writeAll(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd, p, bytes);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    bytes -= static_cast<size_t>(w);
  }
}

inline void writeString(int fd, const std::string& s) {
  const uint64_t len = s.size();
  writeAll(fd, &len, sizeof len);
  writeAll(fd, s.data(), s.size());
}

/// Reads the string at *pos of `buf` (all bytes read so far); false while incomplete.
inline bool readString(const std::string& buf, size_t* pos, std::string* out) {
  uint64_t len;
  if (buf.size() - *pos < sizeof len) return false;
  std::memcpy(&len, buf.data() + *pos, sizeof len);
  *pos += sizeof len;
  if (buf.size() - *pos < len) return false;
  out->assign(buf, *pos, len);
  *pos += len;
  return true;
}

}  // namespace loomtest

#endif  // LOOM_TESTS_MULTIPROC_PIPE_IO_H_
