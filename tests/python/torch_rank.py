"""One rank of the torch.distributed backend checks (test_torch_backend.py).

Every check runs a collective on the "loom" process group and compares what
it got with a reference computed here from the inputs every rank is known to
have (rank r's input is a function of r), and where Gloo supports the case,
with Gloo's answer on the same inputs. A rank collects failures as text and
reports them; it never stops at the first one, so one run shows them all.

Run by mp.spawn (run_spawned) or under torchrun (``python torch_rank.py``).
"""
import datetime
import os
import signal
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _coalescing_manager

import loom.torch  # noqa: F401  registers the backend

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
SIZES = [0, 1, 7, 100003]
OPS = {
    "sum": dist.ReduceOp.SUM,
    "prod": dist.ReduceOp.PRODUCT,
    "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX,
    "avg": dist.ReduceOp.AVG,
}


def rank_input(rank, count, dtype, op="sum"):
    """Small integers, so sums and products are exact in every type."""
    base = torch.arange(count, dtype=torch.int64)
    if dtype == torch.bool:
        return ((base + rank) % 3 == 0)
    if op == "prod":
        values = 1 + (base + rank) % 2  # 1s and 2s: 2**n fits every type
    else:
        values = (base * 7 + rank * 3) % 11
    return values.to(dtype)


def reference(inputs, op):
    stacked = torch.stack([t.to(torch.float64) for t in inputs])
    if inputs[0].dtype == torch.bool:
        b = torch.stack(inputs)
        return b.any(0) if op in ("sum", "max") else b.all(0)
    result = {"sum": stacked.sum(0), "prod": stacked.prod(0), "min": stacked.min(0).values,
              "max": stacked.max(0).values, "avg": stacked.mean(0)}[op]
    return result.to(inputs[0].dtype)


class Checker:
    def __init__(self, rank, size):
        self.rank = rank
        self.size = size
        self.failures = []

    def same(self, what, got, want, tolerance=0.0):
        got = got.to(torch.float64) if got.dtype != torch.bool else got
        want = want.to(torch.float64) if want.dtype != torch.bool else want
        if got.shape != want.shape:
            self.failures.append(f"rank {self.rank}: {what}: shape {tuple(got.shape)} "
                                 f"!= {tuple(want.shape)}")
            return
        if got.dtype == torch.bool:
            ok = torch.equal(got, want)
        else:
            ok = torch.allclose(got, want, rtol=tolerance, atol=tolerance)
        if not ok:
            bad = (got != want).nonzero()[:3].flatten().tolist()
            self.failures.append(f"rank {self.rank}: {what}: differs at {bad}: "
                                 f"{got.flatten()[:5].tolist()} vs {want.flatten()[:5].tolist()}")

    def run(self, what, function):
        try:
            function()
        except Exception:  # noqa: BLE001  every failure is reported, none stops the run
            self.failures.append(f"rank {self.rank}: {what} raised:\n{traceback.format_exc()}")


