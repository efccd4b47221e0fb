#!/usr/bin/env bash
# Installs the build and test dependencies, then runs every test job:
#  1. release build: unit tests and runtime cases on the real kernel;
#  2. ASan+UBSan build: unit tests and runtime cases.
# Run as root (the tests load BPF programs).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
if ! dpkg -s libbpf-dev libelf-dev zlib1g-dev libfmt-dev libgtest-dev cmake ninja-build pkg-config g++ \
      bpftrace python3 chromium python3-pyte >/dev/null 2>&1; then
  apt-get update -qq
  # bpftrace is the comparison oracle of the benchmarks; the traffic tools
  # are for the network cases (shared/KERNEL.md); chromium opens the
  # flame graphs and heat maps in the tool tests (tests/runtime/tools/test_flamegraph.py,
  # test_heatmap.py); python3-pyte is the terminal the terminal heat map is drawn on.
  apt-get install -y -qq --no-install-recommends \
    g++ cmake ninja-build pkg-config libbpf-dev libelf-dev zlib1g-dev libfmt-dev \
    libgtest-dev googletest python3 bpftrace iputils-ping netcat-openbsd socat nftables chromium python3-pyte >/dev/null
fi
jobs=$(nproc)

echo "== release build"
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-release -j"$jobs"
echo "== release: unit tests and runtime cases"
(cd build-release && ctest --output-on-failure -j1)

echo "== ASan+UBSan build"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBPFSCOPE_SANITIZE=ON >/dev/null
ninja -C build-asan -j"$jobs"
echo "== ASan+UBSan: unit tests and runtime cases"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j1)
