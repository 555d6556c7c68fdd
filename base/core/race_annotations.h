// Tells ThreadSanitizer about orderings it cannot see. Ranks that are threads
// of one process map each other's shared-memory segments at different
// addresses, so a release store through one mapping and the acquire load
// through another are the same word to the CPU but two words to TSan. Where
// ranks then read each other's ordinary memory (single-copy rounds), the
// publishing rank announces a release, and the reader an acquire, on one
// address both know. Outside TSan builds these are empty.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
#endif

namespace loom {

inline void announceRelease([[maybe_unused]] const void* address) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(address));
#endif
}

inline void announceAcquire([[maybe_unused]] const void* address) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(const_cast<void*>(address));
#endif
}

}  // namespace loom
