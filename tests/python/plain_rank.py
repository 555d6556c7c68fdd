"""One rank of the plain-Python loom.Comm tests; run under loomrun by test_plain_comm.py.

    loomrun -n N python plain_rank.py GROUP

Every rank knows every rank's input (a function of rank, dtype and size), so
each checks its own result against a numpy reference and exits non-zero with a
message at the first mismatch. Many cases share one launch because starting
Python and numpy costs more than all the collectives together.
"""

import array
import sys
import threading
import time

import numpy as np

import loom

DTYPES = (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32,
          np.float64)
SIZES = (0, 1, 7, 100000)


class Mismatch(Exception):
    pass


def rank_input(rank, n, dtype, op=loom.SUM):
    """Rank `rank`'s n inputs: different per rank and per position, small enough never to
    overflow int8 or lose float16 precision when size ranks combine them."""
    i = np.arange(n, dtype=np.int64)
    if op == loom.PROD:
        values = (i * (rank + 1) + rank) % 4 + 1  # product of 3 ranks <= 64
    else:
        values = (i * (2 * rank + 1) + 13 * rank) % 23  # sum of 3 ranks <= 66
    return values.astype(dtype)


def reference(inputs, op, dtype, nranks):
    stacked = np.stack(inputs)
    if op == loom.SUM:
        return stacked.sum(axis=0, dtype=dtype)
    if op == loom.PROD:
        return stacked.prod(axis=0, dtype=dtype)
    if op == loom.MAX:
        return stacked.max(axis=0)
    if op == loom.MIN:
        return stacked.min(axis=0)
    total = stacked.sum(axis=0, dtype=np.float64)
    if np.issubdtype(dtype, np.integer):
        return np.trunc(total / nranks).astype(dtype)  # Loom truncates toward zero
    return (total / nranks).astype(dtype)


