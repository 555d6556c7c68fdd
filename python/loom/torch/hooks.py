"""DDP communication hooks that average gradients with Loom's in-flight
compression (docs/compression.md), for any model in one line:

    state = loom.torch.hooks.CompressionState()          # error feedback on
    model.register_comm_hook(state, loom.torch.hooks.int8_hook)
    model.register_comm_hook(loom.torch.hooks.CompressionState(ratio=0.01),
                             loom.torch.hooks.topk_hook)

The process group must use the "loom" backend. Each bucket's residual (what
the codec dropped of this rank's gradient) is kept by the backend and added
back at the bucket's next step.
"""
import torch
import torch.distributed as dist

from loom.torch import _C

_INT8 = 1
_TOPK = 2


class CompressionState:
    """What a hook needs: the group, the codec's settings, error feedback."""

    def __init__(self, process_group=None, block=256, ratio=0.01, error_feedback=True):
        self.process_group = process_group
        self.block = block
        self.ratio = ratio
        self.error_feedback = error_feedback


def _average(state, bucket, kind):
    group = state.process_group if state.process_group is not None else dist.group.WORLD
    backend = group._get_backend(torch.device("cpu"))
    tensor = bucket.buffer()
    _C.compressed_average(backend, tensor, kind, state.block, state.ratio,
                          state.error_feedback, bucket.index())
    future = torch.futures.Future()
    future.set_result(tensor)
    return future


def int8_hook(state, bucket):
    """Block-wise int8 (one fp32 scale per `state.block` values): a quarter of the bytes."""
    return _average(state, bucket, _INT8)


def topk_hook(state, bucket):
    """The `state.ratio` largest-magnitude values of each chunk, with their indices."""
    return _average(state, bucket, _TOPK)
