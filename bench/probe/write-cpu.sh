#!/usr/bin/env bash
# Where a daemon's CPU goes while checkpoint shards are written through the mount: starts
# `strata up --data DATA` (a new or stopped data directory) with the flags given, writes 4 shards
# of 256 MiB (dd bs=1M conv=fsync, random bytes) into DIR of the mount four times to warm the
# JVMs up, then samples DAEMON with `perf record` (999 Hz, call graphs) for 6 s of a fifth round
# and prints: the time of that round, the CPU seconds each daemon used during it, the share
# of the samples per binary, the top symbols, and the share spent under a few functions that
# say where bytes are allocated, zeroed and copied. Stops the cluster and deletes DATA at the
# end. Needs root (perf), perf and a JDK's jcmd.
#
#   bench/probe/write-cpu.sh DATA DIR DAEMON [strata up flags]
#   bench/probe/write-cpu.sh /tmp/wc direct storage-2         # chain writes into L3
#   STAGE=1 bench/probe/write-cpu.sh /tmp/wc stage l2-1       # DIR staged in L2 (tiers.l2=stage durability=l2)
set -euo pipefail
D=$1; DIR=$2; WHO=$3; shift 3
H="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=/dev/null
. "$H/bin/jdk.sh"
"$H/bin/strata" up --data "$D" "$@" > "$D.up.log" 2>&1 || { tail -5 "$D.up.log" >&2; exit 1; }
D=$(cd "$D" && pwd)
trap '"$H/bin/strata" down --data "$D" >/dev/null 2>&1 || true; rm -rf "$D" "$D.src" "$D.perf"' EXIT
mkdir -p "$D/mnt/$DIR" "$D.src"
if [ -n "${STAGE:-}" ]; then "$H/bin/strata" policy set --data "$D" "/$DIR" tiers.l2=stage durability=l2 > /dev/null; fi
for i in 1 2 3 4; do head -c 256M /dev/urandom > "$D.src/$i"; done
pid() { grep -h '^pid' "$D/$1/ready.properties" | cut -d= -f2; }
daemons=$(cd "$D" && ls -d mount storage-* l2-* 2>/dev/null)
cpu() { for x in $daemons; do awk -v n="$x" '{printf "%s %d\n", n, $14 + $15}' "/proc/$(pid "$x")/stat"; done; }
round() { # $1 = round name
  for i in 1 2 3 4; do dd if="$D.src/$i" of="$D/mnt/$DIR/$1-$i" bs=1M conv=fsync status=none & done; wait
}
for r in 1 2 3 4; do round "w$r"; rm -f "$D/mnt/$DIR"/w"$r"-*; done
sleep 5
cpu > "$D.cpu.a"; start=$(date +%s.%N)
round m &
perf record -F 999 -g -p "$(pid "$WHO")" -o "$D.perf" -- sleep 6 > /dev/null 2>&1
wait; end=$(date +%s.%N); cpu > "$D.cpu.b"
"$JAVA_HOME/bin/jcmd" "$(pid "$WHO")" Compiler.perfmap > /dev/null
echo "write: 1024 MiB in $(echo "$end - $start" | bc) s"
echo "CPU seconds during it: $(paste "$D.cpu.a" "$D.cpu.b" | awk -v t="$(getconf CLK_TCK)" '{printf "%s %.1f  ", $1, ($4 - $2) / t}')"
perf report -i "$D.perf" --stdio --no-children --sort dso -g none 2> /dev/null | grep '%' > "$D.dso" || true
perf report -i "$D.perf" --stdio --no-children --sort sym -g none 2> /dev/null | grep '%' > "$D.sym" || true
perf report -i "$D.perf" --stdio --children --sort sym -g none 2> /dev/null | grep '%' > "$D.incl" || true
echo "$WHO, samples per binary:"; head -6 "$D.dso"
echo "$WHO, top symbols:"; head -15 "$D.sym" | cut -c1-150
echo "$WHO, time under (inclusive):"
grep -E 'UnpooledDirectByteBuf.<init>|StubRoutines|asm_exc_page_fault|_int_malloc|__x64_sys_(openat|pwrite64|fdatasync|sendmsg|recvfrom|futex)$' "$D.incl" | cut -c1-150 || true
rm -f "$D.cpu.a" "$D.cpu.b" "$D.up.log" "$D.dso" "$D.sym" "$D.incl"
