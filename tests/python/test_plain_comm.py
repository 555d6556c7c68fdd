"""Tests of loom.Comm, the plain-Python (numpy / buffer protocol) face of Loom.

Collective results are checked by real ranks: plain_rank.py under loomrun, each
launch running one group of cases (hundreds of calls) because a launch costs
more than its collectives. Argument checks that need no peers run here, on a
one-rank communicator.

Environment: LOOM_BUILD_DIR (default <repo>/build) holds loomrun and libloom.so.0.
"""

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", REPO / "build"))
LOOMRUN = BUILD / "loomrun"
LIBRARY = BUILD / "libloom.so.0"
RANK_PROGRAM = pathlib.Path(__file__).resolve().parent / "plain_rank.py"
TIMEOUT_S = 120

if not (LOOMRUN.exists() and LIBRARY.exists()):
    raise RuntimeError(f"needs a built Loom: {LOOMRUN} and {LIBRARY} (make build, or set "
                       "LOOM_BUILD_DIR)")

# The tests use the installed package (make python), bound to this build's
# library rather than the copy the installer bundled.
os.environ.setdefault("LOOM_LIBRARY", str(LIBRARY))
import loom  # noqa: E402  pylint: disable=wrong-import-position


def child_env(**overrides):
    env = dict(os.environ)
    env["LOOM_LIBRARY"] = str(LIBRARY)
    env.update(overrides)
    return env


def run_python(code, **env):
    return subprocess.run([sys.executable, "-c", code], env=child_env(**env), capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)


