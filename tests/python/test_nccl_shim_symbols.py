"""The NCCL shim (build/nccl/libnccl.so.2) exports every NCCL function the
installed torch links, so `LD_PRELOAD=libnccl.so.2 python -c "import torch"`
works and the next torch release cannot break it silently.

The shim needs the CUDA toolkit's nccl.h; a build without it has no shim and
these tests say so and skip (as the shim's own tests do)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", REPO / "build"))
SHIM = BUILD / "nccl" / "libnccl.so.2"
NCCL_FUNCTION = re.compile(r"^nccl[A-Z]\w*$")

needs_shim = pytest.mark.skipif(not SHIM.exists(),
                                reason=f"no {SHIM}: built without the CUDA toolkit's nccl.h")


def dynamic_symbols(library, defined):
    flag = "--defined-only" if defined else "--undefined-only"
    out = subprocess.run(["nm", "-D", flag, str(library)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


@needs_shim
def test_shim_exports_every_nccl_function_torch_links():
    torch_lib = pathlib.Path(torch.__file__).parent / "lib"
    wanted = set()
    for library in sorted(torch_lib.glob("*.so*")):
        wanted |= {s for s in dynamic_symbols(library, defined=False) if NCCL_FUNCTION.match(s)}
    assert len(wanted) > 20, f"found only {sorted(wanted)} in {torch_lib}"
    exported = dynamic_symbols(SHIM, defined=True)
    missing = sorted(wanted - exported)
    assert not missing, f"torch {torch.__version__} links NCCL functions the shim lacks: {missing}"


@needs_shim
def test_torch_imports_with_the_shim_preloaded():
    env = dict(os.environ, LD_PRELOAD=str(SHIM))
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
