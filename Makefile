# The two commands of the README's Quick start:
#   make demo   installs what is missing, builds, runs the main job
#   make test   installs what is missing, builds, runs the whole suite
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo perf clean format

all: build

deps:
	bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900

demo: build
	bash scripts/demo.sh $(BUILD)

perf: build
	BUILD_DIR=$(BUILD) bash perf/compare-mpi.sh

format:
	find include src transports collectives compression tools perf tests trainer \
	  \( -name '*.h' -o -name '*.cc' -o -name '*.hpp' -o -name '*.cu' \) | xargs clang-format -i

clean:
	rm -rf $(BUILD)
