"""loom.Comm: Loom's collectives on numpy arrays and other buffer-protocol objects.

Everything is checked in Python before the C call, so that a mistake shows up as
a ValueError naming the buffer at fault rather than as a hang on the peers. The
library's own failures become LoomError with the library's message.

numpy is optional: it is never imported here, only recognised when the caller
has already imported it (an array can only exist if numpy is loaded).
"""

import contextlib
import ctypes
import sys
import threading

from loom import _capi

SUM = "sum"
PROD = "prod"
MAX = "max"
MIN = "min"
AVG = "avg"
OPS = (SUM, PROD, MAX, MIN, AVG)

UNIQUE_ID_BYTES = _capi.UNIQUE_ID_BYTES


class LoomError(RuntimeError):
    """A failed Loom call: .code is the loomResult_t value, .message Loom's text."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = int(code)
        self.message = message

    def __reduce__(self):
        # The default would call LoomError(message) and lose the code.
        return (type(self), (self.code, self.message))


def _check(result, handle):
    if result != _capi.SUCCESS:
        raise LoomError(result, _capi.last_error(handle) or _capi.error_string(result))


# ---- Buffers ---------------------------------------------------------------

# (numpy dtype kind, item size) -> (loomDataType_t, name). numpy has no bfloat16.
_TYPES = {
    ("i", 1): (_capi.INT8, "int8"),
    ("u", 1): (_capi.UINT8, "uint8"),
    ("i", 4): (_capi.INT32, "int32"),
    ("u", 4): (_capi.UINT32, "uint32"),
    ("i", 8): (_capi.INT64, "int64"),
    ("u", 8): (_capi.UINT64, "uint64"),
    ("f", 2): (_capi.FLOAT16, "float16"),
    ("f", 4): (_capi.FLOAT32, "float32"),
    ("f", 8): (_capi.FLOAT64, "float64"),
}

# struct-module format characters; sizes come from the buffer's itemsize, since
# 'l' is 8 bytes natively but 4 in the standard ('<', '=') sizes.
_FORMAT_KINDS = {
    "b": "i", "h": "i", "i": "i", "l": "i", "q": "i", "n": "i",
    "B": "u", "H": "u", "I": "u", "L": "u", "Q": "u", "N": "u",
    "e": "f", "f": "f", "d": "f",
}

_SUPPORTED = ", ".join(name for _, name in _TYPES.values())


class _Buffer:
    """A contiguous buffer as the C API sees it, plus what keeps its memory alive."""

    __slots__ = ("ptr", "count", "type", "type_name", "keep")

    def __init__(self, ptr, count, loom_type, type_name, keep):
        self.ptr = ptr
        self.count = count
        self.type = loom_type
        self.type_name = type_name
        self.keep = keep


def _native_order(char):
    return char in "@=" or char == ("<" if sys.byteorder == "little" else ">")


def _numpy_buffer(array, what, writable):
    dtype = array.dtype
    if dtype.byteorder != "|" and not _native_order(dtype.byteorder):
        raise ValueError(f"{what} has non-native byte order ({dtype}); use "
                         f"{what}.astype({dtype.newbyteorder('=')!s}) first")
    mapped = _TYPES.get((dtype.kind, dtype.itemsize))
    if mapped is None:
        raise ValueError(f"{what} has dtype {dtype}, which Loom does not support "
                         f"(supported: {_SUPPORTED})")
    if not array.flags.c_contiguous:
        raise ValueError(f"{what} is not C-contiguous (shape {array.shape}, strides "
                         f"{array.strides}); pass numpy.ascontiguousarray({what}) and copy "
                         "the result back if needed")
    if writable and not array.flags.writeable:
        raise ValueError(f"{what} is read-only but Loom writes into it")
    ptr = array.__array_interface__["data"][0]
    return _Buffer(ptr, array.size, mapped[0], mapped[1], array)


def _memoryview_format(view, what):
    fmt = view.format
    order, code = (fmt[0], fmt[1:]) if fmt[:1] in ("@", "=", "<", ">", "!") else ("@", fmt)
    kind = _FORMAT_KINDS.get(code)
    mapped = _TYPES.get((kind, view.itemsize)) if kind else None
    if mapped is None:
        raise ValueError(f"{what} has buffer format {fmt!r} (item size {view.itemsize}), which "
                         f"Loom does not support (supported: {_SUPPORTED})")
    if not _native_order(order):
        raise ValueError(f"{what} has non-native byte order (buffer format {fmt!r})")
    return mapped


def _generic_buffer(obj, what, writable):
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{what} must be a numpy array or a buffer-protocol object, not "
                        f"{type(obj).__name__}") from None
    loom_type, type_name = _memoryview_format(view, what)
    if not view.c_contiguous:
        raise ValueError(f"{what} is not C-contiguous (shape {view.shape}, strides "
                         f"{view.strides}); copy it into a contiguous buffer first")
    if writable and view.readonly:
        raise ValueError(f"{what} is read-only but Loom writes into it")
    count = view.nbytes // view.itemsize
    raw = view.cast("B") if view.ndim != 1 or view.format != "B" else view
    if view.readonly:
        # ctypes can only take the address of writable memory; the library only
        # reads a send buffer, so a private copy is equivalent.
        holder = (ctypes.c_char * view.nbytes).from_buffer_copy(raw)
    else:
        holder = (ctypes.c_char * view.nbytes).from_buffer(raw)
    return _Buffer(ctypes.addressof(holder), count, loom_type, type_name, (view, raw, holder))


def _buffer(obj, what, writable):
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.ndarray):
        return _numpy_buffer(obj, what, writable)
    return _generic_buffer(obj, what, writable)


def _same_type(a, a_name, b, b_name):
    if a.type != b.type:
        raise ValueError(f"{a_name} is {a.type_name} but {b_name} is {b.type_name}; "
                         "they must have the same element type")


def _need_count(buf, what, expected, why):
    if buf.count != expected:
        raise ValueError(f"{what} has {buf.count} elements but {why} needs {expected}")


def _op_code(op):
    code = _capi.RED_OPS.get(op) if isinstance(op, str) else None
    if code is None:
        raise ValueError(f"op {op!r} is not one of {', '.join(repr(o) for o in OPS)}")
    return code


def _int_arg(value, what):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return value.__index__()


# ---- Groups ----------------------------------------------------------------

_group_state = threading.local()


def _group_depth():
    return getattr(_group_state, "depth", 0)


def _keep_until_group_end(*buffers):
    # Queued calls hold raw pointers until loomGroupEnd; the Python objects (and
    # any private copies) must outlive them.
    if _group_depth() > 0:
        _group_state.keep.extend(buffers)


@contextlib.contextmanager
def group():
    """Queues the Loom calls made in the block (on this thread) and runs them together on exit.

    Sends and receives inside one group progress together, so exchanges such as
    a ring shift cannot deadlock. Buffers must not be touched until the block ends.
    """
    outermost = _group_depth() == 0
    if outermost:
        _group_state.keep = []
    _check(_capi.lib.loomGroupStart(), None)
    _group_state.depth = _group_depth() + 1
    try:
        yield
    finally:
        _group_state.depth -= 1
        # Even after an error in the block: otherwise this thread's later calls
        # would stay queued forever.
        result = _capi.lib.loomGroupEnd()
        if outermost:
            _group_state.keep = []
    _check(result, None)


# ---- Communicator ----------------------------------------------------------


def get_unique_id():
    """A new rendezvous id (128 bytes) to hand to every rank's Comm(unique_id, nranks, rank).

    The rendezvous listener runs in this process, so it must stay alive until
    every rank has joined.
    """
    uid = _capi.UniqueId()
    _check(_capi.lib.loomGetUniqueId(ctypes.byref(uid)), None)
    return bytes(uid)


def _unique_id_struct(unique_id):
    if isinstance(unique_id, str):
        raise TypeError("unique_id must be bytes (get_unique_id()); for a hex string use "
                        "bytes.fromhex(...)")
    try:
        raw = bytes(memoryview(unique_id))
    except TypeError:
        raise TypeError(f"unique_id must be bytes, not {type(unique_id).__name__}") from None
    if len(raw) != UNIQUE_ID_BYTES:
        raise ValueError(f"unique_id has {len(raw)} bytes but must have {UNIQUE_ID_BYTES}")
    return _capi.UniqueId.from_buffer_copy(raw)


class Comm:
    """A Loom communicator over host buffers (numpy arrays or buffer-protocol objects).

    Create it with Comm.from_env() under a launcher (loomrun, torchrun, mpirun,
    Slurm), or with Comm(unique_id, nranks, rank) where one process called
    get_unique_id() and shared the bytes. Every rank must make the same calls in
    the same order. Collectives return their result buffer.
    """

    def __init__(self, unique_id, nranks, rank):
        uid = _unique_id_struct(unique_id)
        nranks = _int_arg(nranks, "nranks")
        rank = _int_arg(rank, "rank")
        handle = ctypes.c_void_p()
        _check(_capi.lib.loomCommInitRank(ctypes.byref(handle), nranks, uid, rank), None)
        self._adopt(handle.value)

    @classmethod
    def from_env(cls):
        """Joins the world the launcher's environment describes (docs/launching.md)."""
        handle = ctypes.c_void_p()
        _check(_capi.lib.loomCommInitFromEnv(ctypes.byref(handle)), None)
        comm = cls.__new__(cls)
        comm._adopt(handle.value)
        return comm

    def _adopt(self, handle):
        self._handle = handle
        rank, size = ctypes.c_int(), ctypes.c_int()
        _check(_capi.lib.loomCommUserRank(handle, ctypes.byref(rank)), handle)
        _check(_capi.lib.loomCommCount(handle, ctypes.byref(size)), handle)
        self._rank = rank.value
        self._size = size.value

    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    @property
    def closed(self):
        return self._handle is None

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return f"<loom.Comm rank {self._rank} of {self._size}, {state}>"

    def _live(self):
        if self._handle is None:
            raise LoomError(_capi.INVALID_USAGE,
                            "loom.Comm: the communicator was destroyed or aborted")
        return self._handle

    def _run(self, fn, *args, keep=()):
        handle = self._live()
        _keep_until_group_end(*keep)
        _check(fn(*args, handle, None), handle)

    # -- lifetime --

    def destroy(self):
        """Frees the communicator; later calls raise LoomError. Safe to call twice."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _check(_capi.lib.loomCommDestroy(handle), handle)

    close = destroy

    def abort(self):
        """Frees the communicator at once, waking calls blocked on it in other threads.

        Peers learn of it as a failure instead of waiting for LOOM_TIMEOUT.
        """
        handle, self._handle = self._handle, None
        if handle is not None:
            _check(_capi.lib.loomCommAbort(handle), handle)

    # -- recovery (docs/reliability.md, "Shrink" and "Grow") --

    def revoke(self):
        """Every live rank's calls on this communicator raise LoomError (code REVOKED)."""
        _check(_capi.lib.loomCommRevoke(self._live()), self._handle)

    def shrink(self, exclude=(), abort=False):
        """The survivors' communicator, after a failure: a new Comm without the ranks
        in `exclude` and those that died, destroyed this one or stayed silent for one
        LOOM_TIMEOUT; the rest are renumbered in order. `abort` revokes this one first.
        This Comm stays open until destroyed.
        """
        handle = self._live()
        ranks = [_int_arg(r, "excluded rank") for r in exclude]
        array = (ctypes.c_int * max(len(ranks), 1))(*ranks)
        new = ctypes.c_void_p()
        _check(_capi.lib.loomCommShrink(handle, array, len(ranks), ctypes.byref(new),
                                        1 if abort else 0), handle)
        return Comm._wrap(new.value)

    def grow_id(self):
        """On one member: starts the rendezvous new ranks grow this communicator through,
        and returns its id (bytes) to hand to them (Comm.join_grown)."""
        uid = _capi.UniqueId()
        _check(_capi.lib.loomCommGetUniqueId(self._live(), ctypes.byref(uid)), self._handle)
        return bytes(uid)

    def grow(self, nranks):
        """On every member: this communicator with new ranks above the old size."""
        handle = self._live()
        new = ctypes.c_void_p()
        _check(_capi.lib.loomCommGrow(handle, _int_arg(nranks, "nranks"), None, -1,
                                      ctypes.byref(new)), handle)
        return Comm._wrap(new.value)

    @classmethod
    def join_grown(cls, unique_id, nranks, rank):
        """On a new rank: joins the grown communicator as `rank` through grow_id()'s id."""
        uid = _unique_id_struct(unique_id)
        new = ctypes.c_void_p()
        _check(_capi.lib.loomCommGrow(None, _int_arg(nranks, "nranks"), ctypes.byref(uid),
                                      _int_arg(rank, "rank"), ctypes.byref(new)), None)
        return cls._wrap(new.value)

    @classmethod
    def _wrap(cls, handle):
        comm = cls.__new__(cls)
        comm._adopt(handle)
        return comm

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # After an error the ranks' call sequences may no longer match; aborting
        # tells peers now instead of leaving them blocked until LOOM_TIMEOUT.
        if exc_type is None:
            self.destroy()
        else:
            self.abort()

    # -- reductions --

    def all_reduce(self, send, recv=None, op=SUM):
        """recv[i] = op over ranks of send[i]; in place when recv is None. Returns the result."""
        code = _op_code(op)
        s = _buffer(send, "send" if recv is not None else "send (in place: recv is None)",
                    writable=recv is None)
        r = s if recv is None else _buffer(recv, "recv", writable=True)
        if recv is not None:
            _same_type(s, "send", r, "recv")
            _need_count(r, "recv", s.count, f"all_reduce of {s.count} elements")
        self._run(_capi.lib.loomAllReduce, s.ptr, r.ptr, s.count, s.type, code, keep=(s, r))
        return send if recv is None else recv

    def reduce_scatter(self, send, recv, op=SUM):
        """Rank r's recv = op over ranks of block r of send (size * recv's count elements)."""
        code = _op_code(op)
        r = _buffer(recv, "recv", writable=True)
        s = _buffer(send, "send", writable=False)
        _same_type(s, "send", r, "recv")
        _need_count(s, "send", self.size * r.count,
                    f"reduce_scatter over {self.size} ranks into {r.count} elements")
        self._run(_capi.lib.loomReduceScatter, s.ptr, r.ptr, r.count, r.type, code, keep=(s, r))
        return recv

    def reduce(self, send, recv=None, op=SUM, root=0):
        """Reduces into root's recv (in place in send when recv is None); others' recv untouched."""
        code = _op_code(op)
        root = _int_arg(root, "root")
        on_root = self.rank == root
        s = _buffer(send, "send", writable=recv is None and on_root)
        r = s
        if recv is not None:
            r = _buffer(recv, "recv", writable=True)
            _same_type(s, "send", r, "recv")
            _need_count(r, "recv", s.count, f"reduce of {s.count} elements")
        self._run(_capi.lib.loomReduce, s.ptr, r.ptr, s.count, s.type, code, root, keep=(s, r))
        return send if recv is None else recv

    # -- data movement --

    def all_gather(self, send, recv):
        """recv holds size * send's count elements, rank r's send at block r."""
        s = _buffer(send, "send", writable=False)
        r = _buffer(recv, "recv", writable=True)
        _same_type(s, "send", r, "recv")
        _need_count(r, "recv", self.size * s.count,
                    f"all_gather of {s.count} elements from {self.size} ranks")
        self._run(_capi.lib.loomAllGather, s.ptr, r.ptr, s.count, s.type, keep=(s, r))
        return recv

    def broadcast(self, buf, root=0):
        """Copies root's buf into every rank's buf, in place."""
        root = _int_arg(root, "root")
        b = _buffer(buf, "buf", writable=self.rank != root)
        self._run(_capi.lib.loomBroadcast, b.ptr, b.ptr, b.count, b.type, root, keep=(b,))
        return buf

    def all_to_all(self, send, recv):
        """Block j of send goes to rank j, landing at block (this rank) of its recv."""
        s = _buffer(send, "send", writable=False)
        r = _buffer(recv, "recv", writable=True)
        _same_type(s, "send", r, "recv")
        if s.count % self.size != 0:
            raise ValueError(f"send has {s.count} elements, which is not a multiple of the "
                             f"{self.size} ranks all_to_all splits it among")
        _need_count(r, "recv", s.count, f"all_to_all of {s.count} elements")
        count = s.count // self.size
        self._run(_capi.lib.loomAllToAll, s.ptr, r.ptr, count, s.type, keep=(s, r))
        return recv

    def gather(self, send, recv=None, root=0):
        """Root's recv (size * send's count elements) receives every rank's send.

        recv is ignored, and may be None, on the other ranks.
        """
        root = _int_arg(root, "root")
        s = _buffer(send, "send", writable=False)
        r_ptr, r = None, None
        if self.rank == root:
            if recv is None:
                raise ValueError("gather: recv is None on the root")
            r = _buffer(recv, "recv", writable=True)
            _same_type(s, "send", r, "recv")
            _need_count(r, "recv", self.size * s.count,
                        f"gather of {s.count} elements from {self.size} ranks")
            r_ptr = r.ptr
        self._run(_capi.lib.loomGather, s.ptr, r_ptr, s.count, s.type, root, keep=(s, r))
        return recv

    def scatter(self, send, recv, root=0):
        """Rank r's recv receives block r of root's send (size * recv's count elements).

        send is ignored, and may be None, on the other ranks.
        """
        root = _int_arg(root, "root")
        r = _buffer(recv, "recv", writable=True)
        s_ptr, s = None, None
        if self.rank == root:
            if send is None:
                raise ValueError("scatter: send is None on the root")
            s = _buffer(send, "send", writable=False)
            _same_type(s, "send", r, "recv")
            _need_count(s, "send", self.size * r.count,
                        f"scatter of {r.count} elements to {self.size} ranks")
            s_ptr = s.ptr
        self._run(_capi.lib.loomScatter, s_ptr, r.ptr, r.count, r.type, root, keep=(s, r))
        return recv

    # -- point to point --

    def send(self, buf, peer):
        """Sends buf to peer, which must call recv with the same count and type.

        Blocks until the transfer is done; use loom.group() to pair sends and
        receives that would otherwise wait on each other.
        """
        peer = _int_arg(peer, "peer")
        b = _buffer(buf, "buf", writable=False)
        self._run(_capi.lib.loomSend, b.ptr, b.count, b.type, peer, keep=(b,))

    def recv(self, buf, peer):
        """Receives into buf what peer sends; returns buf."""
        peer = _int_arg(peer, "peer")
        b = _buffer(buf, "buf", writable=True)
        self._run(_capi.lib.loomRecv, b.ptr, b.count, b.type, peer, keep=(b,))
        return buf

    def barrier(self):
        """Returns on each rank once every rank has called it."""
        # The C API has no barrier; a one-element all-reduce needs every rank's input.
        token = ctypes.c_int32(0)
        ptr = ctypes.addressof(token)
        self._run(_capi.lib.loomAllReduce, ptr, ptr, 1, _capi.INT32, _capi.RED_OPS[SUM],
                  keep=(token,))
