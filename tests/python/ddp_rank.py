"""One rank of the DDP checks (test_ddp_hooks.py): the same small model and
data trained 50 steps four ways, its final parameters and losses written out."""
import datetime
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import loom.torch  # noqa: F401
from loom.torch import hooks

STEPS = 50


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(16, 32, generator=g)
    # A fixed teacher makes the loss fall, so a broken hook shows in the loss too.
    y = 0.5 * x[:, :8] - 0.3 * x[:, 8:16]
    return x, y


def train(rank, group, hook=None, state=None):
    model = DistributedDataParallel(make_model(), process_group=group)
    if hook is not None:
        model.register_comm_hook(state, hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(STEPS):
        x, y = batch(rank, step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return flat, losses


def run(rank, size, store, out_dir):
    dist.init_process_group("loom", init_method=f"file://{store}", rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    results = {
        "loom": train(rank, None),
        "gloo": train(rank, gloo),
        "int8": train(rank, None, hooks.int8_hook, hooks.CompressionState()),
        "topk": train(rank, None, hooks.topk_hook, hooks.CompressionState(ratio=0.1)),
    }
    torch.save(results, os.path.join(out_dir, f"{rank}.pt"))
    dist.destroy_process_group()
