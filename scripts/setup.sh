#!/usr/bin/env bash
# Fresh machine: installs the build and run dependencies, builds bpfscope
# (release) and runs a first program. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# libmicrohttpd-dev: the metrics endpoint's HTTP module (bpfscope-http.so).
apt-get install -y -qq --no-install-recommends \
  g++ cmake ninja-build pkg-config libbpf-dev libelf-dev zlib1g-dev libfmt-dev libmicrohttpd-dev >/dev/null
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBPFSCOPE_TESTS=OFF >/dev/null
ninja -C build bpfscope
./build/bpfscope -e 'BEGIN { printf("bpfscope works: hello from BPF\n"); exit(); }'
