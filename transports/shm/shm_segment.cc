#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <utility>

#include "core/error.h"

namespace loom {
namespace {

std::string shmSpaceHint(size_t bytes) {
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) != 0) return "";
  const unsigned long long avail = static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
  return fmt::format(
      " (/dev/shm has {} MiB free, this segment needs {} MiB; lower "
      "LOOM_SHM_SLOT_BYTES / LOOM_DIRECT_BYTES or use LOOM_TRANSPORT=tcp)",
      avail >> 20, (bytes + (1 << 20) - 1) >> 20);
}

char* mapFd(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) raiseErrno(fmt::format("mmap of shm segment {} ({} bytes)", name, bytes));
  return static_cast<char*>(p);
}

}  // namespace

ShmSegment ShmSegment::create(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) raiseErrno(fmt::format("shm_open(create) {}", name));
  // posix_fallocate reserves the pages now, so a full /dev/shm fails here with
  // a clear message rather than with SIGBUS on first touch mid-collective.
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    close(fd);
    shm_unlink(name.c_str());
    errno = rc;
    raiseErrno(
        fmt::format("reserving {} bytes for shm segment {}{}", bytes, name, shmSpaceHint(bytes)));
  }
  char* data = nullptr;
  try {
    data = mapFd(fd, bytes, name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  ShmSegment seg(name, data, bytes, true);
  seg.linked_ = true;
  return seg;
}

ShmSegment ShmSegment::open(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) raiseErrno(fmt::format("shm_open {}", name));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    raise(ErrorCode::InvalidUsage,
          "shm segment {} has {} bytes, expected {}: ranks disagree on LOOM_SHM_* settings", name,
          static_cast<long long>(st.st_size), bytes);
  }
  char* data = nullptr;
  try {
    data = mapFd(fd, bytes, name);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return ShmSegment(name, data, bytes, false);
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owner_ = std::exchange(other.owner_, false);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

ShmSegment::~ShmSegment() { release(); }

void ShmSegment::unlink() {
  if (owner_ && linked_) {
    shm_unlink(name_.c_str());
    linked_ = false;
  }
}

void ShmSegment::release() {
  unlink();
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace loom
