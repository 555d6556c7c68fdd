#include "core/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace loom {
namespace {

// Shared (not PRIVATE) futex operations: the word lives in memory mapped by
// several processes.
long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

void Doorbell::ring() {
  if (armed.load(std::memory_order_seq_cst) == 0) return;
  counter.fetch_add(1, std::memory_order_seq_cst);
  futex(&counter, FUTEX_WAKE, INT32_MAX, nullptr);
}

uint32_t Doorbell::arm() {
  armed.store(1, std::memory_order_seq_cst);
  return counter.load(std::memory_order_seq_cst);
}

void Doorbell::sleep(uint32_t seen, long maxMicros) {
  if (counter.load(std::memory_order_seq_cst) == seen) {
    timespec timeout{maxMicros / 1000000, (maxMicros % 1000000) * 1000};
    futex(&counter, FUTEX_WAIT, seen, &timeout);
  }
  armed.store(0, std::memory_order_relaxed);
}

}  // namespace loom
