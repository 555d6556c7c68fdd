"""torch.distributed with the "loom" backend, 2 and 4 processes, started by
mp.spawn and by torchrun: every check of torch_rank.py on every rank."""
import os
import subprocess
import sys
import tempfile

import pytest
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch_rank  # noqa: E402


@pytest.mark.parametrize("size", [2, 4])
def test_spawned_ranks_pass_every_check(size):
    with tempfile.TemporaryDirectory() as work:
        mp.spawn(torch_rank.run_spawned, args=(size, os.path.join(work, "store"), work),
                 nprocs=size, join=True)
        failures = []
        for rank in range(size):
            with open(os.path.join(work, str(rank))) as f:
                text = f.read()
            if text:
                failures.append(text)
    assert not failures, "\n".join(failures)


def test_torchrun_ranks_pass_every_check():
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "2", os.path.join(HERE, "torch_rank.py")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.count("all checks passed") == 2, done.stdout[-4000:]


def test_backend_registers_on_import_and_through_the_entry_point():
    # A fresh interpreter that never imports loom: torch's entry points load it.
    code = ("import torch.distributed as d; "
            "print('loom' in d.Backend.backend_list)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "True", done.stdout + done.stderr


def test_a_dead_peer_is_an_error_naming_it_not_a_hang():
    with tempfile.TemporaryDirectory() as work:
        mp.spawn(torch_rank.run_dead_peer, args=(2, os.path.join(work, "store"), work), nprocs=2,
                 join=True)
        with open(os.path.join(work, "dead_peer")) as f:
            outcome = f.read()
    assert outcome.startswith("DistBackendError"), outcome
    assert "rank 1" in outcome, outcome
    seconds = float(outcome.split(" after ")[1].split(" s")[0])
    assert seconds < 10, outcome  # well within the group's timeout


def test_abort_ends_a_call_waiting_for_a_peer():
    with tempfile.TemporaryDirectory() as work:
        mp.spawn(torch_rank.run_abort, args=(2, os.path.join(work, "store"), work), nprocs=2,
                 join=True)
        with open(os.path.join(work, "abort")) as f:
            outcome = f.read()
    assert "DistBackendError" in outcome or "RuntimeError" in outcome, outcome
    seconds = float(outcome.split(" after ")[1].split(" s:")[0])
    assert seconds < 3, outcome
    print(outcome)


def test_survivors_shrink_the_group_after_a_rank_dies():
    """dist.shrink_group on the loom backend: 3 ranks, the last one killed."""
    size = 3
    with tempfile.TemporaryDirectory() as work:
        context = mp.start_processes(torch_rank.run_shrink,
                                     args=(size, os.path.join(work, "store"), work),
                                     nprocs=size, join=False, start_method="spawn")
        # The victim dies of SIGKILL on purpose: wait for every process, then
        # judge by the survivors' reports.
        for process in context.processes:
            process.join(timeout=120)
            assert not process.is_alive(), "a rank did not finish within 120 s"
        reports = {}
        for rank in range(size - 1):
            path = os.path.join(work, f"shrink.{rank}")
            reports[rank] = open(path).read() if os.path.exists(path) else "no report"
    for rank, text in reports.items():
        assert text.startswith("ok"), f"rank {rank}: {text}"
        print(f"rank {rank}: {text}")


def test_monitored_barrier_names_who_did_not_come_within_its_own_timeout():
    with tempfile.TemporaryDirectory() as work:
        mp.spawn(torch_rank.run_monitored, args=(3, os.path.join(work, "store"), work), nprocs=3,
                 join=True)
        reports = {}
        for rank in (0, 1):
            with open(os.path.join(work, f"monitored.{rank}")) as f:
                reports[rank] = dict(line.split(": ", 1) for line in f.read().splitlines())
    print(reports)
    a0, b0, a1 = reports[0]["A"], reports[0]["B"], reports[1]["A"]
    for outcome in (a0, b0, a1):
        assert outcome.startswith("DistBackendError after "), outcome
        seconds = float(outcome.split(" after ")[1].split(" s:")[0])
        assert 1.5 < seconds < 6, outcome  # the barrier's 2 s, not the group's 60
    assert "rank(s) 2 did not reach it within 2000 ms" in a0, a0
    assert "rank 0 did not release it" in a1, a1
    assert "rank(s) 1 did not reach it" in b0 and "wait_all_ranks=True" in b0, b0
