#!/usr/bin/env bash
# Installs the build and test dependencies, then runs every test job:
#  1. release build: unit tests, runtime cases and tool tests on the real kernel;
#  2. ASan+UBSan build: the same tests.
# The tests of a job run side by side (ctest -j; CMakeLists.txt says which
# must not share the machine), and the ASan build runs while the release
# tests do (they mostly wait on the kernel). The time of each phase prints
# at the end. Run as root (the tests load BPF programs).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
jobs=$(nproc)
# Tests wait on the kernel far more than they compute: twice the cores.
test_jobs=$((jobs * 2))
phases=()
ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(ms)
phase_start=$t0
phase() {  # phase NAME: the time since the previous phase ended
  local now
  now=$(ms)
  phases+=("$(printf '%-36s %4d.%d s' "$1" $(((now - phase_start) / 1000)) $(((now - phase_start) % 1000 / 100)))")
  phase_start=$now
}
report() {
  local rc=$? now
  now=$(ms)
  echo "== phase times"
  printf '%s\n' "${phases[@]}"
  printf '%-36s %4d.%d s\n' "total" $(((now - t0) / 1000)) $(((now - t0) % 1000 / 100))
  return $rc
}
trap report EXIT

if ! dpkg -s libbpf-dev libelf-dev zlib1g-dev libfmt-dev libmicrohttpd-dev libprotobuf-dev protobuf-compiler \
      libgtest-dev cmake ninja-build pkg-config g++ lld \
      bpftrace python3 chromium python3-pyte linux-perf prometheus \
      man-db groff mandoc lintian zsh dpkg-dev file valgrind strace >/dev/null 2>&1; then
  apt-get update -qq
  # bpftrace is the comparison oracle of the benchmarks; the traffic tools
  # are for the network cases (shared/KERNEL.md); chromium opens the
  # flame graphs and heat maps in the tool tests (tests/runtime/tools/test_flamegraph.py,
  # test_heatmap.py); python3-pyte is the terminal the terminal heat map is drawn on;
  # perf counts the scheduler tools' tracepoint beside them (tests/runtime/tools/schedwitness.py);
  # prometheus brings promtool, Prometheus's own parser, which judges every metrics page
  # the tests read (tests/output/metrics_test.cpp, tests/runtime/tools/metricsrun.py), and
  # the server that scrapes bpfscope endpoints in tests/runtime/tools/test_prometheus.py.
  # libmicrohttpd-dev: the metrics endpoint's HTTP module; libprotobuf-dev and
  # protobuf-compiler: the test that reads its protobuf pages back
  # (tests/output/metrics_proto_test.cpp). lld: the release link
  # that places start-up functions together (CMakeLists.txt, BPFSCOPE_ORDER_TEXT).
  # man-db, groff, mandoc, lintian, zsh, dpkg-dev (dpkg-shlibdeps) and file: the
  # install and package test (tests/install/test_install.py) reads the man pages,
  # lints them and the .deb, loads the completions and computes the dependencies.
  # valgrind: callgrind checks that cmake/startup-order.txt is current
  # (tests/install/test_startup_order.py). strace counts the waits of a
  # clear() (tests/runtime/tools/test_clear.py).
  apt-get install -y -qq --no-install-recommends \
    g++ lld cmake ninja-build pkg-config libbpf-dev libelf-dev zlib1g-dev libfmt-dev libmicrohttpd-dev \
    libprotobuf-dev protobuf-compiler \
    libgtest-dev googletest python3 bpftrace iputils-ping netcat-openbsd socat nftables chromium python3-pyte linux-perf \
    prometheus man-db groff mandoc lintian zsh dpkg-dev file valgrind strace >/dev/null
fi
phase "dependencies"

# Unity batches: each target's sources compile as a few large files, which
# halves the build (CMakeLists.txt lists the files that stay on their own).
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)

echo "== release build"
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${unity[@]}" >/dev/null
ninja -C build-release -j"$jobs"
phase "release build"

echo "== ASan+UBSan build (in the background) and release tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBPFSCOPE_SANITIZE=ON "${unity[@]}" >/dev/null
nice ninja -C build-asan -j"$jobs" > build-asan/build.log 2>&1 &
asan_build=$!
release_rc=0
(cd build-release && ctest --output-on-failure -j"$test_jobs") || release_rc=$?
phase "release tests (ASan build beside)"
asan_rc=0
wait $asan_build || asan_rc=$?
phase "rest of the ASan build"
if ((asan_rc)); then
  cat build-asan/build.log
  echo "ASan+UBSan build failed" >&2
  exit 1
fi
((release_rc == 0)) || { echo "release tests failed" >&2; exit 1; }

echo "== ASan+UBSan: unit tests, runtime cases and tool tests"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$test_jobs")
phase "ASan+UBSan tests"
