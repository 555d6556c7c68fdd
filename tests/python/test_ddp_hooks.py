"""DDP on the "loom" backend trains like DDP on Gloo, and Loom's int8 and
top-k comm hooks (loom.torch.hooks) train close to the uncompressed run."""
import os
import sys
import tempfile

import torch
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ddp_rank  # noqa: E402

SIZE = 2


def trained():
    with tempfile.TemporaryDirectory() as work:
        mp.spawn(ddp_rank.run, args=(SIZE, os.path.join(work, "store"), work), nprocs=SIZE,
                 join=True)
        return [torch.load(os.path.join(work, f"{r}.pt")) for r in range(SIZE)]


RESULTS = None


def results():
    global RESULTS
    if RESULTS is None:
        RESULTS = trained()
    return RESULTS


def relative(a, b):
    return ((a - b).norm() / b.norm()).item()


def test_loom_and_gloo_train_to_the_same_parameters():
    for rank, r in enumerate(results()):
        assert relative(r["loom"][0], r["gloo"][0]) <= 1e-6, f"rank {rank}"
        assert r["loom"][1][-1] < 0.5 * r["loom"][1][0], "the loss did not fall"


def test_every_rank_holds_the_same_parameters():
    first = results()[0]
    for r in results()[1:]:
        for run in ("loom", "int8", "topk"):
            assert torch.equal(r[run][0], first[run][0]), run


def test_compressed_hooks_train_close_to_uncompressed():
    r = results()[0]
    exact_loss = r["loom"][1][-1]
    # Measured (2 ranks, 50 steps): int8 ends 0.04 % from the exact run's
    # parameters with the same loss to 4 digits; top-k at 10 % ends 1.2 % away
    # with a loss 3.5 % higher. The limits leave room for other machines' rounding.
    assert relative(r["int8"][0], r["loom"][0]) < 5e-3
    assert abs(r["int8"][1][-1] - exact_loss) < 0.01 * exact_loss
    assert relative(r["topk"][0], r["loom"][0]) < 5e-2
    assert r["topk"][1][-1] < 0.5 * r["topk"][1][0]
    assert abs(r["topk"][1][-1] - exact_loss) < 0.10 * exact_loss
