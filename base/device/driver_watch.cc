#include "device/driver_watch.h"

#include <link.h>

#include "device/cuda_runtime.h"

namespace loom::device {
namespace {

struct LoaderCounts {
  uint64_t adds = 0;
  uint64_t subs = 0;
};

/// Every object carries the loader's global counts: the first one is enough.
int readCounts(dl_phdr_info* info, size_t size, void* data) {
  auto* counts = static_cast<LoaderCounts*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    counts->adds = info->dlpi_adds;
    counts->subs = info->dlpi_subs;
  }
  return 1;  // stop after the first object
}

}  // namespace

bool DriverWatch::loaded() {
  LoaderCounts now;
  dl_iterate_phdr(readCounts, &now);
  // A loader too old to count (never on glibc >= 2.4) reports zeros: ask every time.
  const bool counted = now.adds != 0;
  if (known_ && counted && now.adds == adds_ && now.subs == subs_) return loaded_;
  loaded_ = cudaDriverLoaded();
  adds_ = now.adds;
  subs_ = now.subs;
  known_ = counted;
  return loaded_;
}

}  // namespace loom::device