def run_ranks(nranks, *groups):
    # --tag-output keeps the ranks' lines whole and says which rank wrote each.
    command = [str(LOOMRUN), "-n", str(nranks), "--tag-output", "--timeout", str(TIMEOUT_S - 10),
               sys.executable, str(RANK_PROGRAM), *groups]
    done = subprocess.run(command, env=child_env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, (f"{' '.join(command)} exited {done.returncode}\n"
                                  f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    assert done.stdout.count("checks passed") == nranks * len(groups), done.stdout


# ---- real ranks -------------------------------------------------------------

# Every collective x 9 dtypes x sizes 0, 1, 7, 100000, in place and out of place;
# reductions x sum, prod, max, min, avg. See plain_rank.py for the cases.
GROUPS = ("reductions", "movement", "p2p", "errors", "unique_id")


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("group", GROUPS)
def test_ranks(nranks, group):
    run_ranks(nranks, group)


def test_one_rank_every_group():
    run_ranks(1, *GROUPS)


# ---- the package itself -------------------------------------------------------


def test_import_needs_neither_torch_nor_numpy():
    done = run_python("import sys, loom\n"
                      "assert 'torch' not in sys.modules, 'loom imported torch'\n"
                      "assert 'numpy' not in sys.modules, 'loom imported numpy'\n"
                      "print(loom.version())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.1.0"


IMPORT_OR_SAY_WHY = ("try:\n"
                     "    import loom\n"
                     "except ImportError as e:\n"
                     "    print(e)\n"
                     "else:\n"
                     "    raise SystemExit('import succeeded from ' + loom._capi.lib._name)\n")


def bare_package(tmp_path):
    """A copy of the package without the installer's lib/ next to it."""
    package = tmp_path / "loom"
    package.mkdir()
    for module in ("__init__.py", "_capi.py", "comm.py"):
        shutil.copy(REPO / "python" / "loom" / module, package / module)
    return package


def test_unloadable_loom_library_is_an_import_error(tmp_path):
    # Even with a loadable libloom next to the package: what was asked for wins.
    done = run_python(IMPORT_OR_SAY_WHY, LOOM_LIBRARY="/nonexistent/libloom.so.0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LOOM_LIBRARY=/nonexistent/libloom.so.0 does not load" in done.stdout


def test_missing_library_is_an_import_error_naming_the_places_tried(tmp_path):
    package = bare_package(tmp_path)
    env = {"PYTHONPATH": str(tmp_path)}
    # No system libloom either, whatever this machine has installed.
    hide_system = "import ctypes.util\nctypes.util.find_library = lambda name: None\n"
    done = subprocess.run([sys.executable, "-c", hide_system + IMPORT_OR_SAY_WHY],
                          capture_output=True,
                          text=True, timeout=120,
                          env={k: v for k, v in {**os.environ, **env}.items()
                               if k != "LOOM_LIBRARY"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LOOM_LIBRARY: not set" in done.stdout
    assert str(package / "lib" / "libloom.so.0") in done.stdout
    assert 'find_library("loom"): found nothing' in done.stdout


def test_unique_id_is_128_bytes():
    uid = loom.get_unique_id()
    assert isinstance(uid, bytes) and len(uid) == loom.UNIQUE_ID_BYTES == 128


def test_ops_are_strings():
    assert loom.OPS == ("sum", "prod", "max", "min", "avg")
    assert (loom.SUM, loom.PROD, loom.MAX, loom.MIN, loom.AVG) == loom.OPS


# ---- argument checks on one rank --------------------------------------------


@pytest.fixture(name="solo")
def fixture_solo():
    comm = loom.Comm(loom.get_unique_id(), 1, 0)
    yield comm
    comm.destroy()


def test_solo_all_reduce_and_properties(solo):
    assert (solo.rank, solo.size) == (0, 1)
    x = np.arange(5, dtype=np.float32)
    assert solo.all_reduce(x, op="max") is x
    np.testing.assert_array_equal(x, np.arange(5, dtype=np.float32))


@pytest.mark.parametrize("bad", [
    np.zeros(4, np.complex64),
    np.array([1, "a"], dtype=object),
    np.zeros(4, np.int16),
    np.zeros(4, np.bool_),
    np.zeros(4, ">f4"),
],
                         ids=["complex64", "object", "int16", "bool", "big-endian"])
def test_unsupported_dtype_is_value_error(solo, bad):
    with pytest.raises(ValueError, match=r"int8, uint8|byte order"):
        solo.all_reduce(bad)


def test_non_contiguous_is_value_error(solo):
    with pytest.raises(ValueError, match="C-contiguous"):
        solo.all_reduce(np.zeros((4, 4), np.float32)[:, 1])
    with pytest.raises(ValueError, match="C-contiguous"):
        solo.all_reduce(np.zeros(4, np.float32), np.zeros(8, np.float32)[::2])


def test_recv_too_small_names_both_sizes(solo):
    with pytest.raises(ValueError, match=r"recv has 3 elements.*needs 4"):
        solo.all_gather(np.zeros(4, np.int32), np.zeros(3, np.int32))
    with pytest.raises(ValueError, match=r"recv has 3 elements.*needs 4"):
        solo.all_reduce(np.zeros(4, np.int32), np.zeros(3, np.int32))
    with pytest.raises(ValueError, match=r"recv has 3 elements.*needs 4"):
        solo.gather(np.zeros(4, np.int32), np.zeros(3, np.int32), root=0)


def test_unknown_op_is_value_error(solo):
    with pytest.raises(ValueError, match="'xor'"):
        solo.all_reduce(np.zeros(4), op="xor")
    with pytest.raises(ValueError, match="is not one of"):
        solo.reduce(np.zeros(4), op=0)


def test_read_only_recv_is_value_error(solo):
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        solo.all_reduce(np.ones(4), frozen)
    with pytest.raises(ValueError, match="read-only"):
        solo.recv(bytes(8), 0)


def test_not_a_buffer_is_type_error(solo):
    with pytest.raises(TypeError, match="list"):
        solo.all_reduce([1.0, 2.0])


def test_library_error_is_loom_error_with_its_message(solo):
    with pytest.raises(loom.LoomError, match=r"root 1 is outside") as caught:
        solo.broadcast(np.zeros(4), root=1)
    assert caught.value.code == 4  # loomInvalidArgument
    assert "root 1" in caught.value.message


def test_use_after_destroy_raises():
    comm = loom.Comm(loom.get_unique_id(), 1, 0)
    comm.close()
    assert comm.closed
    with pytest.raises(loom.LoomError, match="destroyed") as caught:
        comm.all_reduce(np.zeros(4))
    assert caught.value.code == 5  # loomInvalidUsage
    with pytest.raises(loom.LoomError):
        comm.barrier()
    comm.destroy()  # a second destroy is a no-op


def test_context_manager_destroys():
    with loom.Comm(loom.get_unique_id(), 1, 0) as comm:
        comm.barrier()
    assert comm.closed


def test_bad_unique_id():
    with pytest.raises(ValueError, match="128"):
        loom.Comm(b"short", 1, 0)
    with pytest.raises(TypeError):
        loom.Comm("00" * 128, 1, 0)
    with pytest.raises(loom.LoomError, match="rank=1"):
        loom.Comm(loom.get_unique_id(), 1, 1)


def test_survivors_shrink_and_grow_back_after_a_rank_dies():
    """loom.Comm.shrink / grow_id / grow / join_grown under loomrun --keep-going."""
    program = pathlib.Path(__file__).resolve().parent / "shrink_rank.py"
    command = [str(LOOMRUN), "--keep-going", "-n", "4", "--timeout", str(TIMEOUT_S - 10),
               sys.executable, str(program)]
    done = subprocess.run(command, env=child_env(LOOM_TIMEOUT="30"), capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, f"exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    for rank in range(3):
        assert f"shrink_rank {rank}: ok" in done.stdout, done.stdout + done.stderr
    assert "rank 3 killed by signal 9" in done.stderr, done.stderr
