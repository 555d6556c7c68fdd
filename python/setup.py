"""Builds the Python package `loom`: the plain-Python layer (ctypes over
libloom) and, where torch is installed, the torch.distributed backend.

Loom itself must be built first; LOOM_BUILD_DIR names its build folder
(default: ../build beside this directory). The package carries a copy of
libloom (loom/lib/) so an installed package needs no LD_LIBRARY_PATH.

    make python                      # builds Loom, the venv, installs this
    LOOM_BUILD_DIR=$PWD/build pip install --no-build-isolation ./python
"""
import glob
import os
import shutil

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD = os.path.abspath(os.environ.get("LOOM_BUILD_DIR", os.path.join(REPO, "build")))


def bundle_library():
    """Copies libloom (and the CUDA kernel plugin beside it, if built) into loom/lib."""
    library = os.path.join(BUILD, "libloom.so.0")
    if not os.path.exists(library):
        raise SystemExit(f"setup.py: {library} not found; build Loom first (make build) or set "
                         "LOOM_BUILD_DIR")
    target = os.path.join(HERE, "loom", "lib")
    os.makedirs(target, exist_ok=True)
    for path in [library] + glob.glob(os.path.join(BUILD, "libloom_cuda_kernels.so*")):
        shutil.copy2(os.path.realpath(path), os.path.join(target, os.path.basename(path)))


def extensions():
    try:
        from torch.utils import cpp_extension
    except ImportError:
        print("setup.py: torch is not installed: building loom without loom.torch")
        return [], {}
    module = cpp_extension.CppExtension(
        "loom.torch._C",
        ["loom/torch/csrc/loom_backend.cc", "loom/torch/csrc/tensor_rules.cc",
         "loom/torch/csrc/loom_work.cc", "loom/torch/csrc/work_queue.cc",
         "loom/torch/csrc/p2p_batch.cc", "loom/torch/csrc/monitored_barrier.cc",
         "loom/torch/csrc/module.cc"],
        include_dirs=[os.path.join(REPO, "include")],
        library_dirs=[BUILD],
        libraries=[":libloom.so.0"],
        # The extension finds the bundled libloom beside the package.
        extra_link_args=["-Wl,-rpath,$ORIGIN/../lib"],
        extra_compile_args=["-O2", "-std=c++20"],
    )
    return [module], {"build_ext": cpp_extension.BuildExtension}


bundle_library()
ext_modules, cmdclass = extensions()
setup(
    name="loom",
    version="0.1.0",
    description="Loom collective communication: plain Python and a torch.distributed backend",
    packages=["loom", "loom.torch"],
    package_data={"loom": ["lib/*.so*"]},
    ext_modules=ext_modules,
    cmdclass=cmdclass,
    entry_points={"torch.backends": ["loom = loom.torch:_register"]},
    python_requires=">=3.9",
)
