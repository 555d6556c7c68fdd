"""Loom as a torch.distributed backend: ``init_process_group("loom")``.

Importing this module registers the backend "loom" for CPU tensors. Each
process group gets its own Loom communicator, bootstrapped from the store
torch hands the backend (torchrun's TCPStore, ``env://``, ``file://``,
``tcp://``). See docs/python.md for what runs and what does not yet.
"""
import torch.distributed as _dist

from loom.torch import _C

BACKEND_NAME = "loom"


def _create_backend(store, rank, size, timeout):
    return _C.create_backend(store, rank, size, timeout)


def _register():
    # A second import (or the entry point after an explicit import) must not fail.
    if BACKEND_NAME in _dist.Backend.backend_list:
        return
    _dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["cpu"])


_register()
