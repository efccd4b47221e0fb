#!/usr/bin/env bash
# bpfscope vs bpftrace (and packaged tools vs libbpf-tools) benchmarks,
# same run, interleaved rounds.
# usage: bench/run.sh [--quick] [--tools-only | --disk-cpu-only | --throughput]
#   --throughput: printf events from one and two loops to -o FILE (bench/throughput.py)
#   env BPFSCOPE (default: build/bpfscope), BPFTRACE (default: /usr/bin/bpftrace),
#   LIBBPF_TOOLS (directory of libbpf-tools' tcplife/tcpstates, default /usr/sbin)
# Needs root. Full mode takes about 6 minutes here, --quick under a minute.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
BPFSCOPE=${BPFSCOPE:-$root/build/bpfscope}
BPFTRACE=${BPFTRACE:-/usr/bin/bpftrace}

LIBBPF_TOOLS=${LIBBPF_TOOLS:-/usr/sbin}
export LIBBPF_TOOLS

quick=
only=
for a in "$@"; do
  case "$a" in
    --quick) quick=--quick ;;
    --tools-only) only=--tools-only ;;
    --disk-cpu-only) only=--disk-cpu-only ;;
    --throughput) only=--throughput ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "unknown argument: $a" >&2; exit 2 ;;
  esac
done

[[ $(id -u) == 0 ]] || { echo "bench/run.sh must run as root" >&2; exit 1; }
[[ -x $BPFSCOPE ]] || { echo "no bpfscope at $BPFSCOPE (ninja -C build bpfscope)" >&2; exit 1; }
[[ -x $BPFTRACE ]] || { echo "no bpftrace at $BPFTRACE" >&2; exit 1; }

tmp=$(mktemp -d /tmp/bpfscope-bench.XXXXXX)
stats=/proc/sys/kernel/bpf_stats_enabled
old_stats=
[[ -r $stats ]] && old_stats=$(cat "$stats")
cleanup() {
  # bench.py restores it too; this covers failures and interrupts.
  if [[ -n $old_stats ]]; then echo "$old_stats" > "$stats" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The binary must be called getppid_loop: the printf benchmark filters on comm.
cc -O2 -o "$tmp/getppid_loop" "$here/getppid_loop.c"
cc -O2 -o "$tmp/progstats" "$here/progstats.c"
cc -O2 -o "$tmp/maxrss" "$here/maxrss.c"
cc -O2 -o "$tmp/ready" "$here/ready.c" -lutil
cc -O2 -o "$tmp/tcpstorm" "$here/tcpstorm.c"
cc -O2 -o "$tmp/pingpong" "$here/pingpong.c"

if [[ $only == --throughput ]]; then
  python3 "$here/throughput.py" --rounds "$([[ -n $quick ]] && echo 1 || echo 3)" "$BPFSCOPE" "$BPFTRACE"
  exit
fi
python3 "$here/bench.py" "$BPFSCOPE" "$BPFTRACE" "$tmp" $quick $only