def check_all_reduce(c, gloo):
    for dtype in FLOATS + INTS + [torch.bool]:
        for name, op in OPS.items():
            if dtype == torch.bool and name == "avg":
                continue
            if dtype in INTS and name == "avg":
                continue
            for count in SIZES:
                def one(dtype=dtype, name=name, op=op, count=count):
                    t = rank_input(c.rank, count, dtype, name)
                    dist.all_reduce(t, op=op)
                    want = reference([rank_input(r, count, dtype, name) for r in range(c.size)],
                                     name)
                    tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) and name == "avg" else 0
                    c.same(f"all_reduce {dtype} {name} n={count}", t, want, tol)
                c.run(f"all_reduce {dtype} {name} {count}", one)
    # Against Gloo on random reals: same within rounding.
    def against_gloo():
        g = torch.Generator().manual_seed(c.rank)
        x = torch.randn(4099, generator=g)
        a, b = x.clone(), x.clone()
        dist.all_reduce(a)
        dist.all_reduce(b, group=gloo)
        c.same("all_reduce random reals vs gloo", a, b, 1e-5)
    c.run("all_reduce vs gloo", against_gloo)

    def premul():
        t = rank_input(c.rank, 33, torch.float32)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        want = reference([rank_input(r, 33, torch.float32) for r in range(c.size)], "sum") * 0.5
        c.same("all_reduce PREMUL_SUM 0.5", t, want)
    c.run("premul", premul)

    def bitwise_refused():
        try:
            dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND)
        except (ValueError, RuntimeError) as e:
            if "bitwise" not in str(e):
                c.failures.append(f"rank {c.rank}: BAND refused without saying why: {e}")
            return
        c.failures.append(f"rank {c.rank}: BAND was not refused")
    c.run("bitwise", bitwise_refused)

    def non_contiguous():
        base = torch.stack([rank_input(c.rank, 40, torch.float32)] * 2, 1)  # 40 x 2
        view = base[:, 1]
        assert not view.is_contiguous()
        dist.all_reduce(view)
        want = reference([rank_input(r, 40, torch.float32) for r in range(c.size)], "sum")
        c.same("all_reduce non-contiguous view", base[:, 1], want)
        c.same("all_reduce leaves the other column", base[:, 0], rank_input(c.rank, 40,
                                                                            torch.float32))
    c.run("non-contiguous", non_contiguous)

    def asynchronous():
        t = rank_input(c.rank, 1000, torch.float32)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        future_value = work.get_future().wait()
        want = reference([rank_input(r, 1000, torch.float32) for r in range(c.size)], "sum")
        c.same("all_reduce async", t, want)
        c.same("all_reduce async future", future_value[0], want)
        if not work.is_completed():
            c.failures.append(f"rank {c.rank}: work not completed after wait()")
    c.run("async", asynchronous)

    def caller_not_blocked():
        # Rank 0 starts an async all_reduce that cannot finish until the last
        # rank joins, 1 s later: the call must return at once, pending.
        t = torch.full((100,), float(c.rank))
        if c.rank == c.size - 1:
            time.sleep(1.0)
        started = time.monotonic()
        work = dist.all_reduce(t, async_op=True)
        returned = time.monotonic() - started
        if c.rank == 0:
            if returned > 0.5:
                c.failures.append(f"rank 0: async all_reduce blocked its caller {returned:.2f} s")
            if work.is_completed():
                c.failures.append("rank 0: async all_reduce completed before its peer joined")
        # A future chained on the pending work runs once it completes.
        doubled = work.get_future().then(lambda f: f.value()[0] * 2)
        # A blocking call after it queues behind it: the order is kept.
        u = torch.ones(3)
        dist.all_reduce(u)
        c.same("all_reduce after a pending async one", u, torch.full((3,), float(c.size)))
        work.wait()
        total = float(sum(range(c.size)))
        c.same("async all_reduce that waited for a late peer", t, torch.full((100,), total))
        c.same("future chained with then()", doubled.wait(), torch.full((100,), 2 * total))
    c.run("async does not block", caller_not_blocked)

    def async_refusal_at_call():
        # A bad call is refused when made, not later on its Work.
        try:
            dist.all_reduce(torch.ones(4, dtype=torch.int16), async_op=True)
            c.failures.append(f"rank {c.rank}: async int16 all_reduce was not refused")
        except (ValueError, RuntimeError) as e:
            if "not supported" not in str(e):
                c.failures.append(f"rank {c.rank}: async refusal without why: {e}")
    c.run("async refusal", async_refusal_at_call)

    def many_async():
        ts = [torch.full((257,), float(c.rank + k)) for k in range(8)]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        for k, (t, w) in enumerate(zip(ts, works)):
            w.wait()
            want = float(sum(r + k for r in range(c.size)))
            c.same(f"async all_reduce {k} of 8 in flight", t, torch.full((257,), want))
    c.run("many async", many_async)

    def coalesced():
        ts = [rank_input(c.rank, n, torch.float32) for n in (1, 5, 300)]
        dist.all_reduce_coalesced(ts)
        for n, t in zip((1, 5, 300), ts):
            want = reference([rank_input(r, n, torch.float32) for r in range(c.size)], "sum")
            c.same(f"all_reduce_coalesced n={n}", t, want)
    c.run("coalesced", coalesced)