def expect(label, got, want, op=None):
    got = np.asarray(got)
    if got.dtype != want.dtype or got.shape != want.shape:
        raise Mismatch(f"{label}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
    if op == loom.AVG and np.issubdtype(want.dtype, np.floating):
        # Loom divides in float for float16; numpy here divides in float64: one rounding apart.
        ok = np.allclose(got, want, rtol=1e-3 if want.dtype == np.float16 else 1e-6)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        bad = np.flatnonzero(got != want)
        i = int(bad[0]) if bad.size else 0
        raise Mismatch(f"{label}: {bad.size} of {got.size} elements differ; first at {i}: "
                       f"got {got.flat[i]!r}, want {want.flat[i]!r}")


def each_case():
    for dtype in DTYPES:
        for n in SIZES:
            yield dtype, n


def name(dtype):
    return np.dtype(dtype).name


# ---- reductions -------------------------------------------------------------


def check_all_reduce(comm, dtype, n, op, in_place):
    mine = rank_input(comm.rank, n, dtype, op)
    want = reference([rank_input(r, n, dtype, op) for r in range(comm.size)], op, dtype,
                     comm.size)
    label = f"all_reduce {name(dtype)} n={n} {op} in_place={in_place}"
    if in_place:
        got = comm.all_reduce(mine, op=op)
        if got is not mine:
            raise Mismatch(f"{label}: did not return its buffer")
    else:
        sent = mine.copy()
        got = comm.all_reduce(mine, np.empty(n, dtype), op=op)
        expect(label + " (send untouched)", mine, sent)
    expect(label, got, want, op)


def check_reduce_scatter(comm, dtype, n, op, in_place):
    full = [rank_input(r, comm.size * n, dtype, op) for r in range(comm.size)]
    want = reference(full, op, dtype, comm.size)[comm.rank * n:(comm.rank + 1) * n]
    send = full[comm.rank].copy()
    recv = send[comm.rank * n:(comm.rank + 1) * n] if in_place else np.empty(n, dtype)
    comm.reduce_scatter(send, recv, op)
    expect(f"reduce_scatter {name(dtype)} n={n} {op} in_place={in_place}", recv, want, op)


def check_reduce(comm, dtype, n, op, in_place, root):
    mine = rank_input(comm.rank, n, dtype, op)
    want = reference([rank_input(r, n, dtype, op) for r in range(comm.size)], op, dtype,
                     comm.size)
    label = f"reduce {name(dtype)} n={n} {op} root={root} in_place={in_place}"
    if in_place:
        before = mine.copy()
        comm.reduce(mine, op=op, root=root)
        expect(label, mine, want if comm.rank == root else before, op)
    else:
        sentinel = np.full(n, 3, dtype)
        comm.reduce(mine, sentinel, op, root)
        expect(label, sentinel, want if comm.rank == root else np.full(n, 3, dtype), op)


def group_reductions(comm):
    count = 0
    for dtype, n in each_case():
        for op in loom.OPS:
            for in_place in (False, True):
                check_all_reduce(comm, dtype, n, op, in_place)
                check_reduce_scatter(comm, dtype, n, op, in_place)
                check_reduce(comm, dtype, n, op, in_place, root=count % comm.size)
                count += 1
    return 3 * count


# ---- data movement ----------------------------------------------------------


def check_all_gather(comm, dtype, n, in_place):
    want = np.concatenate([rank_input(r, n, dtype) for r in range(comm.size)])
    recv = np.zeros(comm.size * n, dtype)
    if in_place:
        send = recv[comm.rank * n:(comm.rank + 1) * n]
        send[:] = rank_input(comm.rank, n, dtype)
    else:
        send = rank_input(comm.rank, n, dtype)
    comm.all_gather(send, recv)
    expect(f"all_gather {name(dtype)} n={n} in_place={in_place}", recv, want)


def check_broadcast(comm, dtype, n, root):
    buf = rank_input(comm.rank, n, dtype)
    comm.broadcast(buf, root)
    expect(f"broadcast {name(dtype)} n={n} root={root}", buf, rank_input(root, n, dtype))


def check_all_to_all(comm, dtype, n):
    # Block j of rank r's send is rank r's input shifted by j, so every block is distinct.
    def send_of(r):
        return np.concatenate([rank_input(r, n, dtype) + dtype(j) for j in range(comm.size)])

    send = send_of(comm.rank)
    recv = np.zeros_like(send)
    comm.all_to_all(send, recv)
    want = np.concatenate(
        [send_of(r)[comm.rank * n:(comm.rank + 1) * n] for r in range(comm.size)])
    expect(f"all_to_all {name(dtype)} n={n}", recv, want)


def check_gather(comm, dtype, n, root, in_place):
    want = np.concatenate([rank_input(r, n, dtype) for r in range(comm.size)])
    on_root = comm.rank == root
    recv = np.zeros(comm.size * n, dtype) if on_root else None
    if in_place and on_root:
        send = recv[root * n:(root + 1) * n]
        send[:] = rank_input(root, n, dtype)
    else:
        send = rank_input(comm.rank, n, dtype)
    comm.gather(send, recv, root)
    if on_root:
        expect(f"gather {name(dtype)} n={n} root={root} in_place={in_place}", recv, want)


def check_scatter(comm, dtype, n, root, in_place):
    on_root = comm.rank == root
    send = rank_input(root, comm.size * n, dtype) if on_root else None
    if in_place and on_root:
        recv = send[root * n:(root + 1) * n]
    else:
        recv = np.zeros(n, dtype)
    comm.scatter(send, recv, root)
    want = rank_input(root, comm.size * n, dtype)[comm.rank * n:(comm.rank + 1) * n]
    expect(f"scatter {name(dtype)} n={n} root={root} in_place={in_place}", recv, want)


def check_buffer_protocol(comm):
    """array.array, bytearray and memoryviews work without numpy arrays."""
    ints = array.array("i", [comm.rank + 1] * 5)
    comm.all_reduce(ints, op=loom.PROD)
    want = 1
    for r in range(comm.size):
        want *= r + 1
    if list(ints) != [want] * 5:
        raise Mismatch(f"all_reduce array.array('i'): got {list(ints)}, want {[want] * 5}")

    gathered = bytearray(3 * comm.size)
    comm.all_gather(bytes([comm.rank] * 3), gathered)
    if list(gathered) != [r for r in range(comm.size) for _ in range(3)]:
        raise Mismatch(f"all_gather bytes into bytearray: got {list(gathered)}")

    # A 2-D float64 array seen only through a memoryview (so numpy's path is bypassed).
    grid = np.full((2, 3), float(comm.rank))
    comm.broadcast(memoryview(grid), root=comm.size - 1)
    expect("broadcast memoryview 2-D", grid, np.full((2, 3), float(comm.size - 1)))

    # A read-only send buffer: loom copies it, the result must still be right.
    out = array.array("d", [0.0] * 4)
    comm.all_reduce(memoryview(bytes(np.full(4, 0.5).tobytes())).cast("d"), out)
    if list(out) != [0.5 * comm.size] * 4:
        raise Mismatch(f"all_reduce read-only memoryview: got {list(out)}")


def group_movement(comm):
    count = 0
    for dtype, n in each_case():
        root = count % comm.size
        for in_place in (False, True):
            check_all_gather(comm, dtype, n, in_place)
            check_gather(comm, dtype, n, root, in_place)
            check_scatter(comm, dtype, n, root, in_place)
            count += 3
        check_broadcast(comm, dtype, n, root)
        check_all_to_all(comm, dtype, n)
        count += 2
    check_buffer_protocol(comm)
    for _ in range(3):
        comm.barrier()
    return count + 4 + 3


# ---- point to point ---------------------------------------------------------


def group_p2p(comm):
    count = 0
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    for dtype, n in each_case():
        # A ring shift: every rank sends and receives at once, which only a group allows.
        got = np.zeros(n, dtype)
        with loom.group():
            comm.send(rank_input(comm.rank, n, dtype), right)
            comm.recv(got, left)
        expect(f"ring send/recv {name(dtype)} n={n}", got, rank_input(left, n, dtype))
        # Plain blocking pairs, ordered so that nothing waits on itself.
        for a in range(comm.size):
            for b in range(a + 1, comm.size):
                if comm.rank == a:
                    comm.send(rank_input(a, n, dtype), b)
                    got = comm.recv(np.zeros(n, dtype), b)
                    expect(f"send/recv {name(dtype)} n={n} {b}->{a}", got, rank_input(b, n, dtype))
                elif comm.rank == b:
                    got = comm.recv(np.zeros(n, dtype), a)
                    expect(f"send/recv {name(dtype)} n={n} {a}->{b}", got, rank_input(a, n, dtype))
                    comm.send(rank_input(b, n, dtype), a)
        count += 2
    return count


# ---- errors and lifetime ----------------------------------------------------


def expect_raises(label, exc_type, fn, *args, contains=(), **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_type as e:
        text = str(e)
        for word in contains:
            if word not in text:
                raise Mismatch(f"{label}: message {text!r} does not mention {word!r}") from e
        return e
    raise Mismatch(f"{label}: no {exc_type.__name__} raised")


def group_errors(comm):
    """Wrong calls fail on every rank alike, before any communication, and leave comm usable."""
    size = comm.size
    x = np.arange(6, dtype=np.float32)
    expect_raises("complex64", ValueError, comm.all_reduce, np.zeros(4, np.complex64),
                  contains=("complex64",))
    expect_raises("object array", ValueError, comm.all_reduce, np.array([1, "a"], dtype=object),
                  contains=("object",))
    expect_raises("int16", ValueError, comm.all_reduce, np.zeros(4, np.int16), contains=("int16",))
    expect_raises("non-contiguous", ValueError, comm.all_reduce, np.zeros(8)[::2],
                  contains=("C-contiguous",))
    expect_raises("non-contiguous memoryview", ValueError, comm.all_reduce,
                  memoryview(bytearray(8))[::2], contains=("C-contiguous",))
    expect_raises("recv too small", ValueError, comm.all_gather, x, np.zeros(6 * size - 1,
                                                                             np.float32),
                  contains=(str(6 * size - 1), str(6 * size)))
    expect_raises("reduce_scatter send size", ValueError, comm.reduce_scatter,
                  np.zeros(3 * size + 1, np.float32), np.zeros(3, np.float32),
                  contains=(str(3 * size + 1), str(3 * size)))
    expect_raises("all_reduce recv size", ValueError, comm.all_reduce, x, np.zeros(5, np.float32),
                  contains=("5", "6"))
    expect_raises("dtype mismatch", ValueError, comm.all_reduce, x, np.zeros(6, np.float64),
                  contains=("float32", "float64"))
    expect_raises("op xor", ValueError, comm.all_reduce, x, op="xor", contains=("xor",))
    read_only = np.zeros(6, np.float32)
    read_only.flags.writeable = False
    expect_raises("read-only recv", ValueError, comm.all_reduce, x, read_only,
                  contains=("read-only",))
    expect_raises("read-only in place", ValueError, comm.all_reduce, bytes(8),
                  contains=("read-only",))
    expect_raises("list", TypeError, comm.all_reduce, [1.0, 2.0])
    if size > 1:
        expect_raises("all_to_all split", ValueError, comm.all_to_all, np.zeros(size + 1),
                      np.zeros(size + 1), contains=(str(size + 1),))
    # The library's own checks arrive as LoomError with its message and code.
    err = expect_raises("root out of range", loom.LoomError, comm.broadcast, x, size,
                        contains=("root", str(size)))
    if err.code != 4:  # loomInvalidArgument
        raise Mismatch(f"root out of range: code {err.code}, want 4")
    if size > 1:
        y = np.zeros(2 * size, np.float32)
        err = expect_raises("all_to_all onto itself", loom.LoomError, comm.all_to_all, y, y,
                            contains=("overlap",))
    # Still usable after all that.
    check_all_reduce(comm, np.float32, 7, loom.SUM, in_place=False)
    return 18


def group_unique_id(comm):
    """Comm(unique_id, nranks, rank), context manager, destroy and abort."""
    uid = bytearray(loom.UNIQUE_ID_BYTES)
    if comm.rank == 0:
        uid[:] = loom.get_unique_id()
    comm.broadcast(uid, root=0)
    with loom.Comm(bytes(uid), comm.size, comm.rank) as sub:
        if (sub.rank, sub.size) != (comm.rank, comm.size):
            raise Mismatch(f"sub comm is rank {sub.rank} of {sub.size}")
        for op in loom.OPS:
            check_all_reduce(sub, np.int64, 7, op, in_place=True)
    if not sub.closed:
        raise Mismatch("the with block did not destroy the comm")
    expect_raises("use after destroy", loom.LoomError, sub.all_reduce, np.zeros(3),
                  contains=("destroyed",))
    sub.destroy()  # twice is harmless

    uid = bytearray(loom.UNIQUE_ID_BYTES)
    if comm.rank == 0:
        uid[:] = loom.get_unique_id()
    comm.broadcast(uid, root=0)
    doomed = loom.Comm(uid, comm.size, comm.rank)
    doomed.barrier()
    doomed.abort()
    expect_raises("use after abort", loom.LoomError, doomed.barrier)
    expect_raises("short unique id", ValueError, loom.Comm, bytes(5), comm.size, comm.rank,
                  contains=("5", str(loom.UNIQUE_ID_BYTES)))
    if comm.size > 1:
        check_abort_wakes_waiter(comm)
    comm.barrier()
    return 6


def check_abort_wakes_waiter(comm):
    """abort() from another thread ends a collective that is waiting for a rank that never comes."""
    uid = bytearray(loom.UNIQUE_ID_BYTES)
    if comm.rank == 0:
        uid[:] = loom.get_unique_id()
    comm.broadcast(uid, root=0)
    sub = loom.Comm(uid, comm.size, comm.rank)
    if comm.rank != 0:
        # Rank 0 waits in an all-reduce the others never join; they abort instead
        # once rank 0 is stuck, so each side's failure is its own.
        comm.barrier()
        sub.abort()
        return
    caught = []
    calling = threading.Event()

    def wait_forever():
        calling.set()
        try:
            sub.all_reduce(np.zeros(4))
        except loom.LoomError as e:
            caught.append(e)

    waiter = threading.Thread(target=wait_forever)
    waiter.start()
    calling.wait()
    time.sleep(0.2)  # long enough for the waiter to be inside the C call
    comm.barrier()
    start = time.monotonic()
    sub.abort()
    waiter.join(15)
    if waiter.is_alive() or not caught:
        raise Mismatch("abort() did not wake the all_reduce blocked in another thread")
    if caught[0].code not in (6, 8):  # loomRemoteError (peer aborted first) or loomAborted
        raise Mismatch(f"blocked all_reduce ended with code {caught[0].code}: {caught[0]}")
    if time.monotonic() - start > 10:
        raise Mismatch("abort() took more than 10 s")


GROUPS = {
    "reductions": group_reductions,
    "movement": group_movement,
    "p2p": group_p2p,
    "errors": group_errors,
    "unique_id": group_unique_id,
}


def main(argv):
    names = argv[1:] or list(GROUPS)
    comm = loom.Comm.from_env()
    start = time.monotonic()
    try:
        for group_name in names:
            count = GROUPS[group_name](comm)
            print(f"rank {comm.rank}/{comm.size}: {group_name}: {count} checks passed "
                  f"in {time.monotonic() - start:.2f} s", flush=True)
    except Mismatch as e:
        print(f"rank {comm.rank}/{comm.size}: FAIL: {e}", file=sys.stderr, flush=True)
        # Peers may be blocked waiting for this rank: abort so they fail fast.
        comm.abort()
        return 1
    comm.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
