# The two commands of the README's Quick start:
#   make demo   installs what is missing, builds, runs the main job
#   make test   installs what is missing, builds, runs the whole suite
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=
VENV ?= .venv

.PHONY: all deps configure build python test demo perf perf-guard perf-plot clean format lint \
  test-asan test-tsan test-sanitizers fuzz

all: build

deps:
	bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# The Python package (plain loom.Comm and the torch.distributed backend
# "loom"), installed into the project's virtual environment with torch from
# PyPI; the extension builds against that torch (docs/python.md).
$(VENV)/.installed: scripts/python-requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r scripts/python-requirements.txt
	touch $@

python: build $(VENV)/.installed
	LOOM_BUILD_DIR=$(abspath $(BUILD)) MAX_JOBS=$(JOBS) \
	  $(VENV)/bin/pip install -q --no-build-isolation ./python

test: build python
	cd $(BUILD) && LOOM_VENV=$(abspath $(VENV)) ctest --output-on-failure -j$(JOBS) --timeout 900

# Sanitizer builds compile at -O1 with line tables only (-g1): reports keep file
# and line, and the two builds compile in about half the time of -O2 -g, which
# keeps CI inside its hour.
SANITIZER_BUILD = -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG' -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG'

# The suite under ASan + UBSan, and the threaded multi-rank tests under TSan, each
# in its own build folder (CI runs both after `make test`). CUDA is off there:
# sanitizers check host code. Left out under ASan: the fuzzers (they carry their
# own ASan build), the consumer test (an uninstrumented program cannot load an
# instrumented libloom), the soak's resident-memory bound (ASan's quarantine
# holds freed memory on purpose) and the fault tests, whose 3 s deadlines do not
# survive ASan's slowdown with several worlds forked at once. Also left out: the
# benchmark sanity check and the loom-topo script (3 and 1.5 minutes under ASan;
# the code they drive runs under ASan in the unit and topology tests), and the
# system-call count of the hot path, a property of the release build, the
# Python tests (the package carries the release build's libloom), and the test
# that takes every file descriptor: UBSan's vptr check probes memory through a
# pipe, so with no descriptor left it reports a sound object as invalid. The
# collective matrices run the reduced scope (element sizes 1, 4 and 8, as
# under TSan): memory errors follow sizes and layouts, and every type runs in
# the release suite and in the reducer unit tests, which run whole here.
test-asan: deps
	cmake -S . -B build-asan $(SANITIZER_BUILD) -DLOOM_SANITIZE=address \
	  -DLOOM_WITH_CUDA=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LOOM_TEST_SCOPE=reduced \
	  ctest --output-on-failure -j$(JOBS) --timeout 900 \
	  -E 'script.(fuzz|consumer|soak|perf_check|loom_topo|hot_path_syscalls|python)_test|Fault|OutOfDescriptors'

# UCX is left out under TSan: its memory hooks (libucm patches malloc and mmap
# when loaded) made nearly every threaded test segfault under TSan. The
# trainer's overlap worker (a thread per rank) is checked here too. The plain
# thread-rank matrices stop at 4 ranks here (8 runs in the release suite, and
# here under the tree, single-copy and small-slot variants): the same code
# paths, and TSan made each 8-rank case cost 10-16 s.
test-tsan: deps
	cmake -S . -B build-tsan $(SANITIZER_BUILD) -DLOOM_SANITIZE=thread \
	  -DLOOM_WITH_CUDA=OFF -DLOOM_BUILD_PERF=OFF -DLOOM_WITH_UCX=OFF -DLOOM_WITH_IBVERBS=OFF \
	  $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS) --target loom_unit_tests loom_multirank_tests \
	  loom_trainer_tests
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 LOOM_TEST_SCOPE=reduced \
	  ctest --output-on-failure -j$(JOBS) --timeout 900 \
	  -R 'threads|Bootstrap|ShrinkAgreement|Shrink\.(Excluded|ARankSilent)|PeerStatus|TcpExchange|ShmLink|OverlappedDataParallel|GradientSync|PlanWalker|WalkProxy|CodecRingWalk' \
	  -E 'Threads(Shm|Tcp)/Collectives\.MatchReference/threads_(shm|tcp)_n8_'

test-sanitizers: test-asan test-tsan

fuzz: deps
	bash scripts/fuzz.sh

demo: build
	bash scripts/demo.sh $(BUILD)

perf: build
	BUILD_DIR=$(BUILD) bash perf/compare-mpi.sh

# The busbw plot of docs/performance.md from a fresh compare-mpi run; matplotlib
# lives in a virtual environment of its own (.venv-perf), not the system Python.
perf-plot: build
	test -x .venv-perf/bin/python || python3 -m venv .venv-perf
	.venv-perf/bin/python -c 'import matplotlib' 2>/dev/null || .venv-perf/bin/pip install -q matplotlib
	BUILD_DIR=$(BUILD) bash perf/compare-mpi.sh --runs 3 --registered --csv-dir $(BUILD)/compare-mpi \
	  --out $(BUILD)/compare-mpi/report.txt
	.venv-perf/bin/python perf/plot_compare.py $(BUILD)/compare-mpi docs/img/allreduce_busbw.png

# Loom against Open MPI in one run, as ratios with generous margins: fails only
# on a gross regression (docs/performance.md, "The speed guard").
perf-guard: build
	BUILD_DIR=$(BUILD) bash perf/perf-guard.sh

format:
	find include src transports collectives compression tools perf tests trainer \
	  \( -name '*.h' -o -name '*.cc' -o -name '*.hpp' -o -name '*.cu' \) | xargs clang-format -i

# clang-tidy with the repo's .clang-tidy over the C++ sources; any warning
# fails it (CI runs it after `make test`).
lint: build
	JOBS=$(JOBS) bash scripts/lint.sh $(BUILD)

clean:
	rm -rf $(BUILD)