def check_movement(c, gloo):
    n = c.size
    for dtype in [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int64,
                  torch.bool]:
        for count in SIZES:
            def broadcast(dtype=dtype, count=count):
                for root in (0, n - 1):
                    t = rank_input(c.rank, count, dtype)
                    dist.broadcast(t, src=root)
                    c.same(f"broadcast {dtype} n={count} root={root}", t,
                           rank_input(root, count, dtype))
            c.run("broadcast", broadcast)

            def gathers(dtype=dtype, count=count):
                mine = rank_input(c.rank, count, dtype)
                outs = [torch.empty(count, dtype=dtype) for _ in range(n)]
                dist.all_gather(outs, mine)
                for r in range(n):
                    c.same(f"all_gather {dtype} n={count} from {r}", outs[r],
                           rank_input(r, count, dtype))
                flat = torch.empty(n * count, dtype=dtype)
                dist.all_gather_into_tensor(flat, mine)
                c.same(f"all_gather_into_tensor {dtype} n={count}", flat,
                       torch.cat([rank_input(r, count, dtype) for r in range(n)]))
            c.run("all_gather", gathers)

            def rooted(dtype=dtype, count=count):
                root = n - 1
                mine = rank_input(c.rank, count, dtype)
                outs = [torch.empty(count, dtype=dtype) for _ in range(n)] \
                    if c.rank == root else None
                dist.gather(mine, outs, dst=root)
                if c.rank == root:
                    for r in range(n):
                        c.same(f"gather {dtype} n={count} from {r}", outs[r],
                               rank_input(r, count, dtype))
                got = torch.empty(count, dtype=dtype)
                parts = [rank_input(r + 10, count, dtype) for r in range(n)] \
                    if c.rank == root else None
                dist.scatter(got, parts, src=root)
                c.same(f"scatter {dtype} n={count}", got, rank_input(c.rank + 10, count, dtype))
            c.run("gather/scatter", rooted)

    for name in ("sum", "max", "avg"):
        for count in SIZES:
            def reduces(name=name, count=count):
                dtype = torch.float32
                inputs = [torch.cat([rank_input(r, count, dtype, name) + 100 * k
                                     for k in range(n)]) for r in range(n)]
                out = torch.empty(count, dtype=dtype)
                dist.reduce_scatter_tensor(out, inputs[c.rank].clone(), op=OPS[name])
                want = reference(inputs, name)[c.rank * count:(c.rank + 1) * count]
                c.same(f"reduce_scatter_tensor {name} n={count}", out, want, 1e-6)
                out2 = torch.empty(count, dtype=dtype)
                dist.reduce_scatter(out2, list(inputs[c.rank].clone().chunk(n)) if count else
                                    [torch.empty(0)] * n, op=OPS[name])
                c.same(f"reduce_scatter {name} n={count}", out2, want, 1e-6)
                t = rank_input(c.rank, count, dtype, name)
                dist.reduce(t, dst=n - 1, op=OPS[name])
                if c.rank == n - 1:
                    c.same(f"reduce {name} n={count}", t,
                           reference([rank_input(r, count, dtype, name) for r in range(n)], name),
                           1e-6)
            c.run(f"reduce_scatter {name} {count}", reduces)

    def all_to_all():
        for count in (0, 1, 5):
            x = torch.arange(n * count, dtype=torch.float32) + 1000 * c.rank
            y = torch.empty(n * count)
            dist.all_to_all_single(y, x)
            want = torch.cat([torch.arange(c.rank * count, (c.rank + 1) * count,
                                           dtype=torch.float32) + 1000 * r for r in range(n)])
            c.same(f"all_to_all_single n={count}", y, want)
        # Uneven splits: rank r sends r+p+1 rows to rank p, rows of 3 elements.
        send_splits = [c.rank + p + 1 for p in range(n)]
        recv_splits = [r + c.rank + 1 for r in range(n)]
        x = torch.full((sum(send_splits), 3), float(c.rank))
        y = torch.empty((sum(recv_splits), 3))
        dist.all_to_all_single(y, x, recv_splits, send_splits)
        want = torch.cat([torch.full((recv_splits[r], 3), float(r)) for r in range(n)])
        c.same("all_to_all_single uneven splits", y, want)
        z = torch.empty_like(y)
        dist.all_to_all_single(z, x, recv_splits, send_splits, group=gloo)
        c.same("all_to_all_single uneven splits vs gloo", y, z)
        outs = [torch.empty(4) for _ in range(n)]
        dist.all_to_all(outs, [torch.full((4,), float(c.rank * 10 + p)) for p in range(n)])
        for r in range(n):
            c.same(f"all_to_all from {r}", outs[r], torch.full((4,), float(r * 10 + c.rank)))
    c.run("all_to_all", all_to_all)

    def objects():
        got = [None] * n
        dist.all_gather_object(got, {"rank": c.rank, "text": "x" * c.rank})
        want = [{"rank": r, "text": "x" * r} for r in range(n)]
        if got != want:
            c.failures.append(f"rank {c.rank}: all_gather_object gave {got}")
    c.run("objects", objects)


