"""A rank of the loom.Comm recovery test, run by loomrun --keep-going: the last
rank dies (SIGKILL) after a few all-reduces; the survivors see a LoomError
naming it (or the revoke of a faster survivor's shrink), shrink, check an all-reduce, grow back to full size with a
replacement (a thread of rank 0's process) and check again. Each survivor
prints "shrink_rank R: ok" when every check passed.
"""

import os
import signal
import sys
import threading

import numpy as np

import loom


def sum_of_labels(comm, label):
    return int(comm.all_reduce(np.array([label], dtype=np.int64))[0])


def main():
    world = loom.Comm.from_env()
    rank, size = world.rank, world.size
    victim = size - 1
    data = np.ones(1024, dtype=np.float32)
    failure = None
    for step in range(100000):
        if rank == victim and step == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            world.all_reduce(data)
        except loom.LoomError as e:
            failure = e
            break
    assert failure is not None, "the death went unnoticed"
    # A survivor slower to notice may find the world revoked by a faster one's shrink.
    assert failure.code in (loom.REMOTE_ERROR, loom.REVOKED), failure.code
    if failure.code == loom.REMOTE_ERROR:
        assert f"rank {victim}" in failure.message, failure.message

    survivors = world.shrink(abort=True)
    assert (survivors.rank, survivors.size) == (rank, size - 1), survivors
    assert sum_of_labels(survivors, rank + 1) == sum(range(1, size)), "shrunk all-reduce"

    replacement = {}
    if survivors.rank == 0:
        uid = survivors.grow_id()

        def join():
            grown = loom.Comm.join_grown(uid, size, victim)
            replacement["sum"] = sum_of_labels(grown, 100)
            grown.destroy()

        thread = threading.Thread(target=join)
        thread.start()
    full = survivors.grow(size)
    assert (full.rank, full.size) == (rank, size), full
    assert sum_of_labels(full, rank + 1) == sum(range(1, size)) + 100, "grown all-reduce"
    if survivors.rank == 0:
        thread.join()
        assert replacement.get("sum") == sum(range(1, size)) + 100, replacement
    for comm in (full, survivors, world):
        comm.destroy()
    print(f"shrink_rank {rank}: ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
