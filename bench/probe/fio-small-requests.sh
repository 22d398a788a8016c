#!/usr/bin/env bash
# Where fio's small-file read phase sends its requests on a Strata mount: starts `strata up
# --data DATA` (a new or stopped data directory) with the flags given, runs the `small-create`
# section of bench/fio/small-files.fio (4 jobs x FILES files of 16 KiB), drops the page cache,
# runs the `small-read` section, and prints, for the read phase only, from the mount's metrics:
# its FUSE getattrs (and their mean time in the mount), the Lookup and Open RPCs they and the
# opens made, the ReadChunk RPCs and the L1's memory hits. Getattrs that sent no Lookup were
# answered from the mount's memory (directories). Needs root (drop_caches), fio and curl.
#
#   bench/probe/fio-small-requests.sh DATA [FILES] [strata up flags]
set -euo pipefail
D=$1; N=${2:-500}; shift; [ $# -gt 0 ] && shift
H="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
"$H/bin/strata" up --data "$D" "$@" > "$D.up.log" 2>&1 || { tail -5 "$D.up.log" >&2; exit 1; }
D=$(cd "$D" && pwd)
trap '"$H/bin/strata" down --data "$D" >/dev/null 2>&1 || true' EXIT
M=$(grep -h '^metrics' "$D/mount/ready.properties" | cut -d= -f2 | tr -d '\\')
mkdir -p "$D"/mnt/bench/sf{0,1,2,3}
export FIO_DIR="$D/mnt/bench" FIO_FILES="$N"
snap() { # getattrs, their seconds, Lookup RPCs, Open RPCs, ReadChunk RPCs, L1 memory hits
  curl -s "http://$M/metrics" | awk '
    /^strata_fuse_requests_seconds_count\{/ && /op="getattr"/ {gc += $2}
    /^strata_fuse_requests_seconds_sum\{/ && /op="getattr"/ {gs += $2}
    /^strata_rpc_calls_seconds_count\{/ && /message="Lookup"/ {l += $2}
    /^strata_rpc_calls_seconds_count\{/ && /message="Open"/ {o += $2}
    /^strata_rpc_calls_seconds_count\{/ && /message="ReadChunk"/ {r += $2}
    /^strata_l1_hits_total\{/ && /tier="memory"/ {h += $2}
    END {printf "%d %.6f %d %d %d %d\n", gc, gs, l, o, r, h}'
}
fio "$H/bench/fio/small-files.fio" --section=small-create > /dev/null
a=$(snap)
sync; echo 3 > /proc/sys/vm/drop_caches
rate=$(fio "$H/bench/fio/small-files.fio" --section=small-read --output-format=terse | cut -d';' -f8)
b=$(snap)
files=$((4 * N))
echo "$a $b" | awk -v f="$files" -v rate="$rate" '{
  g = $7 - $1; l = $9 - $3
  printf "small-read: %d files, %s files/s\n", f, rate
  printf "  FUSE getattr %d (%.1f per file, mean %.1f us in the mount)\n", g, g / f, ($8 - $2) / g * 1e6
  printf "  Lookup RPCs %d (%.1f per file); getattrs without one (from memory) %d (%.1f per file)\n", l, l / f, g - l, (g - l) / f
  printf "  Open RPCs %d, ReadChunk RPCs %d, L1 memory hits %d\n", $10 - $4, $11 - $5, $12 - $6
}'
