"""ctypes bindings to libloom's C API (include/loom/loom.h).

Only what the Python package uses is declared. Every prototype is spelled out so
that ctypes converts arguments exactly as the C compiler would (size_t is 64
bits, enums are int), instead of guessing from the Python values.
"""

import ctypes
import ctypes.util
import os

UNIQUE_ID_BYTES = 128

# loomResult_t: success, and the code of errors raised in Python (use after destroy).
SUCCESS = 0
INVALID_USAGE = 5
REMOTE_ERROR = 6  # a peer died, stalled past LOOM_TIMEOUT, or broke its connection
REVOKED = 9

# loomDataType_t.
INT8 = 0
UINT8 = 1
INT32 = 2
UINT32 = 3
INT64 = 4
UINT64 = 5
FLOAT16 = 6
FLOAT32 = 7
FLOAT64 = 8
BFLOAT16 = 9

# loomRedOp_t, keyed by the names the Python API accepts.
RED_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def _try_load(where, path, tried):
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        tried.append(f"{where}: {e}")
        return None


def _load_library():
    """Loads libloom from the first place that has it, in the documented order.

    LOOM_LIBRARY, when set, is the only place: a library asked for by name that
    does not load is an error, never a quiet fall back to another one."""
    tried = []
    env_path = os.environ.get("LOOM_LIBRARY")
    if env_path:
        loaded = _try_load("LOOM_LIBRARY", env_path, tried)
        if loaded is not None:
            return loaded
        raise ImportError(f"loom: LOOM_LIBRARY={env_path} does not load: {tried[0]}\n"
                          "Unset LOOM_LIBRARY to use the library installed with the package.")
    tried.append("LOOM_LIBRARY: not set")
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libloom.so.0")
    loaded = _try_load("next to the package", bundled, tried)
    if loaded is not None:
        return loaded
    # Last because find_library may run ldconfig or a compiler, which is slow.
    found = ctypes.util.find_library("loom")
    if found:
        loaded = _try_load('ctypes.util.find_library("loom")', found, tried)
        if loaded is not None:
            return loaded
    else:
        tried.append('ctypes.util.find_library("loom"): found nothing')
    raise ImportError("loom: cannot load libloom.so.0. Tried, in order:\n  " + "\n  ".join(tried) +
                      "\nSet LOOM_LIBRARY to the library's path (for example build/libloom.so.0).")


lib = _load_library()

_c_comm = ctypes.c_void_p
_c_result = ctypes.c_int
_c_size = ctypes.c_size_t
_c_ptr = ctypes.c_void_p


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_declare("loomGetVersion", _c_result, ctypes.POINTER(ctypes.c_int))
_declare("loomTypeSize", _c_size, ctypes.c_int)
_declare("loomGetErrorString", ctypes.c_char_p, _c_result)
_declare("loomGetLastError", ctypes.c_char_p, _c_comm)
_declare("loomGetUniqueId", _c_result, ctypes.POINTER(UniqueId))
_declare("loomCommInitRank", _c_result, ctypes.POINTER(_c_comm), ctypes.c_int, UniqueId,
         ctypes.c_int)
_declare("loomCommInitFromEnv", _c_result, ctypes.POINTER(_c_comm))
_declare("loomCommDestroy", _c_result, _c_comm)
_declare("loomCommAbort", _c_result, _c_comm)
_declare("loomCommRevoke", _c_result, _c_comm)
# (comm, excludeRanks, excludeCount, newcomm, flags)
_declare("loomCommShrink", _c_result, _c_comm, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
         ctypes.POINTER(_c_comm), ctypes.c_int)
_declare("loomCommGetUniqueId", _c_result, _c_comm, ctypes.POINTER(UniqueId))
# (comm, nranks, id, rank, newcomm)
_declare("loomCommGrow", _c_result, _c_comm, ctypes.c_int, ctypes.POINTER(UniqueId), ctypes.c_int,
         ctypes.POINTER(_c_comm))
_declare("loomCommCount", _c_result, _c_comm, ctypes.POINTER(ctypes.c_int))
_declare("loomCommUserRank", _c_result, _c_comm, ctypes.POINTER(ctypes.c_int))
_declare("loomGroupStart", _c_result)
_declare("loomGroupEnd", _c_result)

# (send, recv, count, type, op, comm, stream)
_declare("loomAllReduce", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int,
         _c_comm, _c_ptr)
_declare("loomReduceScatter", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int,
         _c_comm, _c_ptr)
# (send, recv, count, type, op, root, comm, stream)
_declare("loomReduce", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int,
         ctypes.c_int, _c_comm, _c_ptr)
# (send, recv, count, type, comm, stream)
_declare("loomAllGather", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, _c_comm, _c_ptr)
_declare("loomAllToAll", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, _c_comm, _c_ptr)
# (send, recv, count, type, root, comm, stream)
_declare("loomBroadcast", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int,
         _c_comm, _c_ptr)
_declare("loomGather", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int, _c_comm,
         _c_ptr)
_declare("loomScatter", _c_result, _c_ptr, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int, _c_comm,
         _c_ptr)
# (buf, count, type, peer, comm, stream)
_declare("loomSend", _c_result, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int, _c_comm, _c_ptr)
_declare("loomRecv", _c_result, _c_ptr, _c_size, ctypes.c_int, ctypes.c_int, _c_comm, _c_ptr)


def error_string(code):
    return lib.loomGetErrorString(code).decode("utf-8", "replace")


def last_error(comm):
    """The thread's last failure message; must be read on the thread that failed."""
    message = lib.loomGetLastError(comm)
    return message.decode("utf-8", "replace") if message else ""


def version_code():
    code = ctypes.c_int()
    result = lib.loomGetVersion(ctypes.byref(code))
    if result != SUCCESS:
        raise RuntimeError(f"loomGetVersion failed: {error_string(result)}")
    return code.value
