#!/usr/bin/env bash
# One process over a tree of small files on a Strata mount, as a single `tar -x`, `ls -lR`,
# `du`, `find` and `rm -rf` meet it: starts `strata up --data DATA` (a new or stopped data
# directory) with the flags given, builds DIRS directories of FILES files of 4 KiB each in a
# local temporary directory, then on the mount, one command after the other: unpacks it with
# `tar -x`, drops the page cache, lists it with `ls -lR`, sizes it with `du -s`, finds its files
# larger than 1 KiB with `find -size`, and removes it with `rm -rf`. For each: the seconds it
# took, the entries per second and the Lookup, Resolve and ReadDir RPCs the mount sent (from its
# metrics). Everything is checked: the listing's and find's counts, and that the tree is gone.
# Needs root (drop_caches) and curl.
#
#   bench/probe/tree-ops.sh DATA [DIRS] [FILES] [strata up flags]
set -euo pipefail
D=$1; NDIR=${2:-20}; NFILE=${3:-100}; shift; [ $# -gt 0 ] && shift; [ $# -gt 0 ] && shift
H="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
"$H/bin/strata" up --data "$D" "$@" > "$D.up.log" 2>&1 || { tail -5 "$D.up.log" >&2; exit 1; }
D=$(cd "$D" && pwd)
SRC=$(mktemp -d)
trap '"$H/bin/strata" down --data "$D" >/dev/null 2>&1 || true; rm -rf "$SRC"' EXIT
M=$(grep -h '^metrics' "$D/mount/ready.properties" | cut -d= -f2 | tr -d '\\')
for ((i = 0; i < NDIR; i++)); do
  mkdir -p "$SRC/tree/d$i"
  for ((j = 0; j < NFILE; j++)); do head -c 4096 /dev/urandom > "$SRC/tree/d$i/f$j"; done
done
tar -C "$SRC" -cf "$SRC/tree.tar" tree
ENTRIES=$((NDIR * NFILE + NDIR + 1))
snap() { # Lookup, Resolve, ReadDir RPCs
  curl -s "http://$M/metrics" | awk '
    /^strata_rpc_calls_seconds_count\{/ && /message="Lookup"/ {l += $2}
    /^strata_rpc_calls_seconds_count\{/ && /message="Resolve"/ {r += $2}
    /^strata_rpc_calls_seconds_count\{/ && /message="ReadDir"/ {d += $2}
    END {printf "%d %d %d\n", l, r, d}'
}
step() { # NAME COMMAND...: runs it in the mount, prints its line; its stdout goes to $OUT
  local name=$1; shift
  local a b t0 t1
  a=$(snap); t0=$(date +%s.%N)
  OUT=$(cd "$D/mnt" && "$@")
  t1=$(date +%s.%N); b=$(snap)
  echo "$a $b" | awk -v n="$name" -v s="$(echo "$t1 - $t0" | bc)" -v e="$ENTRIES" \
    '{printf "%-8s %8.2f s %9.0f entries/s   Lookup %6d  Resolve %5d  ReadDir %5d\n", n, s, e / s, $4 - $1, $5 - $2, $6 - $3}'
}
echo "tree: $NDIR directories x $NFILE files of 4 KiB ($ENTRIES entries), one process, on $D/mnt"
step "tar -x" tar -xf "$SRC/tree.tar"
sync; echo 3 > /proc/sys/vm/drop_caches
step "ls -lR" ls -lR tree
[ "$(echo "$OUT" | grep -c '^-')" -eq $((NDIR * NFILE)) ] || { echo "ls -lR listed $(echo "$OUT" | grep -c '^-') files" >&2; exit 1; }
step "du -s" du -s tree
step "find" find tree -type f -size +1k
[ "$(echo "$OUT" | wc -l)" -eq $((NDIR * NFILE)) ] || { echo "find found $(echo "$OUT" | wc -l) files" >&2; exit 1; }
step "rm -rf" rm -rf tree
[ ! -e "$D/mnt/tree" ] || { echo "rm -rf left the tree" >&2; exit 1; }
