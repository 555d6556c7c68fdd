"""Loom collectives from Python.

loom.Comm works on numpy arrays and any C-contiguous buffer-protocol object and
needs neither torch nor numpy; the torch integration lives in the loom.torch
subpackage and is only imported on request.
"""

from loom import _capi
from loom.comm import AVG
from loom.comm import Comm
from loom.comm import get_unique_id
from loom.comm import group
from loom.comm import LoomError
from loom.comm import MAX
from loom.comm import MIN
from loom.comm import OPS
from loom.comm import PROD
from loom.comm import SUM
from loom.comm import UNIQUE_ID_BYTES

# Error codes a recovering program tells apart (LoomError.code).
INVALID_USAGE = _capi.INVALID_USAGE
REMOTE_ERROR = _capi.REMOTE_ERROR
REVOKED = _capi.REVOKED

__all__ = [
    "AVG",
    "Comm",
    "get_unique_id",
    "group",
    "INVALID_USAGE",
    "LoomError",
    "MAX",
    "MIN",
    "OPS",
    "PROD",
    "REMOTE_ERROR",
    "REVOKED",
    "SUM",
    "UNIQUE_ID_BYTES",
    "version",
]


def version():
    """Version of the loaded libloom, as "major.minor.patch"."""
    code = _capi.version_code()
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
