#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds an outside project
# against it twice: with find_package(loom) and with pkg-config.
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$BUILD" --prefix "$work/prefix" > "$work/install.log"
libdir=$(ls -d "$work"/prefix/lib*/ | head -1)

cmake -S "$SRC/tests/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  > "$work/configure.log"
cmake --build "$work/cmake-build" > "$work/build.log"
LD_LIBRARY_PATH="$libdir" timeout 60 "$work/cmake-build/consumer"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
g++ -std=c++20 "$SRC/tests/consumer/main.cc" $(pkg-config --cflags --libs loom) -pthread \
  -o "$work/pc-consumer"
LD_LIBRARY_PATH="$libdir" timeout 60 "$work/pc-consumer"
echo "consumer_test: find_package and pkg-config consumers built and ran"
