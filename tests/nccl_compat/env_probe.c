/* Prints the LOOM_* variables the shim derived from NCCL_* ones, after it has
 * created communicators (the mapping happens before the first), and checks
 * that an all-reduce works under them. The script compares the output. */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

int main(void) {
  ncclComm_t comms[2];
  CHECK_NCCL(ncclCommInitAll(comms, 2, NULL));
  const char* names[] = {"LOOM_DEBUG", "LOOM_ALGO", "LOOM_SOCKET_IFNAME", "LOOM_TRANSPORT"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    const char* value = getenv(names[i]);
    printf("%s=%s\n", names[i], value != NULL ? value : "(unset)");
  }
  int values[2] = {3, 4};
  CHECK_NCCL(ncclGroupStart());
  for (int r = 0; r < 2; ++r) {
    CHECK_NCCL(ncclAllReduce(&values[r], &values[r], 1, ncclInt32, ncclSum, comms[r], NULL));
  }
  CHECK_NCCL(ncclGroupEnd());
  EXPECT(values[0] == 7 && values[1] == 7, "all-reduce under the mapped environment");
  for (int r = 0; r < 2; ++r) CHECK_NCCL(ncclCommDestroy(comms[r]));
  return 0;
}
