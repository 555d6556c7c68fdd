#!/usr/bin/env python3
"""PyTorch's NCCL backend on Loom's NCCL shim, for a GPU machine.

Run with the shim preloaded, so torch's own libnccl is never called:

    LD_PRELOAD=build/nccl/libnccl.so.2 python3 tests/nccl_compat/torch_check.py

Two processes, world size 2, both on cuda:0 (Loom allows several ranks per
GPU; NCCL itself would refuse). Each checks all-reduce, all-gather and
reduce-scatter against values it computes itself, then one DDP step whose
gradients must equal a single-process reference on the whole batch.

Exits 0 when every check passed, 1 on a wrong result or a failure, and 77
(skipped) when PyTorch with CUDA is not installed: scripts/gpu-check.sh reports
that, and never counts it as a pass.
"""
import importlib.util
import os
import socket
import sys

# Only a missing torch is a skip. With the shim preloaded, an import that fails
# (say, torch needs an NCCL symbol the shim lacks) is a failure to report.
if importlib.util.find_spec("torch") is None:
    print("SKIPPED: PyTorch is not installed")
    sys.exit(77)
try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as e:
    print(f"FAILED: torch is installed but does not import with the shim preloaded: {e}")
    sys.exit(1)

WORLD = 2


def shim_loaded():
    """True when the library in LD_PRELOAD (Loom's shim) is mapped in this process."""
    shim = os.path.realpath(os.environ.get("LD_PRELOAD", "").split(":")[0] or "/nonexistent")
    with open("/proc/self/maps") as maps:
        return any(line.rstrip().endswith(shim) for line in maps)


def check_collectives(rank, device):
    x = torch.arange(1031, dtype=torch.float32, device=device) + rank
    dist.all_reduce(x)
    want = 2 * torch.arange(1031, dtype=torch.float32, device=device) + 1
    assert torch.equal(x, want), "all_reduce"

    mine = torch.full((7,), float(rank + 1), device=device)
    gathered = [torch.empty(7, device=device) for _ in range(WORLD)]
    dist.all_gather(gathered, mine)
    for r in range(WORLD):
        assert torch.equal(gathered[r], torch.full((7,), float(r + 1), device=device)), "all_gather"

    inputs = [torch.full((5,), float(10 * rank + r), device=device) for r in range(WORLD)]
    out = torch.empty(5, device=device)
    dist.reduce_scatter(out, inputs)
    assert torch.equal(out, torch.full((5,), float(rank + 10 + rank), device=device)), "reduce_scatter"


def model_and_batch(device):
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    batch = torch.randn(8, 16)
    target = torch.randn(8, 4)
    return model.to(device), batch.to(device), target.to(device)


def check_ddp_step(rank, device):
    model, batch, target = model_and_batch(device)
    reference = [p.detach().clone() for p in model.parameters()]
    # The whole batch in one process: the gradients DDP must reproduce.
    ref_model, _, _ = model_and_batch(device)
    torch.nn.functional.mse_loss(ref_model(batch), target).backward()
    want = [p.grad.detach().clone() for p in ref_model.parameters()]

    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    half = batch.shape[0] // WORLD
    mine = slice(rank * half, (rank + 1) * half)
    torch.nn.functional.mse_loss(ddp(batch[mine]), target[mine]).backward()
    for got, expected, start in zip(ddp.module.parameters(), want, reference):
        assert torch.allclose(got.grad, expected, rtol=1e-5, atol=1e-6), "DDP gradient"
        assert torch.equal(got.detach(), start), "DDP changed a parameter before the step"


def run(rank, port, results):
    try:
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=WORLD)
        assert shim_loaded(), "libnccl.so.2 is not Loom's shim (set LD_PRELOAD)"
        check_collectives(rank, device)
        check_ddp_step(rank, device)
        dist.barrier()
        dist.destroy_process_group()
        results[rank] = "ok"
    except Exception as e:  # reported by the parent
        results[rank] = f"{type(e).__name__}: {e}"


def main():
    if not torch.cuda.is_available():
        print("SKIPPED: PyTorch has no CUDA device")
        return 77
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(run, args=(port, results), nprocs=WORLD, join=True)
    failed = False
    for rank in range(WORLD):
        outcome = results.get(rank, "no result")
        print(f"rank {rank}: {outcome}")
        failed |= outcome != "ok"
    print(f"torch {torch.__version__}, NCCL version seen: {torch.cuda.nccl.version()}")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    sys.exit(main())