def check_point_to_point(c):
    n = c.size
    right, left = (c.rank + 1) % n, (c.rank - 1) % n

    def blocking():
        out = torch.full((5,), float(c.rank))
        got = torch.empty(5)
        if c.rank % 2 == 0:
            dist.send(out, right)
            dist.recv(got, left)
        else:
            dist.recv(got, left)
            dist.send(out, right)
        c.same("send/recv ring", got, torch.full((5,), float(left)))
    c.run("send/recv", blocking)

    def batched():
        big = 300000  # larger than the shared-memory slots: a blocking pair would deadlock
        out = torch.full((big,), float(c.rank))
        got = torch.empty(big)
        ops = [dist.P2POp(dist.isend, out, right), dist.P2POp(dist.irecv, got, left)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        c.same("batch_isend_irecv ring", got, torch.full((big,), float(left)))
    c.run("batch_isend_irecv", batched)

    def nonblocking():
        out = torch.full((9,), float(c.rank) + 0.5)
        got = torch.empty(9)
        if c.rank % 2 == 0:
            works = [dist.isend(out, right), dist.irecv(got, left)]
        else:
            works = [dist.irecv(got, left), dist.isend(out, right)]
        for w in works:
            w.wait()
        c.same("isend/irecv ring", got, torch.full((9,), float(left) + 0.5))
    c.run("isend/irecv", nonblocking)

    def nonblocking_large():
        # Every rank sends first: a send that blocked its caller until the
        # peer received would deadlock here.
        big = 300000
        out = torch.full((big,), float(c.rank))
        got = torch.empty(big)
        sent = dist.isend(out, right)
        received = dist.irecv(got, left)
        sent.wait()
        received.wait()
        c.same("isend/irecv, both send first", got, torch.full((big,), float(left)))
    c.run("isend first", nonblocking_large)

    c.run("barrier", dist.barrier)
    c.run("monitored_barrier", lambda: dist.monitored_barrier(
        timeout=datetime.timedelta(seconds=30)))


def check_refusals(c):
    """Bad calls raise ValueError saying why, on every rank alike, and the
    group still works afterwards."""
    n = c.size

    def refused(what, call, words):
        try:
            call()
        except (ValueError, RuntimeError) as e:
            if words not in str(e):
                c.failures.append(f"rank {c.rank}: {what} refused without saying why: {e}")
            return
        c.failures.append(f"rank {c.rank}: {what} was not refused")

    refused("int16 broadcast", lambda: dist.broadcast(torch.ones(4, dtype=torch.int16), src=0),
            "not supported")
    refused("all_gather_into_tensor, output too small",
            lambda: dist.all_gather_into_tensor(torch.empty(n * 4 - 1), torch.ones(4)),
            "expected")
    refused("reduce_scatter_tensor, input too small",
            lambda: dist.reduce_scatter_tensor(torch.empty(4), torch.ones(n * 4 - 1)),
            "expected")
    refused("all_to_all_single, uneven without splits",
            lambda: dist.all_to_all_single(torch.empty(n * 2 + 1), torch.ones(n * 2 + 1)),
            "split evenly")

    def complex_sum():
        # torch hands a complex SUM to the backend as its real view (float64).
        t = torch.full((3,), complex(c.rank, 1), dtype=torch.complex128)
        dist.all_reduce(t)
        c.same("complex all_reduce (real view)", torch.view_as_real(t),
               torch.view_as_real(torch.full((3,), complex(n * (n - 1) / 2, n),
                                             dtype=torch.complex128)))
    c.run("complex", complex_sum)

    def monitored_barrier_inside_coalescing():
        # Caught inside the block: torch's coalescing manager has no finally,
        # so the block must end normally for the group to leave coalescing.
        with _coalescing_manager(device=torch.device("cpu")):
            refused("monitored_barrier inside a coalescing block",
                    lambda: dist.monitored_barrier(timeout=datetime.timedelta(seconds=5)),
                    "monitored_barrier inside a coalescing block")
    c.run("monitored_barrier inside coalescing", monitored_barrier_inside_coalescing)

    def still_works():
        t = torch.ones(5)
        dist.all_reduce(t)
        c.same("all_reduce after refused calls", t, torch.full((5,), float(n)))
    c.run("after refusals", still_works)


def check_subgroups(c):
    n = c.size
    if n < 3:
        return
    members = [0, n - 1]
    group = dist.new_group(members, backend="loom")

    def in_group():
        if c.rank in members:
            t = torch.full((3,), float(c.rank + 1))
            dist.all_reduce(t, group=group)
            c.same("subgroup all_reduce", t, torch.full((3,), float(1 + n)))
    c.run("subgroup", in_group)


def check_split_group(c):
    """dist.split_group: evens and odds; then one group of the last and first
    rank, in that order, which the others are not in."""
    n = c.size
    halves = [list(range(0, n, 2)), list(range(1, n, 2))] if n > 1 else [[0]]
    mine = halves[c.rank % 2]
    sub = dist.split_group(split_ranks=halves)

    def in_halves():
        t = torch.full((5,), float(c.rank + 1))
        dist.all_reduce(t, group=sub)
        c.same("split_group all_reduce", t, torch.full((5,), float(sum(r + 1 for r in mine))))
        c.same("split_group rank", torch.tensor(dist.get_rank(sub)),
               torch.tensor(mine.index(c.rank)))
    c.run("split_group", in_halves)
    if n < 3:
        return
    pair = [n - 1, 0]
    only = dist.split_group(split_ranks=[pair])

    def in_pair():
        if c.rank not in pair:
            if only != dist.GroupMember.NON_GROUP_MEMBER:
                c.failures.append(f"rank {c.rank}: split_group gave a group to a non-member")
            return
        t = torch.tensor([float(c.rank)])
        dist.broadcast(t, group_src=0, group=only)  # group rank 0 is world rank n - 1
        c.same("split_group broadcast from its first rank", t, torch.tensor([float(n - 1)]))
    c.run("split_group of two", in_pair)


def run_checks(rank, size):
    c = Checker(rank, size)
    gloo = dist.new_group(backend="gloo")
    check_all_reduce(c, gloo)
    check_movement(c, gloo)
    check_point_to_point(c)
    check_refusals(c)
    check_subgroups(c)
    check_split_group(c)
    dist.barrier()
    return c.failures


def run_spawned(rank, size, init_file, report_dir):
    """mp.spawn's entry: a file:// store, results written to report_dir/rank."""
    dist.init_process_group("loom", init_method=f"file://{init_file}", rank=rank,
                            world_size=size, timeout=datetime.timedelta(seconds=60))
    failures = run_checks(rank, size)
    dist.destroy_process_group()
    with open(os.path.join(report_dir, str(rank)), "w") as f:
        f.write("\n".join(failures))


def main():
    """Under torchrun: env:// (TCPStore); exits non-zero when any check failed."""
    dist.init_process_group("loom", timeout=datetime.timedelta(seconds=60))
    failures = run_checks(dist.get_rank(), dist.get_world_size())
    dist.destroy_process_group()
    print("\n".join(failures) if failures else "torch_rank: all checks passed", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()


def run_dead_peer(rank, size, init_file, report_dir):
    """Rank 1 leaves without a word; rank 0's next all_reduce must fail, naming it."""
    dist.init_process_group("loom", init_method=f"file://{init_file}", rank=rank,
                            world_size=size, timeout=datetime.timedelta(seconds=10))
    if rank == 1:
        os._exit(0)  # no destroy_process_group: a crash, as far as the peers can tell
    started = datetime.datetime.now()
    try:
        dist.all_reduce(torch.ones(1000))
        outcome = "all_reduce succeeded without its peer"
    except Exception as e:  # noqa: BLE001  the test checks the type and the message
        seconds = (datetime.datetime.now() - started).total_seconds()
        outcome = f"{type(e).__name__} after {seconds:.1f} s: {e}"
    with open(os.path.join(report_dir, "dead_peer"), "w") as f:
        f.write(outcome)
    os._exit(0)  # the group cannot be destroyed cleanly with a peer gone


def run_shrink(rank, size, init_file, report_dir):
    """The last rank dies (SIGKILL) after a few all_reduces; the others see an
    error naming it, shrink the default group with SHRINK_ABORT, and go on:
    an all_reduce and a broadcast on the shrunk group, checked. Each survivor
    writes report_dir/shrink.RANK: "ok ..." or what went wrong."""
    try:
        shrink_and_go_on(rank, size, init_file, report_dir)
    except Exception:  # noqa: BLE001  the report carries it to the test
        with open(os.path.join(report_dir, f"shrink.{rank}"), "w") as f:
            f.write(traceback.format_exc())
    os._exit(0)


def shrink_and_go_on(rank, size, init_file, report_dir):
    dist.init_process_group("loom", init_method=f"file://{init_file}", rank=rank,
                            world_size=size, timeout=datetime.timedelta(seconds=30))
    victim = size - 1
    error = None
    for step in range(1000):
        if rank == victim and step == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            dist.all_reduce(torch.ones(256))
        except Exception as e:  # noqa: BLE001  the test checks the message below
            error = f"{type(e).__name__}: {e}"
            break
    outcome = []
    if error is None:
        outcome.append("the death went unnoticed")
    elif f"rank {victim}" not in error and "revoked" not in error:
        outcome.append(f"the error does not name rank {victim}: {error}")
    started = time.monotonic()
    dist.shrink_group([victim], shrink_flags=dist.distributed_c10d.SHRINK_ABORT)
    shrink_seconds = time.monotonic() - started
    if (dist.get_rank(), dist.get_world_size()) != (rank, size - 1):
        outcome.append(f"shrunk to rank {dist.get_rank()} of {dist.get_world_size()}")
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t)
    want = float(sum(range(1, size)))
    if not torch.equal(t, torch.full((5,), want)):
        outcome.append(f"all_reduce after the shrink gave {t.tolist()}, want {want}")
    b = torch.tensor([float(rank)])
    dist.broadcast(b, src=size - 2)
    if b.item() != size - 2:
        outcome.append(f"broadcast after the shrink gave {b.item()}")
    with open(os.path.join(report_dir, f"shrink.{rank}"), "w") as f:
        f.write("\n".join(outcome) if outcome else f"ok, shrink took {shrink_seconds:.3f} s")
    dist.destroy_process_group()


def run_abort(rank, size, init_file, report_dir):
    """Rank 0 waits in an all_reduce rank 1 joins only 5 s later; another thread
    of rank 0 aborts the group after 0.5 s, which must end the wait at once."""
    dist.init_process_group("loom", init_method=f"file://{init_file}", rank=rank,
                            world_size=size, timeout=datetime.timedelta(seconds=30))
    if rank == 1:
        time.sleep(5)
        os._exit(0)
    aborter = threading.Timer(0.5, lambda: dist.distributed_c10d._abort_process_group())
    aborter.start()
    started = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1000))
        outcome = "all_reduce succeeded although rank 1 never called it"
    except Exception as e:  # noqa: BLE001  the test checks the type and the time
        outcome = f"{type(e).__name__} after {time.monotonic() - started:.1f} s: {e}"
    aborter.join()
    with open(os.path.join(report_dir, "abort"), "w") as f:
        f.write(outcome)
    os._exit(0)


