#!/usr/bin/env bash
# Where a random 4 KiB read through the mount spends its time: fio (4 readers, psync, O_DIRECT,
# as bench/fio/sample-read-4k.fio) over one file on a `strata up` mount, then the mean time per
# read in FUSE (strata_fuse_requests_seconds, op=read), in the client's ReadChunk RPC
# (strata_rpc_calls_seconds) and in the storage nodes' own read (strata_storage_latency_seconds,
# op=read), from the daemons' metrics before and after the run. Needs root (drop_caches), fio
# and curl.
#
#   bench/probe/read-path.sh DATA MIB SECONDS [cold|warm] [strata up flags, e.g. --no-l1 --no-tls]
#
# Starts `strata up --data DATA` (a new or stopped data directory) with the flags given, writes a
# file of MIB MiB through the mount, reads it once for SECONDS/3 (JIT, connections), then, after
# dropping the page cache when `cold` (the default), measures SECONDS of reads; stops the
# cluster at the end.
set -euo pipefail
D=$1; N=$2; T=$3; MODE=${4:-cold}; shift 3; [ $# -gt 0 ] && shift
S="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bin/strata"
"$S" up --data "$D" "$@" > "$D.up.log" 2>&1 || { tail -5 "$D.up.log" >&2; exit 1; }
D=$(cd "$D" && pwd)
trap '"$S" down --data "$D" >/dev/null 2>&1 || true' EXIT
dd if=/dev/urandom of="$D/mnt/samples.dat" bs=1M count="$N" status=none
job() { # $1 = seconds
  fio --name=rr --directory="$D/mnt" --ioengine=psync --rw=randread --bs=4k --direct=1 --numjobs=4 \
      --filename=samples.dat --size="${N}M" --runtime="$1" --time_based=1 --randrepeat=1 --group_reporting=1
}
job $((T / 3 + 1)) > /dev/null
if [ "$MODE" = cold ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
snap() {
  for x in mount storage-1 storage-2 storage-3; do
    p=$(grep -h '^metrics' "$D/$x/ready.properties" | cut -d= -f2 | tr -d '\\')
    curl -s "http://$p/metrics" | awk -v who="$x" '
      index($0, "strata_fuse_requests_seconds_count{") == 1 && index($0, "op=\"read\"") && index($0, "result=\"ok\"") {fc += $2}
      index($0, "strata_fuse_requests_seconds_sum{") == 1 && index($0, "op=\"read\"") && index($0, "result=\"ok\"") {fs += $2}
      index($0, "strata_rpc_calls_seconds_count{") == 1 && index($0, "message=\"ReadChunk\"") {rc += $2}
      index($0, "strata_rpc_calls_seconds_sum{") == 1 && index($0, "message=\"ReadChunk\"") {rs += $2}
      index($0, "strata_storage_latency_seconds_count{") == 1 && index($0, "op=\"read\"") {sc += $2}
      index($0, "strata_storage_latency_seconds_sum{") == 1 && index($0, "op=\"read\"") {ss += $2}
      END {printf "%s %.0f %.6f %.0f %.6f %.0f %.6f\n", who, fc, fs, rc, rs, sc, ss}'
  done | awk '{fc += $2; fs += $3; rc += $4; rs += $5; sc += $6; ss += $7} END {print fc, fs, rc, rs, sc, ss}'
}
read -r a1 a2 a3 a4 a5 a6 < <(snap)
job "$T" | grep -E 'IOPS|clat \(usec\)'
read -r b1 b2 b3 b4 b5 b6 < <(snap)
awk -v fc=$((b1 - a1)) -v fs="$(echo "$b2 - $a2" | bc -l)" -v rc=$((b3 - a3)) -v rs="$(echo "$b4 - $a4" | bc -l)" \
    -v sc=$((b5 - a5)) -v ss="$(echo "$b6 - $a6" | bc -l)" -v mode="$MODE" 'BEGIN {
  printf "%s, %s MiB: FUSE reads %d, mean %.3f ms; ReadChunk RPCs %d, mean %.3f ms; storage reads %d, mean %.3f ms\n",
    mode, "'"$N"'", fc, fc ? 1000 * fs / fc : 0, rc, rc ? 1000 * rs / rc : 0, sc, sc ? 1000 * ss / sc : 0 }'