def run_monitored(rank, size, init_file, report_dir):
    """monitored_barrier with its own short timeout (the group's is 60 s).
    Round A: rank 2 stays away; rank 0 (wait_all_ranks) names it within the
    barrier's 2 s, and rank 1, left waiting for rank 0's release, names rank 0.
    Round B: ranks 1 and 2 stay away; without wait_all_ranks rank 0 names the
    first only. The group then still works: a barrier and a clean shutdown.
    Each rank writes report_dir/monitored.RANK."""
    dist.init_process_group("loom", init_method=f"file://{init_file}", rank=rank,
                            world_size=size, timeout=datetime.timedelta(seconds=60))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))  # all come: passes
    lines = []

    def attempt(name, wait_all):
        started = time.monotonic()
        try:
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=2), wait_all_ranks=wait_all)
            lines.append(f"{name}: passed")
        except Exception as e:  # noqa: BLE001  the test checks the type and the message
            lines.append(f"{name}: {type(e).__name__} after {time.monotonic() - started:.1f} s: {e}")

    if rank != 2:
        attempt("A", True)
    if rank == 0:
        attempt("B", False)
    with open(os.path.join(report_dir, f"monitored.{rank}"), "w") as f:
        f.write("\n".join(lines))
    dist.barrier()
    dist.destroy_process_group()
